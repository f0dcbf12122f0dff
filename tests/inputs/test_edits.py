"""World edits: state, conditions, refusals in the world, locked things, unforeseen gifts,
and the procedural backend showing every edit (set WORLDLOOM_SHOTS=DIR to keep screenshots)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from game.session import Session
from game.state import AddReference, Choose, Give, Instruct
from game.story import load_story
from game.world.backends.null import NullBackend
from game.world.backends.procedural import ProceduralBackend
from game.world.director import Cause
from game.world.protocol import SessionStart

DATA = Path(__file__).parents[1] / "data"


def picture(path: Path) -> Path:
    im = Image.new("RGBA", (90, 120), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    d.rectangle((6, 6, 84, 114), fill=(40, 110, 230, 255), outline=(255, 255, 255, 255), width=5)
    d.ellipse((22, 30, 68, 76), fill=(250, 215, 40, 255))
    im.save(path)
    return path


@pytest.fixture
def listen(tmp_path: Path) -> Session:
    s = Session(load_story(DATA / "listen"), NullBackend(), seed=2, save_dir=tmp_path)
    s.start()
    return s


def edit(s: Session, kind: str, text: str = "", **params: str) -> list[str]:
    return [e.text for e in s.submit(Instruct(edit=kind, params=params, text=text)).events if e.kind == "line"]


def test_weather_lives_in_the_state_reaches_conditions_and_the_backend(listen: Session) -> None:
    assert "listen_rain" not in [c.id for c in listen.choices()]
    lines = edit(listen, "weather", "make it rain", value="rain")
    assert lines == ["Clouds close over, and rain begins to fall."]
    assert listen.state.world["weather"] == "rain"
    assert "listen_rain" in [c.id for c in listen.choices()]  # a story condition reads weather == 'rain'
    req = listen.pending
    assert req is not None and req.scene.weather == "rain" and "rain" in req.prompt
    assert req.event == "edit" and req.switch_mode == "recache"
    assert edit(listen, "weather", value="rain") == ["It is already raining here."]


def test_refused_and_impossible_edits_answer_in_the_world(listen: Session) -> None:
    listen.submit(Choose(choice_id="go_cave"))
    before = listen.state.to_json()
    assert edit(listen, "weather", "make it snow", value="snow") == ["No weather reaches in here."]
    assert edit(listen, "time_of_day", value="day") == ["Time will not hurry here; it stays night."]
    assert edit(listen, "look", character="creature", wear="scarf") == ["The creature will not be dressed up here."]
    after = listen.state.to_json()
    for key in ("world", "objects", "looks"):
        assert after[key] == before[key]
    refused = [e for e in listen.log.since(0) if e.data.get("refused")]
    assert [e.data["why"] for e in refused] == ["not_allowed"] * 3
    assert edit(listen, "light", value="lantern") == ["A warm lantern glow settles over everything."]
    assert listen.pending is not None and "lantern glow" in listen.pending.prompt


def test_locked_things_refuse_with_a_line(listen: Session) -> None:
    assert edit(listen, "change_object", target="stone", colour="blue") == ["The grey stone stays just as it is."]
    assert edit(listen, "look", character="owl", wear="hat") == ["The owl shakes it off; it will not wear that."]
    assert edit(listen, "remove_object", target="creature") == ["The creature stays where it is."]
    assert edit(listen, "remove_object", target="kite") == ["You are holding the red kite; it stays with you."]
    assert listen.state.looks == {} and listen.state.objects == {}
    assert edit(listen, "change_object", target="kite", colour="green") == ["The red kite is green now."]
    assert edit(listen, "remove_object", target="shell") == ["The pink shell is gone."]
    ids = [e.id for e in listen.pending.scene.entities]  # type: ignore[union-attr]
    assert "shell" not in ids


def test_objects_and_looks_become_entities_and_follow_their_wearer(listen: Session) -> None:
    assert edit(listen, "add_object", name="lantern", relation="near", near="creature") == \
        ["A golden lantern is there now by the creature."]
    edit(listen, "look", character="creature", wear="scarf", colour="blue")
    req = listen.pending
    assert req is not None
    ent = {e.id: e for e in req.scene.entities}
    assert ent["lantern"].kind == "object" and abs(ent["lantern"].x - 0.62) == pytest.approx(0.13)
    assert "creature_scarf" in ent["creature"].holding and ent["creature_scarf"].look == "a blue scarf"
    assert "wears a blue scarf" in req.prompt
    listen.submit(Choose(choice_id="go_cave"))
    ent = {e.id: e for e in listen.pending.scene.entities}  # type: ignore[union-attr]
    assert "creature_scarf" in ent and "lantern" not in ent  # the scarf goes with it; the lantern stays put
    assert edit(listen, "look", character="creature", wear="scarf", colour="red") == \
        ["The creature will not be dressed up here."]  # the cave allows only light and new things
    listen.submit(Choose(choice_id="back"))
    assert edit(listen, "look", character="creature", wear="scarf", colour="red") == \
        ["The creature now wears a red scarf."]
    assert listen.state.objects["creature_scarf"]["look"] == "a red scarf"


def test_unforeseen_gifts_go_through_on_give_and_are_remembered(listen: Session, tmp_path: Path) -> None:
    img = picture(tmp_path / "drawing.png")
    events = listen.submit(AddReference(path=str(img), entity_id="creature")).events
    texts = [e.text for e in events if e.kind == "line"]
    assert texts[-1] == "It sniffs the picture, and keeps it."
    assert listen.state.gifts["creature"] == ["picture"] and listen.state.objects["picture"]["on"] == "creature"
    assert listen.state.relationship("creature", "trust") == 1.0  # the default's effects ran
    # an item given to the wrong character: the owl hands it back, and that is remembered too
    owl = [e.text for e in listen.submit(Give(item_id="stone", character_id="owl")).events if e.kind == "line"]
    assert owl == ["The owl blinks at the grey stone and hands it back."]
    assert "stone" in listen.state.inventory and listen.state.gifts["owl"] == ["stone"]
    cave = listen.submit(Choose(choice_id="go_cave")).events
    ids = [e.ids.get("line") for e in cave if e.kind == "line"]
    assert "cave_picture" in ids and "cave_stone" in ids  # a later scene mentions both


def test_a_bad_dropped_file_is_answered_in_the_world_and_never_sent(listen: Session, tmp_path: Path) -> None:
    (tmp_path / "notes.png").write_text("not a picture")
    result = listen.submit(AddReference(path=str(tmp_path / "notes.png")))
    line = [e for e in result.events if e.kind == "line"]
    assert line and line[0].text.startswith("The picture will not come into focus")
    assert line[0].data["why"] == "bad_image" and listen.state.objects == {}
    assert result.request is not None and result.request.references == ()


def test_edits_survive_a_save_and_roll_back(listen: Session) -> None:
    edit(listen, "time_of_day", value="night")
    edit(listen, "add_object", name="lantern")
    listen.save("s1")
    edit(listen, "weather", value="fog")
    listen.rollback()
    assert listen.state.world.get("weather") is None
    listen.load("s1")
    assert listen.state.world["time_of_day"] == "night" and "lantern" in listen.state.objects


def render(s: Session, tag: str, size: tuple[int, int] = (320, 180)) -> np.ndarray:
    """Frame 0 of the current state, drawn by a fresh procedural backend (same seed, no fade)."""
    req = s.director.build(s.state, [], Cause("idle"))
    req = dataclasses.replace(req, switch_mode=None, references=(), seq=1)
    b = ProceduralBackend(width=size[0], height=size[1], frames_per_block=12)
    b.start(SessionStart("main", 5, "p"))
    frame = next(iter(b.generate(req))).frames[6]
    shots = os.environ.get("WORLDLOOM_SHOTS")
    if shots:  # pictures to look at, only when asked for
        Image.fromarray(frame).save(Path(shots) / f"wl_edits_{tag}.png")
    return frame


def test_the_procedural_backend_shows_every_edit(tmp_path: Path) -> None:
    s = Session(load_story(DATA / "mini"), NullBackend(), seed=5, save_dir=tmp_path)
    s.start()
    base = render(s, "0_base").astype(np.int16)

    def changed(frame: np.ndarray) -> np.ndarray:
        return np.abs(frame.astype(np.int16) - base).max(axis=2) > 24

    edit(s, "weather", value="rain")
    rain = changed(render(s, "1_rain"))
    assert rain.mean() > 0.5  # the whole picture: grey sky, rain streaks
    base = render(s, "1_rain").astype(np.int16)
    edit(s, "time_of_day", value="night")
    night = render(s, "2_night")
    assert changed(night).mean() > 0.5 and night.mean() < base.mean() - 15  # darker everywhere
    base = night.astype(np.int16)
    edit(s, "add_object", name="lantern", relation="near", near="creature")
    lantern = changed(render(s, "3_lantern"))
    assert 0.0005 < lantern.mean() < 0.05  # a small thing appeared, the rest is untouched
    base = render(s, "3_lantern").astype(np.int16)
    edit(s, "look", character="creature", wear="scarf", colour="blue")
    scarf = render(s, "4_scarf")
    where = changed(scarf)
    assert 0.0003 < where.mean() < 0.05
    ys, xs = np.nonzero(where)
    blue = scarf[ys, xs].astype(np.int16)
    assert (blue[:, 2] - blue[:, 0]).mean() > 10  # what appeared is bluish
    base = scarf.astype(np.int16)
    s.submit(AddReference(path=str(picture(tmp_path / "dropped.png"))))
    dropped = render(s, "5_image")
    where = changed(dropped)
    assert 0.001 < where.mean() < 0.08
    ys, xs = np.nonzero(where)
    assert dropped[ys, xs, 2].mean() > dropped[ys, xs, 0].mean()  # the blue picture, as a sprite
