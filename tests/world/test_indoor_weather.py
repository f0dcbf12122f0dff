"""Weather typed in a room changes the weather outside its windows, and says so.

A newcomer typed "make it rain" in Eve's kitchen and read "Clouds close over, and rain begins
to fall." with ", rain" in the prompt: rain in the kitchen. A room's weather is outside: the
line says where it is seen, and the prompt says "rain outside the windows".
"""

from __future__ import annotations

from pathlib import Path

from game.session import Session
from game.state import Choose, Instruct
from game.story import load_story
from game.story.story import Story
from game.world.backends.null import NullBackend
from game.world.director import indoors

ROOT = Path(__file__).parents[2]


def _eve(tmp_path: Path, story: Story | None = None) -> Session:
    s = Session(story or load_story(ROOT / "stories" / "eve"), NullBackend(), seed=0, save_dir=tmp_path)
    s.start()
    return s


def _rain(s: Session) -> list[str]:
    events = s.submit(Instruct(edit="weather", params={"value": "rain"}, text="make it rain")).events
    return [e.text for e in events if e.kind == "line"]


def test_rain_in_the_kitchen_falls_outside_the_windows(tmp_path: Path) -> None:
    s = _eve(tmp_path)
    s.submit(Choose(choice_id="knock"))
    assert s.state.location == "kitchen"
    assert _rain(s) == ["Outside, clouds close over; rain begins to run down the windows."]
    assert s.state.world["weather"] == "rain"  # the world's weather: it rains when you go out
    req = s.pending
    assert req is not None and "rain outside the windows" in req.prompt
    assert _rain(s) == ["It is already raining outside."]


def test_rain_outdoors_still_falls(tmp_path: Path) -> None:
    s = _eve(tmp_path)
    assert s.state.location == "spine"
    assert _rain(s) == ["Clouds close over, and rain begins to fall."]
    req = s.pending
    assert req is not None and ", rain" in req.prompt and "outside the windows" not in req.prompt


def test_rooms_are_read_from_their_words_and_an_author_may_say_otherwise(tmp_path: Path) -> None:
    eve = load_story(ROOT / "stories" / "eve")
    rooms = {k for k in eve.model.locations if indoors(eve, k)}
    assert rooms == {"kitchen", "watchroom", "glasshouse", "lantern"}
    gull = load_story(ROOT / "stories" / "gullhaven")
    assert {k for k in gull.model.locations if indoors(gull, k)} == {"net_shed", "inn"}
    zm = load_story(ROOT / "stories" / "zero_mark")
    assert not any(indoors(zm, k) for k in zm.model.locations)
    kitchen = eve.model.locations["kitchen"]
    eve.model.locations["kitchen"] = kitchen.model_copy(update={"indoors": False})
    s = _eve(tmp_path, eve)
    s.submit(Choose(choice_id="knock"))
    assert _rain(s) == ["Clouds close over, and rain begins to fall."]
