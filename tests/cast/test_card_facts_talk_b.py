"""Her card answers what talk B asked of it (issue 11, session 7): the ship's bell (the model made it "a
gift from Ingrid Halvorsen"), swimming ("Yes, I do" against her card), music and reading (dodged with a
question line), the lamp's name, the drift map, the lantern room, the mail (answered with the rescues)
and when the stones are dry. Once-authored answers are facts now, so a question goes to the fact that
means it best ("Has the tide ever caught anyone out?" is the rescues, not low water). Each is asked here
in other words than the card's own questions."""

from __future__ import annotations

import pytest

from game.cast.grounding import Grounding
from game.cast.topics import TopicRouter


@pytest.mark.parametrize(("line", "fact"), [
    ("What's that old bell beside the door?", "card.bell"),
    ("Do you ever go for a swim off the island?", "card.swim"),
    ("Is there any music in this house?", "card.music"),
    ("What do you like to read in the evenings?", "card.reading"),
    ("Does the lamp have a name of its own?", "card.lamp_name"),
    ("What are all the pins stuck in that chart?", "card.drift_map"),
    ("Would you take me up to see the lantern room?", "card.lantern_room"),
    ("Who delivers your mail when the Spine is under water?", "card.post_boat"),
    ("What time are the causeway stones dry tomorrow?", "card.low_water"),
    ("Has the tide ever trapped someone out on the Spine?", "card.rescues"),
    ("What's the foghorn called?", "card.foghorn"),  # was the gull's authored answer
])
def test_a_card_question_is_answered_by_the_fact_that_means_it(grounding: Grounding, topics: TopicRouter, line: str,
                                                               fact: str) -> None:
    got = grounding.match(line) or topics.topic(line)
    assert got is not None and got.id == fact, (line, got)
