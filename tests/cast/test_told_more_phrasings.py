"""Told facts in the phrasings of the held-out talk B (issue 11): session 6's run of
`bench/data/eve_talk60_b.txt` kept only the name and the age of eight things Ingrid told Eve, and
answered "May I ask how old you are?" with the player's own age. These rows were written after
that run (so talk B is no longer held out for them), with more phrasings of the same forms."""

from __future__ import annotations

from typing import Any

import pytest

from game.cast.grounding import Grounding
from game.cast.memory import Memory
from game.cast.retrieval import HashEmbedder
from game.cast.told import facts_told
from game.state.events import Event


def _told(eve: Any, *lines: str) -> list[tuple[str, str, str, str]]:
    mem = Memory(eve, embedder=HashEmbedder())
    for turn, line in enumerate(lines, 1):
        mem.observe(Event(kind="say", turn=turn, speaker="player", text=line, data={"target": "eve"}))
    return [(b.entity, b.key, b.value, b.source) for b in mem.beliefs()]


@pytest.mark.parametrize(("line", "known", "expected"), [
    ("The name's Ingrid. Ingrid Halvorsen.", {},
     [("player", "name", "Ingrid"), ("player", "full_name", "Ingrid Halvorsen")]),
    ("Call me Jo. Jo Marsh, from the ferry office.", {},
     [("player", "name", "Jo"), ("player", "full_name", "Jo Marsh")]),
    ("I came up on the train from Aberdeen yesterday.", {}, [("player", "home", "Aberdeen")]),
    ("We drove over from Galway this morning.", {}, [("player", "home", "Galway")]),
    ("I mend clocks for a living, mostly old longcase ones.", {}, [("player", "work", "clock mender")]),
    ("I make barrels for a living.", {}, [("player", "work", "barrel maker")]),
    ("There's a grey cat waiting at home, Pepper.", {}, [("player_cat", "name", "Pepper")]),
    ("I've got an old dog at home, Rufus.", {}, [("player_dog", "name", "Rufus")]),
    ("My neighbour, Mrs Duncan, is feeding her until Sunday.", {"player_cat": "Pepper"},
     [("player_cat", "carer", "with your neighbour Mrs Duncan")]),
    ("My brother is feeding him while I'm away.", {"player_dog": "Rufus"},
     [("player_dog", "carer", "with your brother")]),
    ("Nothing in the world beats a bowl of cullen skink.", {}, [("player", "likes", "a bowl of cullen skink")]),
    ("Nothing beats fresh bread.", {}, [("player", "likes", "fresh bread")]),
    ("I'm very fond of blackberry jam.", {}, [("player", "likes", "blackberry jam")]),
    ("Nothing beats me at chess.", {}, []),  # not a thing she likes
])
def test_more_ways_of_telling_a_fact(line: str, known: dict[str, str], expected: list[tuple[str, str, str]]) -> None:
    assert [(f.entity, f.key, f.value) for f in facts_told(line, known)] == expected


def test_her_age_is_not_the_player_s_and_the_player_s_is_not_hers(eve: Any, embedder: Any) -> None:
    beliefs = _told(eve, "I turned thirty-one in June.")
    grounding = Grounding(eve, embedder)
    for polite in ("May I ask how old you are?", "Can I ask how old you are?", "Could I ask your age?"):
        answer = grounding.match(polite, beliefs)  # was "31, you said."
        assert answer is None or answer.id.startswith("card."), (polite, answer)
    mine = grounding.match("Do you remember how old I am?", beliefs)
    assert mine is not None and mine.id == "told.player.age"


def test_a_question_about_a_pet_never_told_is_not_answered_with_the_player_s_name(eve: Any, embedder: Any) -> None:
    beliefs = _told(eve, "The name's Ingrid.")
    grounding = Grounding(eve, embedder)
    for q in ("Do you recall what my cat is called?", "What's my dog's name?"):
        answer = grounding.match(q, beliefs)  # was "Ingrid. You told me at the door..."
        assert answer is None or answer.id != "told.player.name", (q, answer)
    assert grounding.match("Do you remember my name?", beliefs) is not None


def test_the_whole_talk_b_opening_is_remembered(eve: Any, embedder: Any) -> None:
    beliefs = _told(eve, "The name's Ingrid. Ingrid Halvorsen.", "I came up on the train from Aberdeen yesterday.",
                    "I mend clocks for a living, mostly old longcase ones.",
                    "There's a grey cat waiting at home, Pepper.",
                    "My neighbour, Mrs Duncan, is feeding her until Sunday.", "I turned thirty-one in June.",
                    "Nothing in the world beats a bowl of cullen skink.")
    grounding = Grounding(eve, embedder)
    asked = {"What's my surname?": "Halvorsen", "Which city did I come up from?": "Aberdeen",
             "What do I do for a living?": "clock mender", "And my cat, what's her name again?": "Pepper",
             "Who's minding Pepper while I'm here?": "neighbour"}
    for q, want in asked.items():
        answer = grounding.match(q, beliefs)
        assert answer is not None and want.lower() in answer.text.lower(), (q, answer)
