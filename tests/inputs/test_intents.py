"""Free text -> intents: negation first, meaning (MiniLM), slots, accept/ask back/decline.

The evaluation set (tests/data/intents_eval.jsonl, 271 inputs) runs here with floors
measured on it (bench/intents.py prints the figures; docs/inputs.md records them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from game.inputs.evalset import EVAL_PATH, evaluate, fresh_state, load_cases
from game.inputs.meaning import Clarify, LexicalEmbedder, NotUnderstood, Resolver, Understood
from game.inputs.slots import Lexicon, parse
from game.state import Choose, Give, Instruct
from game.story import load_story
from game.story.negation import analyse
from game.story.story import Story

#: Measured with MiniLM: 254/271 = 93.7% (with Eve's 30 kitchen lines; the rule before gifts of new things
#: gave 249/271 = 91.9%), 1 false accept ("play some music" -> sing). ``bench/intents.py`` prints both.
ACCURACY_FLOOR = 0.92
MAX_FALSE_ACCEPTS = 2


@pytest.fixture(scope="module")
def mini() -> Story:
    return load_story(Path(__file__).parents[1] / "data" / "mini")


@pytest.fixture(scope="module")
def resolver(mini: Story, embedder: Any) -> Resolver:
    return Resolver(mini, embedder)


def test_the_evaluation_set_is_large_and_varied() -> None:
    cases = load_cases()
    assert len(cases) >= 150
    tags = {c.tag for c in cases}
    assert {"paraphrase", "negation", "oos", "colour", "object", "typo", "clarify", "heldout"} <= tags
    rows = [json.loads(x) for x in EVAL_PATH.read_text().splitlines() if x.strip()]
    assert all({"text", "story", "scene", "expect"} <= set(r) for r in rows)


def test_evaluation_accuracy_and_false_accepts(embedder: Any) -> None:
    report = evaluate(load_cases(), embedder=embedder)
    misses = "\n".join(f"{c.text!r}: want {c.expect}, got {g}" for c, g in report.wrong)
    assert report.accuracy >= ACCURACY_FLOOR, misses
    assert report.false_accepts <= MAX_FALSE_ACCEPTS, misses
    assert report.negation_leaks == 0, misses
    assert report.by_tag["negation"][0] == report.by_tag["negation"][1]


def test_dont_offer_the_leaf_never_takes_the_leaf(resolver: Resolver, mini: Story) -> None:
    state = fresh_state(mini, "meadow")
    for text in ("don't offer the leaf", "Don’t offer the leaf!", "do not give it the leaf", "never offer the leaf",
                 "I won't hand over the leaf", "do not, under any circumstances, give it the leaf",
                 "no leaf please", "don't offer the leaf to the creature"):
        out = resolver.understand(text, state)
        assert isinstance(out, NotUnderstood) and out.reason == "negated", (text, out)
    for text in ("not the leaf, the kite", "don't offer the leaf, offer the kite", "the kite, not the leaf"):
        out = resolver.understand(text, state)
        assert isinstance(out, Understood) and out.intent == Choose(choice_id="offer_kite"), (text, out)


def test_colour_and_object_variants_fill_the_slots(resolver: Resolver, mini: Story) -> None:
    state = fresh_state(mini, "meadow")
    for colour in ("blue", "red", "green", "yellow"):
        out = resolver.understand(f"give the creature a {colour} scarf", state)
        assert isinstance(out, Understood) and isinstance(out.intent, Instruct)
        assert out.intent.edit == "look"
        assert out.intent.params == {"character": "creature", "wear": "scarf", "colour": colour}
    out = resolver.understand("add a lantern by the tree", state)
    assert isinstance(out, Understood) and isinstance(out.intent, Instruct)
    assert out.intent.params == {"name": "lantern", "relation": "near", "near": "tree"}
    out = resolver.understand("make the kite green", state)
    assert isinstance(out, Understood) and isinstance(out.intent, Instruct)
    assert out.intent.edit == "change_object" and out.intent.params["target"] == "kite"
    out = resolver.understand("give the creature the stone", state)
    assert isinstance(out, Understood) and out.intent == Give(item_id="stone", character_id="creature")


def test_close_calls_ask_back_and_the_answer_is_understood(resolver: Resolver, mini: Story) -> None:
    state = fresh_state(mini, "meadow")
    ask = resolver.understand("the kite or the leaf", state)
    assert isinstance(ask, Clarify) and ask.question == "The red kite or the green leaf?"
    assert {o.key for o in ask.options} == {"choice:offer_kite", "choice:offer_leaf"}
    answer = resolver.understand("the leaf", state, pending=ask)
    assert isinstance(answer, Understood) and answer.intent == Choose(choice_id="offer_leaf")
    assert isinstance(resolver.understand("the second one", state, pending=ask), Understood)
    assert isinstance(resolver.understand("neither", state, pending=ask), NotUnderstood)
    value = resolver.understand("change the weather", state)
    assert isinstance(value, Clarify) and "Rain" in value.question
    rain = resolver.understand("rain", state, pending=value)
    assert isinstance(rain, Understood) and isinstance(rain.intent, Instruct)
    assert rain.intent.params["value"] == "rain"
    vague = resolver.understand("offer it something", state)
    assert isinstance(vague, Clarify) and len(vague.options) == 3


def test_out_of_scope_and_empty_lines_are_declined_honestly(resolver: Resolver, mini: Story) -> None:
    state = fresh_state(mini, "meadow")
    for text in ("what is the capital of France", "asdf qwer", "open the pod bay doors", "", "   "):
        out = resolver.understand(text, state)
        assert isinstance(out, NotUnderstood) and out.reply, text
    assert resolver.understand("undo", state).reason == "undo"  # type: ignore[union-attr]


def test_negation_scope_and_rewrites() -> None:
    assert analyse("don't offer the leaf").kind == "negated"
    assert analyse("never mind").kind == "undo"
    assert analyse("please forget what I just said").kind == "undo"
    part = analyse("not the leaf, the kite")
    assert part.kind == "partial" and part.text == "the kite" and "leaf" in part.excluded
    assert analyse("stop the rain").text == "clear the sky"
    assert analyse("offer the kite").kind == "positive"


def test_slots_read_colours_sizes_positions_and_typos(mini: Story) -> None:
    lex = Lexicon.from_story(mini.model, mini.model.scenes["meadow"], {},
                             ["Offer the kite", "Offer the leaf"])
    s = parse("put a big red ball to the left of the creature", lex)
    assert s.nouns == ("ball",) and s.colours == ("red",) and s.sizes == ("big",)
    assert s.position is not None and s.position.relation == "left_of" and s.position.anchor_id == "creature"
    assert parse("give it the stone", lex).characters == ("creature",)
    assert parse("wrap a scarf round the creature's neck", lex).characters == ("creature",)
    assert lex.correct("ofer the kiet") == "offer the kite"
    assert lex.correct("put a ball here") == "put a ball here"  # a real word is never "corrected"


def test_the_lexical_fallback_needs_no_model_and_still_declines(mini: Story) -> None:
    r = Resolver(mini, LexicalEmbedder())
    state = fresh_state(mini, "meadow")
    assert isinstance(r.understand("offer the kite", state), Understood)
    assert isinstance(r.understand("don't offer the leaf", state), NotUnderstood)
    assert isinstance(r.understand("what time is it in Tokyo", state), NotUnderstood)
