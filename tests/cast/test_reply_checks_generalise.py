"""Checks on what the model says as Eve that do not depend on the phrasings of one talk (issue 11):
her own age, the player's facts taken as hers, another card fact's number or name for the one asked,
herself in the third person, the prompt's note format, and another speaker's turn in a judged reply."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.coherence import Coherence
from game.cast.dialogue import facts_from_card, someone_elses_turn
from game.cast.factsheet import FactSheet
from game.cast.guard import PersonaFacts, PersonaGuard
from game.cast.rejudge import check_reply
from game.cast.verifier import Verifier
from game.models.llm import split_sentences

#: What Ingrid told her (talk B's walker): name, home, cat, age.
TOLD = (("player", "name", "Ingrid", "player"), ("player", "home", "Aberdeen", "player"),
        ("player_cat", "name", "Pepper", "player"), ("player", "age", "31", "player"))


@pytest.fixture(scope="module")
def told(eve: Any) -> PersonaFacts:
    base = facts_from_card(eve, eve.home)
    return PersonaFacts(base.name, base.aliases, base.home, "Ingrid", base.known_names, (), TOLD)


@pytest.fixture(scope="module")
def coherence(eve: Any, embedder: Any) -> Coherence:
    return Coherence.from_card(eve, embedder)


@pytest.mark.parametrize(("line", "reply", "stopped"), [
    ("May I ask how old you are?", "I'm 31.", True),  # the player's age, not hers (36)
    ("I turned thirty-one in June.", "I'm thirty-one too, near enough.", True),
    ("What age are you?", "I am twenty-five years old.", True),
    ("How old are you?", "I'm thirty-six years old.", False),
    ("How old are you?", "Thirty-six. Old enough to read a tide table.", False),
    ("How far is the mainland?", "I'm two hundred yards from the slip, no more.", False),
])
def test_she_never_gives_herself_another_age(eve: Any, told: PersonaFacts, line: str, reply: str,
                                              stopped: bool) -> None:
    verdict, _ = Verifier(FactSheet.from_card(eve)).check(reply, told, line)
    assert (not verdict.ok and verdict.reasons[0].startswith("says she is")) is stopped, verdict


@pytest.mark.parametrize(("line", "reply", "stopped"), [
    ("Where were you raised?", "I grew up in Aberdeen, by the harbour.", True),
    ("Where are you from?", "I'm from Aberdeen, same as you.", True),
    ("Is that your cat?", "My cat Pepper sleeps by the stove.", True),
    ("Do you like cats?", "Pepper, my old friend, would agree.", True),
    ("Where were you raised?", "I'd like to see Aberdeen one day.", False),
    ("Where do I live?", "You live in Aberdeen, you said.", False),
    ("Who's minding Pepper?", "Your neighbour is, and Pepper's in good hands.", False),
    ("Hello", "I'm glad you came, Ingrid.", False),
])
def test_the_players_facts_never_become_hers(eve: Any, told: PersonaFacts, line: str, reply: str,
                                             stopped: bool) -> None:
    verdict, _ = Verifier(FactSheet.from_card(eve)).check(reply, told, line)
    assert (not verdict.ok and verdict.kind == "contradiction") is stopped, verdict
    if stopped:
        assert "player's" in verdict.reasons[0]


@pytest.mark.parametrize(("line", "reply", "stopped"), [
    ("How old is the lens?", "Forty-one years old.", True),  # Hild's years, not the lens's 1871
    ("What year did they put electricity into it?", "1871.", True),  # the lens's year, not 1968
    ("Does the foghorn have a name?", "Vesper, and she sings at dawn.", True),  # the lemon tree's name
    ("Where were you born?", "In Skerrow, in this very tower.", True),  # her card: Harrowby
    ("How many people live in Harrowby?", "Seven, and a dog.", True),
    ("How old is the lens?", "1871, older than the school.", False),
    ("Who runs the post boat?", "Jonas Brekke, on Tuesdays.", False),
    ("How long have you kept the light?", "Seven years, and Hild forty-one before me.", False),
    ("Does the foghorn have a name?", "Aye, she has.", False),  # no number or name: not judged here
    ("Is it cold out tonight?", "Colder than Harrowby, warmer than the lantern.", False),  # nothing on her card asked
])
def test_a_question_her_card_answers_gets_no_other_facts_number_or_name(coherence: Coherence, line: str,
                                                                        reply: str, stopped: bool) -> None:
    verdict = coherence.check(reply, line)
    assert (not verdict.ok and verdict.kind == "contradiction") is stopped, verdict


def test_a_later_sentence_is_judged_with_the_reply_so_far(coherence: Coherence) -> None:
    line = "How long have you kept the light?"
    late = coherence.check("It was electrified in 1968.", line, earlier=["The light's been on a long time."])
    assert not late.ok and late.kind == "contradiction"
    # once her card's number is said, another may follow
    assert coherence.check("Hild kept it forty-one before me.", line, earlier=["Seven years this winter."]).ok


@pytest.mark.parametrize(("reply", "stopped"), [
    ("Evening. The wind had me off the stones, and Eve stayed in the lantern room all night.", True),
    ("Eve looks at you and smiles.", True),
    ("Eve's kettle is always on.", True),
    ("I'm Eve, and this is my light.", False),
    ("Eve Solvang, keeper of the Skerrow light.", False),
    ("Call me Eve when the kettle's on.", False),
    ("Just Eve will do.", False),
])
def test_she_does_not_narrate_herself_by_name(coherence: Coherence, reply: str, stopped: bool) -> None:
    verdict = coherence.check(reply, "Good evening. Who are you?")
    assert (not verdict.ok and "by name" in verdict.reasons[0]) is stopped, verdict


@pytest.mark.parametrize("reply", ["The player's cat: Carer.", "The player's name: Ingrid Halvorsen"])
def test_the_prompts_note_format_is_out_of_character(eve: Any, reply: str) -> None:
    verdict = PersonaGuard(facts_from_card(eve, eve.home)).check(reply)
    assert not verdict.ok and verdict.kind == "ooc"


def test_a_judged_reply_ends_where_another_speakers_turn_opens(eve: Any, told: PersonaFacts) -> None:
    guard = PersonaGuard(told)
    verifier = Verifier(FactSheet.from_card(eve))
    assert someone_elses_turn("Ingrid: I", ["Eve Solvang", "Eve"]) and someone_elses_turn("player: hi", ["Eve"])
    assert not someone_elses_turn("Eve: The lamp is lit.", ["Eve Solvang", "Eve"])
    assert not someone_elses_turn("Listen: the tide's turning.", ["Eve"])
    why = check_reply(guard, verifier, split_sentences("Ingrid: My name is..."), told, "What did I give you?")
    assert why.startswith("label:")
    # as in the pipeline, the sentences before the other turn are her reply
    assert check_reply(guard, verifier, ["The kettle's on.", "Ingrid: Thank you."], told, "Is it late?") == ""


@pytest.mark.parametrize(("line", "reply", "stopped"), [
    ("Do you have any music out here?", "I'd rather listen to the kettle, and I'm not sure what's on the island.",
     True),
    ("Would you show me the lantern room?", "I'd have to look in the logbook for that, and the logbook's upstairs.",
     True),
    ("Do you have any music out here?", "Only the wind in the gallery rail, and Old Meg when it's thick.", False),
    ("Is the kettle on?", "I'd rather have tea than talk, but the kettle's on.", False),  # four words of a line only
])
def test_a_stock_line_for_no_answer_from_the_model_is_a_dodge(coherence: Coherence, line: str, reply: str,
                                                              stopped: bool) -> None:
    verdict = coherence.check(reply, line)
    assert (not verdict.ok and "stock line" in verdict.reasons[0]) is stopped, verdict


@pytest.mark.parametrize(("reply", "family"), [
    ("But I can't find a specific phrase in the document that refers to her.", "retrieval"),
    ("The lemon tree has a name, but it's not the one you're looking for.", "retrieval"),
    ("I couldn't find the correct entry for you.", "retrieval"),
    ("Please know that everyone has different abilities and resources.", "therapy"),
    ("It's okay to feel that way, and your feelings are valid.", "therapy"),
    ("Take care of yourself on the Spine.", ""),
    ("In the document box on the shelf, under the tide tables.", ""),
    ("I found it in the logbook, the winter Hild died.", ""),
])
def test_retrieval_and_counselling_registers_are_assistant_speak(eve: Any, reply: str, family: str) -> None:
    from game.cast.guard import assistant_speak

    assert assistant_speak(reply)[0] == family
    verdict = PersonaGuard(facts_from_card(eve, eve.home)).check(reply)
    assert verdict.ok is (family == ""), verdict


@pytest.mark.parametrize(("line", "reply", "stopped"), [
    ("Is the tide turning yet?", "The tide is turning.", False),  # the answer, in the question's words
    ("Is it true the gulls answer the foghorn?", "The gulls answer the foghorn.", False),
    ("I love honey cake.", "I love honey cake.", True),  # the player's line said as hers
    ("My dog is called Biscuit. He's staying with my sister.", "Biscuit is staying with my sister.", True),
    ("Can you hear the sea from your bed?", "Can you hear the sea from your bed?", True),
])
def test_a_yes_no_question_answered_in_its_own_words_is_no_parrot(eve: Any, told: PersonaFacts, line: str,
                                                                  reply: str, stopped: bool) -> None:
    verdict, _ = Verifier(FactSheet.from_card(eve)).check(reply, told, line)
    assert (not verdict.ok and verdict.kind == "repeat") is stopped, verdict
