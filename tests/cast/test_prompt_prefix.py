"""The known start of her next prompt (idle pre-encoding): what the next prompt really starts with,
after every turn, slides included; and the pipeline hands it to a model only when it is worth it."""

from __future__ import annotations

from collections.abc import Iterator

from game.cast.card import CharacterCard
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory, MemoryConfig
from game.cast.prompt import PromptBuilder
from game.cast.retrieval import HashEmbedder
from game.models.llm import Message, Preencodes
from game.state import Event

LINES = ["Good evening. My name is Ada.", "Is Admiral the gull inside?", "Tell me about the lamp.",
         "My sister Maren keeps bees.", "Does the foghorn scare the gulls?", "What about the tide tonight?",
         "Is the kettle on?", "Do you remember my sister?", "Tell me about the Spine at low water.",
         "What does Admiral eat?"]


def test_the_known_prefix_is_the_start_of_the_next_prompt_slides_included(eve: CharacterCard) -> None:
    # as the cast room plays a turn: the prompt is built, then the line and her reply are observed
    mem = Memory(eve, MemoryConfig(history_messages=6, history_slide=4), embedder=HashEmbedder())
    builder = PromptBuilder(mem)
    prefix: list[dict[str, str]] = builder.known_prefix()
    assert [m["role"] for m in prefix] == ["system", "system"]  # before the first line: the sink and reminder
    slides = 0
    for turn, line in enumerate(LINES, 1):
        mem.remember(f"On night {turn} the lamp was wound at dusk.", "action", turn)
        if turn > 1:  # the cast room asks again after each event: the sticky note may take the new memory in
            again = builder.known_prefix()
            assert again[: len(prefix) - 1] == prefix[: len(prefix) - 1]  # only the sticky note at its end may change
            prefix = again
        msgs = builder.build(line, turn, mood=f"You feel {'warm' if turn > 5 else 'wary'} towards Ada.").to_messages()
        assert msgs[: len(prefix)] == prefix  # what was pre-encoded while she waited is the prompt's start
        assert msgs[-1] == {"role": "user", "content": line} and len(msgs) - len(prefix) <= 2  # note, line
        before = len(mem.history)
        mem.observe(Event(kind="say", speaker="player", turn=turn, text=line, data={"target": "eve"}))
        slides += len(mem.history) <= before
        mem.observe(Event(kind="reply", speaker="eve", turn=turn, text=f"Mind the third step, answer {turn}."))
        prefix = builder.known_prefix()
        chat = [m for m in prefix if m["role"] != "system"]  # her reply, then perhaps the sticky note
        assert chat[-1] == {"role": "assistant", "content": f"Mind the third step, answer {turn}."}
    assert slides >= 2  # the slid windows were known ahead too


class Recorder:
    """A model that records what it is asked to pre-encode (and answers nothing)."""

    name = "recorder"
    context_size = 4096

    def __init__(self) -> None:
        self.preencoded: list[list[Message]] = []

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        yield "Mind the third step."

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def preencode(self, messages: list[Message]) -> None:
        self.preencoded.append(messages)


def test_the_pipeline_hands_over_the_prefix_once_her_line_ends_it(eve: CharacterCard) -> None:
    mem = Memory(eve, embedder=HashEmbedder())
    model = Recorder()
    assert isinstance(model, Preencodes)
    pipe = pipeline_for(eve, mem, model, embedder=HashEmbedder())
    assert pipe.preencode_next() and len(model.preencoded) == 1  # the sink, before the first line
    assert not pipe.preencode_next()  # unchanged: not again
    mem.observe(Event(kind="say", speaker="player", turn=1, text="Is the kettle on?", data={"target": "eve"}))
    assert not pipe.preencode_next()  # her answer is not there yet: nothing worth encoding
    mem.observe(Event(kind="reply", speaker="eve", turn=1, text="Mind the third step."))
    assert pipe.preencode_next()
    assert model.preencoded[-1][-1] == {"role": "assistant", "content": "Mind the third step."}
    mem.observe(Event(kind="line", speaker="narrator", turn=1, text="The wind rises."))  # an episodic memory
    assert pipe.preencode_next()  # the sticky note of her next prompt takes it in
    assert model.preencoded[-1][-1]["role"] == "system" and "The wind rises." in model.preencoded[-1][-1]["content"]
    assert not pipe.preencode_next()  # unchanged: not again
