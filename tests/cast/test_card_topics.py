"""A question about her own life that her card answers is answered from the card, found by meaning (issue 11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.cast.card import CharacterCard
from game.cast.card_io import load_card
from game.cast.dialogue import facts_from_card, pipeline_for, split_sentences
from game.cast.guard import PersonaGuard
from game.cast.memory import Memory
from game.cast.topics import TopicRouter, card_topics
from game.models.llm_scripted import ScriptedDialogueModel

ROOT = Path(__file__).resolve().parents[2]
#: Fails the coherence check to any line (a list for an answer): every model attempt is replaced.
NONSENSE = "The air is filled with all kinds of things: sea glass, lemon juice and the remnants of a funeral."


@pytest.fixture(scope="module")
def eve() -> CharacterCard:
    return load_card(ROOT / "characters" / "eve.yaml")


def _pipe(card: CharacterCard, embedder: Any, reply: str = NONSENSE) -> Any:
    return pipeline_for(card, Memory(card, embedder=embedder), ScriptedDialogueModel(default=reply),
                        embedder=embedder)


# dev phrasings (bench/data/eve_topics.yaml) that no card question matches at 0.6: found by meaning
@pytest.mark.parametrize(("line", "topic"), [
    ("Are there any beehives on Skerrow?", "card.bees"),
    ("Were you happy as a girl in the village?", "card.childhood"),
    ("What's the worst gale you've lived through?", "card.storms"),
    ("Where did that scar come from?", "card.scar"),
    ("What can you see out there in the dark?", "card.night_view"),
    ("Is it lonely on the island?", "example.0"),
])
def test_a_question_her_card_answers_is_answered_from_it(eve: CharacterCard, embedder: Any, line: str,
                                                        topic: str) -> None:
    r = _pipe(eve, embedder, "I like the sea very much and the sea likes me.").reply(line, 3)
    assert r.authored_id == topic and r.check["topic"] is True, (line, r.source, r.text)
    assert r.source == ("grounded" if topic.startswith("card.") else "authored")
    said = next(t.answer for t in card_topics(eve) if t.id == topic)
    assert r.text == said and r.attempts == 0  # her words from the card; the model was never asked


def test_a_question_nothing_on_her_card_answers_is_left_to_the_model(eve: CharacterCard, embedder: Any) -> None:
    pipe = _pipe(eve, embedder, "Football? I've never seen a match. The tide keeps me busy enough.")
    for line in ("Do you like football?", "What's the capital of France?"):
        r = pipe.reply(line, 3)
        assert r.source == "model" and "topic" not in r.check, (line, r.text)


def test_a_question_about_the_player_is_not_answered_with_her_own_facts(eve: CharacterCard, embedder: Any) -> None:
    grounding = TopicRouter(eve, embedder)
    # "grandmother" scores 0.64 to Hild's topic, but the line asks what Hild would think of the player
    assert grounding.topic("What would your grandmother have thought of me?") is None
    assert grounding.topic("What do you think of my beekeeping?") is None
    sleep = grounding.topic("Where can I sleep?")  # a topic asked in the player's person is answered
    assert sleep is not None and sleep.id == "card.sleep"


def test_the_question_line_is_never_said_when_a_card_fact_answers(eve: CharacterCard, embedder: Any) -> None:
    pipe = _pipe(eve, embedder)
    # below the topic threshold, but near the past_work topic: every model attempt failed, so she
    # says the fact instead of "I'd have to look in the logbook for that"
    r = pipe.reply("What was your job before you came here?", 3)
    assert r.source == "grounded" and r.authored_id == "card.past_work", r.text
    assert r.check["replaced"] == "incoherent" and r.text not in eve.replies.question
    r = pipe.reply("Do you keep a logbook?", 4)
    assert r.authored_id == "card.logbook" and r.text not in eve.replies.question


def test_every_answer_on_her_card_passes_her_persona_guard(eve: CharacterCard) -> None:
    guard = PersonaGuard(facts_from_card(eve), never_say=tuple(eve.never_say))
    topics = card_topics(eve)
    assert len([t for t in topics if t.id.startswith("card.")]) >= 40
    for t in topics:  # sentence by sentence, as the pipeline checks them
        for sentence in split_sentences(t.answer):
            verdict = guard.check(sentence)
            assert verdict.ok or verdict.kind == "empty", (t.id, sentence, verdict)  # "1871." alone is a year
