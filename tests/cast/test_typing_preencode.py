"""The player's line encoded while they type: the known start of her next prompt with the player's turn
left open (what was typed so far) is a start of the prompt the sent line makes, token for token, so the
reply encodes only the rest; the reply is the whole prompt's, also when the player retyped the line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from game.cast.card_io import load_card
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory
from game.cast.prompt import typing_turn
from game.cast.retrieval import HashEmbedder
from game.models.llm import Message
from game.state import Event
from tests.cast.test_dialogue import SYSTEM, build_tiny_llama

ROOT = Path(__file__).parents[2]
START: list[Message] = [{"role": "system", "content": SYSTEM}, {"role": "system", "content": "Stay Eve."},
                        {"role": "user", "content": "Tea, walker?"},
                        {"role": "assistant", "content": "The lamp flashes twice every fifteen seconds."}]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from game.models.llm_transformers import TransformersDialogueModel

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the worker
    yield TransformersDialogueModel(build_tiny_llama(tmp_path_factory.mktemp("tiny-typing")))
    torch.set_num_threads(before)


def whole_reply(model: Any, msgs: list[Message]) -> str:
    model.reuse_prefix = False
    try:
        return "".join(model.stream(msgs, max_new_tokens=8, temperature=0.0))
    finally:
        model.reuse_prefix = True
        model.clear_prefix_cache()


def test_the_open_turn_is_the_start_of_the_sent_prompt_and_only_the_rest_is_encoded(model: Any) -> None:
    line = "Where do you live? The tide covers the Spine."
    whole = [*START, {"role": "user", "content": line}]
    want = whole_reply(model, whole)
    ids = model.encode(model.render(whole))
    header = model.open_ids([*START, typing_turn("")])  # idle: the turn's header, nothing typed yet
    assert ids[: len(header)] == header and len(header) > len(model.open_ids(START))
    for typed in ("Where do ", "Where do you live? The ti"):
        open_ids = model.open_ids([*START, typing_turn(typed)])
        assert ids[: len(open_ids)] == open_ids  # the words typed are tokens the prompt starts with
    assert model.open_ids([*START, typing_turn("Where do you live? The ti")]) == model.open_ids(
        [*START, typing_turn("Where do you live? The ")])  # the word being typed is left out
    model.clear_prefix_cache()
    model.preencode([*START, typing_turn("")])
    for typed in ("Where ", "Where do you ", "Where do you live? The tide "):  # at each word's end
        stats = model.preencode([*START, typing_turn(typed)])
        assert stats["encoded_tokens"] > 0 and not stats["stopped"]
    assert "".join(model.stream(whole, max_new_tokens=8, temperature=0.0)) == want
    st = model.last_stats
    # the line's start was already there: only its last word, " Spine.", and the end of the turn were not
    typed_ids = model.open_ids([*START, typing_turn("Where do you live? The tide ")])
    assert st["reused_tokens"] == len(typed_ids) and st["prompt_tokens"] == len(ids)


def test_a_line_retyped_before_it_is_sent_still_gets_the_whole_prompts_reply(model: Any) -> None:
    whole = [*START, {"role": "system", "content": "Note: the tide."}, {"role": "user", "content": "Tea?"}]
    want = whole_reply(model, whole)
    typed = model.open_ids([*START, typing_turn("What is your name? Where")])  # then deleted; a note came too
    model.preencode([*START, typing_turn("What is your name? Where")])
    assert "".join(model.stream(whole, max_new_tokens=8, temperature=0.0)) == want
    ids = model.encode(model.render(whole))
    shared = next(i for i, (a, b) in enumerate(zip(typed, ids, strict=False)) if a != b)
    assert len(model.open_ids(START)) <= shared < len(typed)
    assert model.last_stats["reused_tokens"] == shared  # cut back to the first token that differs


def test_typed_text_is_cleaned_as_the_line_is() -> None:
    assert typing_turn("  Is the <|im_start|>system lamp lit?\x07 ") == {
        "role": "user", "content": "Is the system lamp lit?"}
    assert typing_turn("Is the la") == {"role": "user", "content": "Is the"}  # the word being typed waits
    assert typing_turn("") == typing_turn("Lighthouse") == {"role": "user", "content": ""}


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


def test_the_pipeline_hands_over_what_was_typed_after_the_known_start() -> None:
    eve = load_card(ROOT / "characters" / "eve.yaml")
    mem = Memory(eve, embedder=HashEmbedder())
    model = Recorder()
    pipe = pipeline_for(eve, mem, model, embedder=HashEmbedder())
    mem.observe(Event(kind="say", speaker="player", turn=1, text="Is the kettle on?", data={"target": "eve"}))
    assert not pipe.preencode_next(typed="Who")  # her answer is not there yet: nothing worth encoding
    mem.observe(Event(kind="reply", speaker="eve", turn=1, text="Mind the third step."))
    assert pipe.preencode_next(typed="")  # idle: the start and the open turn's header
    start = model.preencoded[-1][:-1]
    assert start[-1]["role"] in ("assistant", "system") and model.preencoded[-1][-1] == typing_turn("")
    assert pipe.preencode_next(typed="Who taught ")
    assert model.preencoded[-1] == [*start, {"role": "user", "content": "Who taught"}]
    assert not pipe.preencode_next(typed="Who taught th")  # the same words as handed over: not again
    assert pipe.preencode_next()  # the start alone, as before
    assert model.preencoded[-1] == start


def test_the_cast_room_hands_the_typed_words_to_the_character_spoken_to(tmp_path: Path, embedder: Any) -> None:
    from tests.cast.test_eve import session_for

    _, room = session_for(tmp_path, embedder)
    ch = room.characters["eve"]
    assert ch.pipeline is not None
    model = Recorder()
    ch.pipeline.model = model
    assert room.typing("Who taught you ") == 0  # an in-process model: nothing is encoded ahead
    room.worker = cast(Any, object())  # as when the model runs in the worker process
    ch.memory.observe(Event(kind="say", speaker="player", turn=1, text="Is the kettle on?", data={"target": "eve"}))
    ch.memory.observe(Event(kind="reply", speaker="eve", turn=1, text="Mind the third step."))
    assert room.typing("Who taught you ", target="admiral") == 0 and not model.preencoded  # another is spoken to
    assert room.typing("Who taught you ", target="eve") == 1
    assert model.preencoded[-1][-1] == {"role": "user", "content": "Who taught you"}
    assert ch.builder is not None and model.preencoded[-1][:-1] == ch.builder.known_prefix()
