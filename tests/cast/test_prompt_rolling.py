"""The rolling prompt layout: from one turn to the next, the prompt only grows at its end
(so a model keeping its KV cache encodes only the new turn), until the history window slides."""

from __future__ import annotations

from game.cast.card import CharacterCard
from game.cast.memory import Memory, MemoryConfig
from game.cast.prompt import PromptBuilder
from game.cast.retrieval import HashEmbedder
from game.state import Event

LINES = ["Good evening. My name is Ada.", "Is Admiral the gull inside?", "Tell me about the lamp.",
         "My sister Maren keeps bees.", "Does the foghorn scare the gulls?", "What about the tide tonight?",
         "Is the kettle on?", "Do you remember my sister?", "Tell me about the Spine at low water.",
         "What does Admiral eat?", "How old is the lens?", "Good night, Eve."]


def talk(eve: CharacterCard, config: MemoryConfig) -> list[tuple[list[dict[str, str]], int, str]]:
    """Each turn as the cast room plays it (the line observed, the prompt built, her reply observed):
    ``(messages, history length, reply)``."""
    mem = Memory(eve, config, embedder=HashEmbedder())
    builder = PromptBuilder(mem)
    out = []
    for turn, line in enumerate(LINES, 1):
        mem.observe(Event(kind="say", speaker="player", turn=turn, text=line, data={"target": "eve"}))
        mem.remember(f"On night {turn} the lamp was wound at dusk.", "action", turn)
        parts = builder.build(line, turn, mood=f"You feel {'warm' if turn > 6 else 'wary'} towards Ada.")
        msgs = parts.to_messages()
        reply = f"Mind the third step, answer {turn}."
        out.append((msgs, len(parts.history), reply))
        mem.observe(Event(kind="reply", speaker="eve", turn=turn, text=reply))
    return out


def test_the_prompt_grows_only_at_its_end_until_the_window_slides(eve: CharacterCard) -> None:
    turns = talk(eve, MemoryConfig(history_messages=8, history_slide=4))
    slides = 0
    for (before, hist_before, reply), (after, hist_after, _) in zip(turns, turns[1:], strict=False):
        assert after[-1]["role"] == "user" and after[0] == before[0] and after[1] == before[1]  # sink, reminder
        if hist_after > hist_before:  # nothing fell out: the last prompt and her reply, then the new turn
            assert after[: len(before) + 1] == [*before, {"role": "assistant", "content": reply}]
            assert len(after) - len(before) <= 4  # her reply, maybe a note, the new line
        else:
            slides += 1
            assert after[: len(before)] != before  # the window moved: the cache is re-filled from there
    assert 1 <= slides <= 3  # 12 turns, 8 messages, 4 at a time: a slide every two exchanges, not every turn


def test_a_line_already_in_the_window_is_not_repeated(eve: CharacterCard) -> None:
    msgs = talk(eve, MemoryConfig(history_messages=24, history_slide=0))[-1][0]
    notes = [m["content"] for m in msgs[2:-1] if m["role"] == "system"]
    lines = [line for note in notes for line in note.splitlines() if line and not line.startswith("##")]
    assert lines and len(lines) == len(set(lines))  # each lore entry, belief and memory shown once
    assert any("Admiral" in line for line in lines)  # the lore entry matched at turn 2 is still in view
    wary = [line for line in lines if "wary" in line]
    assert len(wary) == 1 and sum("warm" in line for line in lines) == 1  # the mood line, again when it changed


def test_classic_layout_keeps_every_block_in_the_system_message(eve: CharacterCard) -> None:
    mem = Memory(eve, embedder=HashEmbedder())
    mem.observe(Event(kind="say", speaker="player", turn=1, text="Is Admiral inside?", data={"target": "eve"}))
    parts = PromptBuilder(mem).build("Is Admiral inside?", 1)
    classic = parts.to_messages(layout="classic")
    assert classic[0]["content"] == parts.system and "Admiral" in parts.dynamic
    assert [m["role"] for m in classic] == ["system", "system", "user"]
    rolling = parts.to_messages()
    assert rolling[0]["content"] == parts.prefix and rolling[1]["content"] == parts.post_history
    assert rolling[-2]["role"] == "system" and "Admiral" in rolling[-2]["content"]  # this turn's lines, last
    assert rolling[-1] == {"role": "user", "content": "Is Admiral inside?"}
