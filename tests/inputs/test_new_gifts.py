"""Typed gifts of things the player does not hold ("give her a lantern") are gifts, not story choices.

Last session a newcomer typed the README's own example, "give her a lantern", in Eve's kitchen
and the game took the once-only choice "Tell her you came to see the light" (the two lines are
close in meaning: lantern ~ light). A line that names a new thing to give is that gift: the
thing is made in the world and handed over through the story's ``on_give`` tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.inputs.channels import Channels
from game.inputs.evalset import fresh_state
from game.inputs.meaning import Resolver, Understood
from game.session import Session
from game.state import Choose, Instruct
from game.story import load_story
from game.story.story import Story
from game.world.backends.null import NullBackend

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def eve() -> Story:
    return load_story(ROOT / "stories" / "eve")


@pytest.fixture(scope="module")
def resolver(eve: Story, embedder: Any) -> Resolver:
    return Resolver(eve, embedder)


def _intent(resolver: Resolver, story: Story, text: str) -> Any:
    out = resolver.understand(text, fresh_state(story, "kitchen"))
    assert isinstance(out, Understood), (text, out)
    return out.intent


@pytest.mark.parametrize("text", ["give her a lantern", "offer Eve a lantern", "hand her a small lantern"])
def test_give_her_a_lantern_is_a_gift_of_a_lantern_not_a_story_choice(resolver: Resolver, eve: Story,
                                                                       text: str) -> None:
    intent = _intent(resolver, eve, text)
    assert isinstance(intent, Instruct), intent
    assert intent.edit == "give_object"
    assert intent.params["name"] == "lantern" and intent.params["character"] == "eve"


def test_the_story_choice_is_still_taken_when_the_line_says_it(resolver: Resolver, eve: Story) -> None:
    assert _intent(resolver, eve, "tell her I came to see the light") == Choose(choice_id="came_for_light")
    assert _intent(resolver, eve, "give her the lemon").model_dump()["item_id"] == "lemon"  # held: a plain gift
    look = _intent(resolver, eve, "give her a red scarf")  # a wearable is still the look edit
    assert isinstance(look, Instruct) and look.edit == "look" and look.params["wear"] == "scarf"


def test_a_cup_of_tea_is_given_whole(resolver: Resolver, eve: Story) -> None:
    intent = _intent(resolver, eve, "offer Eve a cup of tea")
    assert isinstance(intent, Instruct) and intent.params["name"] == "cup of tea"


def test_the_gift_is_made_handed_over_and_remembered(eve: Story, embedder: Any, tmp_path: Path) -> None:
    s = Session(eve, NullBackend(), seed=0, save_dir=tmp_path)
    s.start()
    s.submit(Choose(choice_id="wait_on_stones"))
    s.submit(Choose(choice_id="knock"))
    reply = Channels(s, Resolver(eve, embedder)).say("give her a lantern")
    lines = [e.text for e in reply.events if e.kind == "line"]
    assert "You hold out a golden lantern." in lines
    assert any("lantern" in t and "shelf" in t for t in lines), lines  # Eve's on_give default answers
    assert s.state.chosen.get("came_for_light", 0) == 0  # the once-only choice is still there
    assert "came_for_light" in [c.id for c in s.choices()]
    assert s.state.gifts["eve"] == ["lantern"]
    lantern = s.state.objects["lantern"]
    assert lantern["name"] == "lantern" and lantern["owner"] == "eve"
    assert lantern["rests"] == "shelf" and lantern["on"] == ""  # set on the shelf, as her line says


def test_a_scene_that_allows_no_new_things_refuses_the_gift(eve: Story, tmp_path: Path) -> None:
    story = load_story(ROOT / "stories" / "eve")
    kitchen = story.model.scenes["kitchen"]
    story.model.scenes["kitchen"] = kitchen.model_copy(update={"allow_edits": ["weather"]})
    s = Session(story, NullBackend(), seed=0, save_dir=tmp_path)
    s.start()
    s.submit(Choose(choice_id="knock"))
    before = s.state.to_json()
    events = s.submit(Instruct(edit="give_object", params={"name": "lantern", "character": "eve"},
                               text="give her a lantern")).events
    refused = [e for e in events if e.data.get("refused")]
    assert refused and refused[0].data["why"] == "not_allowed"
    assert s.state.to_json()["objects"] == before["objects"] and s.state.gifts == {}
