"""The sticky note: the lines of her next prompt chosen while she waits (beliefs, lore of the last exchange,
the mood, memories of the open topic) are the end of the known prefix, so after the player's line only the
lines found for it and the line are left to encode; the lines chosen for the line do not change, and the
prompt does not depend on whether anything was asked for ahead."""

from __future__ import annotations

from typing import Any

from game.cast.card import CharacterCard
from game.cast.memory import Memory, MemoryConfig
from game.cast.prompt import TAIL_MEMORIES, PromptBuilder, PromptParts, count_messages
from game.cast.retrieval import HashEmbedder
from game.state import Event

LINES = ["Good evening. I'm Tomas, Tomas Verhoeven.", "My dog is called Biscuit.", "I keep forty hives.",
         "Is the kettle on?", "What is that light for?", "Who is the gull at the window?",
         "Do you ever get lonely out here?", "Tell me about the Spine.", "Is the kettle on still?",
         "What does Admiral eat?", "Good night, Eve."]


def play(eve: CharacterCard, sticky: bool, ask_ahead: bool,
         **layout: Any) -> list[tuple[PromptParts, list[dict[str, str]], list[dict[str, str]]]]:
    """The talk as the cast room plays it (the prompt built, then the line and her reply observed):
    per turn ``(parts, messages, the known prefix asked for before the line)``; ``layout``: keywords of
    :class:`PromptBuilder`."""
    mem = Memory(eve, MemoryConfig(history_messages=8, history_slide=4), embedder=HashEmbedder())
    builder = PromptBuilder(mem, sticky=sticky, **layout)
    out = []
    for turn, line in enumerate(LINES, 1):
        mem.remember(f"On night {turn} the lamp was wound at dusk.", "action", turn)
        prefix = builder.known_prefix() if ask_ahead else []
        parts = builder.build(line, turn, mood="You feel curious about Tomas.")
        out.append((parts, parts.to_messages(), prefix))
        mem.observe(Event(kind="say", speaker="player", turn=turn, text=line, data={"target": "eve"}))
        mem.observe(Event(kind="reply", speaker="eve", turn=turn, text=f"Mind the third step, answer {turn}."))
    return out


def test_after_the_known_prefix_only_the_lines_found_for_the_line_and_the_line(eve: CharacterCard) -> None:
    turns = play(eve, sticky=True, ask_ahead=True)
    notes_before = 0
    for turn, (parts, msgs, prefix) in enumerate(turns, 1):
        assert msgs[: len(prefix)] == prefix  # what was encoded while she waited is the prompt's start
        after = msgs[len(prefix):]
        assert after[-1]["role"] == "user" and len(after) <= 2
        found = {b.text for b in (parts.tail or ())}
        if len(after) == 2:
            assert all(line in found for line in after[0]["content"].splitlines() if line.startswith("- "))
        # a belief told before this line is never among the lines after it: it was in the sticky note or the window
        told_before = [b for b in parts.blocks if b.section == "beliefs" and b.score < turn]
        assert not any(b.text in found for b in told_before)
        notes_before += bool(parts.sticky)
    assert notes_before >= len(LINES) // 2  # most turns had something chosen ahead
    dog = turns[2][2][-1]  # the known prefix before "I keep forty hives."
    assert dog["role"] == "system" and "the player's dog: name = Biscuit" in dog["content"]


def test_the_lines_chosen_for_the_line_are_the_same_with_the_sticky_note(eve: CharacterCard) -> None:
    # without a cap on the memories after the line (with one, what the sticky note shows is not capped)
    with_note = play(eve, sticky=True, ask_ahead=True, tail_memories=None)
    without = play(eve, sticky=False, ask_ahead=True, tail_memories=None)
    for (parts, _, _), (plain, _, _) in zip(with_note, without, strict=True):
        assert {b.text for b in parts.blocks if not b.idle} == {b.text for b in plain.blocks}
        assert parts.tokens <= parts.budget
    assert any(b.idle for parts, _, _ in with_note for b in parts.blocks)  # some guesses were added, marked


def test_the_prompt_does_not_depend_on_asking_ahead(eve: CharacterCard) -> None:
    asked = play(eve, sticky=True, ask_ahead=True)
    never = play(eve, sticky=True, ask_ahead=False)
    assert [m for _, m, _ in asked] == [m for _, m, _ in never]


def test_the_pinned_name_is_not_said_again_as_a_belief(eve: CharacterCard) -> None:
    parts = play(eve, sticky=True, ask_ahead=True)[-1][0]
    assert "Tomas" in parts.prefix  # pinned in the sink
    assert not any(b.ref == "player.name" for b in parts.blocks)
    assert any(b.ref == "player_dog.name" for b in parts.blocks)  # other told facts still come


def new_memories(parts: PromptParts) -> list[str]:
    """The memory lines after the player's line that neither the window's notes nor the sticky note show."""
    shown = {line for texts in parts.notes for text in texts for line in text.splitlines()}
    return [b.text for b in (parts.tail or ()) if b.section == "memories" and b.text not in shown]


def test_at_most_tail_memories_found_for_the_line_come_after_it(eve: CharacterCard) -> None:
    assert TAIL_MEMORIES is not None
    capped = play(eve, sticky=True, ask_ahead=True)
    free = play(eve, sticky=True, ask_ahead=True, tail_memories=None, sticky_memories=3)
    assert all(len(new_memories(parts)) <= TAIL_MEMORIES for parts, _, _ in capped)
    assert max(len(new_memories(parts)) for parts, _, _ in free) > TAIL_MEMORIES  # the talk needs the cap
    assert all(parts.tokens <= parts.budget for parts, _, _ in capped)
    # what is left to encode after the known prefix (the player's line, what was found for it) shrinks
    count = Memory(eve, MemoryConfig(), embedder=HashEmbedder()).count_tokens

    def after(turns: list[tuple[PromptParts, list[dict[str, str]], list[dict[str, str]]]]) -> list[int]:
        return [count_messages(msgs[len(prefix):], count) for _, msgs, prefix in turns]

    assert max(after(capped)) < max(after(free))
    assert sum(after(capped)) < sum(after(free))
