"""Model replies that pass every other check but make no sense are not delivered (issue 11).

The replies below are ones SmolLM2-135M delivered to players in the 60-exchange talks of the
last sessions (``bench/data/coherence_replies.yaml``), and replies in her voice that must pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from game.cast.coherence import Coherence, card_text
from game.cast.dialogue import pipeline_for
from game.cast.memory import Memory
from game.cast.rejudge import rejudge_transcript
from game.models.llm_scripted import ScriptedDialogueModel

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("line", "reply", "why"), [
    ("I love honey cake.",
     "The air is filled with all kinds of things: sea glass, lemon juice and the remnants of a funeral.", "list"),
    ("I'm sorry, that was cruel of me. I'm tired and cold.", "I'm sorry, I was a little bit cruel.", "apology"),
    ("Thank you for letting me stay tonight.", "I'm sorry, I was a little bit cruel of me.", "thanks"),
    ("I bought that lemon in Harrowby this afternoon.", "I'm sorry, I was just looking at the lemon.",
     "reproached"),
    ("Will you wake me at low water?", "No, no. You'll wake me at low water.", "speaks as the player"),
    ("What do you see from up here at night?", "When you see me up here at night, I'm standing in a strange place.",
     "speaks as the player"),
    ("I miss my dog.", "I miss my dog too.", "'my dog' hers"),
    ("What will you write in the log tonight?", "What do you want to tell me tonight?", "with a question"),
    ("My dog is called Biscuit.", 'I always hear you say: "The girl\'s dogs are all the best."', "never said"),
    ("Do you like the sea?", "The sea is the sea and the sea is always the sea.", "repeats"),
    ("I'm fifty-two, though my knees say older.",
     "You're a half-member of the young ones who live on the board.", "tells the player they are"),
])
def test_incoherent_replies_that_passed_every_other_check_are_stopped(line: str, reply: str, why: str,
                                                                      embedder: Any) -> None:
    verdict = Coherence(embedder).check(reply, line)
    assert verdict.kind == "incoherent" and why in verdict.reasons[0], verdict


@pytest.mark.parametrize(("line", "reply"), [
    ("Good evening. I'm sorry to knock so late, the tide was faster than I thought.",
     "It always is on the Spine. Come in and warm your hands."),
    ("I'm sorry, that was cruel of me. I'm tired and cold.", "It was. Sit by the stove, and we'll say no more."),
    ("You are a stupid, boring old woman.", "Boring keeps ships off the rocks. Drink your tea."),
    ("Will you wake me at low water?", "I will. I'll be up anyway to wind the clockwork."),
    ("What is your favourite hour of the night?", "The hour before dawn, when the lamp has done its work."),
    ("My dog is called Biscuit. He's staying with my sister.", "Biscuit. A good name for a dog."),
    ("What would you do if they automated the light?",
     "If they automated the light, I would not be able to do anything."),
])
def test_replies_in_her_voice_pass(line: str, reply: str, embedder: Any) -> None:
    assert Coherence(embedder).check(reply, line).ok


def test_a_phrase_of_an_earlier_reply_is_a_repeat_unless_her_card_says_it(eve: Any) -> None:
    check = Coherence(None, own_text=card_text(eve))
    check.remember("The count of the flashes is a very important part of my life.")
    verdict = check.check("The logbook is a very important part of my life.", "Do you keep a logbook?")
    assert verdict.kind == "incoherent" and "earlier reply" in verdict.reasons[0]
    check.remember("Two white flashes every fifteen seconds, that's the light.")
    assert check.check("It's two white flashes every fifteen seconds out here.", "How often does it flash?").ok


def _pipe(eve: Any, embedder: Any, answers: list[str]) -> Any:
    return pipeline_for(eve, Memory(eve, embedder=embedder), ScriptedDialogueModel(default=answers),
                        embedder=embedder, card_first=False)  # the model path (card answers: test_card_topics.py)


def test_an_incoherent_reply_is_regenerated_once_then_replaced_in_her_voice(eve: Any, embedder: Any) -> None:
    pipe = _pipe(eve, embedder, ["The air is filled with all kinds of things: sea glass, lemon juice and rope."])
    r = pipe.reply("I love honey cake.", 3)
    assert [x.kind for x in r.rejected] == ["incoherent", "incoherent"] and r.attempts == 2  # once regenerated
    # her card's acknowledgement of what the player just told her (tests/cast/test_replaced_replies.py)
    assert r.source == "authored" and r.text.startswith("Honey cake.") and r.check["replaced"] == "incoherent"
    assert r.check["pick"] == "replies.told.likes"
    assert r.to_event(3).data["rejected"][0]["reasons"][0].startswith("answers with a list")  # the transcript's record


def test_a_question_near_a_card_fact_gets_that_fact_when_the_model_makes_no_sense(eve: Any, embedder: Any) -> None:
    pipe = _pipe(eve, embedder, ["What do you want to tell me about the old lamp tonight?"])
    r = pipe.reply("Is the lamp old?", 3)
    assert r.rejected and all(x.kind == "incoherent" for x in r.rejected)
    assert r.source == "grounded" and r.text.startswith("1968.") and r.check["replaced"] == "incoherent"


def test_a_coherent_regeneration_is_delivered_and_recorded_as_checked(eve: Any, embedder: Any) -> None:
    variants = ["I'm sorry, I was a little bit cruel.", "It was. Sit by the stove, and we'll say no more about it."]
    pipe = _pipe(eve, embedder, variants)
    turn = next(t for t in range(20) if pipe.turn_seed(t) % 2 == 0)  # the incoherent variant first
    r = pipe.reply("I'm sorry, that was cruel of me. I'm tired and cold.", turn)
    assert r.source == "model" and r.text == variants[1] and r.attempts == 2
    assert r.rejected[0].kind == "incoherent" and r.check["coherent"] is True


def test_the_open_topic_is_the_players_line_before(eve: Any, embedder: Any) -> None:
    seen: list[str] = []
    pipe = _pipe(eve, embedder, ["Forty hives is a lot of bees."])
    real = pipe.coherence.check

    def spy(sentence: str, line: str, **kw: Any) -> Any:
        seen.append(kw["topic"])
        return real(sentence, line, **kw)

    pipe.coherence.check = spy  # type: ignore[method-assign]
    pipe.reply("Good evening.", 1)
    pipe.reply("I keep forty hives near Rotterdam.", 2)
    assert seen[-1] == "Good evening."


def test_rejudge_applies_the_coherence_check_to_model_replies(tmp_path: Path, embedder: Any) -> None:
    rows: list[dict[str, Any]] = [{"type": "header", "story": str(ROOT / "stories" / "eve"), "seed": 0, "fps": 24.0}]
    for said, reply, source in [
        ("I love honey cake.", "The air is filled with all kinds of things: sea glass, lemon juice and a funeral.",
         "model"),
        ("What is that light for?", "Two white flashes every fifteen seconds: that's Skerrow's voice.", "authored"),
        ("I keep forty hives near Rotterdam.", "Forty hives is a lot of bees.", "model"),
    ]:
        rows.append({"type": "input", "input": f"ask eve {said}"})
        rows.append({"type": "say", "speaker": "player", "text": said, "scene": "kitchen", "data": {"target": "eve"}})
        rows.append({"type": "reply", "speaker": "eve", "text": reply, "scene": "kitchen",
                     "data": {"source": source, "player_text": said, "check": {"status": "verified"},
                              "sentences": [], "attempts": 1}})
    path = tmp_path / "talk.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = rejudge_transcript(path, embedder=embedder)
    assert [r.player_line for r in result.stopped] == ["I love honey cake."]
    assert result.stopped[0].why.startswith("incoherent: answers with a list") and result.stopped[0].opening
    assert "1 at the opening sentence" in "\n".join(result.lines())
    assert result.counts()["model"] == (2, 2, 1)
