"""Characters as figures (poses, faces, clothes from the look) and world edits on screen.

Each supported edit of the Zero Mark demo ("turn the creature blue", "it wears a
scarf", "light a campfire", "make it rain", "make it night") is applied through the
session, drawn by the procedural backend, and the frame region of its target
(found in the painter's layout record) must change the expected way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from game.session import Session
from game.state import Instruct
from game.world.backends.figures import EXPRESSIONS, POSES, face_for, outfit, person, pose_for
from game.world.backends.layout import Layout
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest

W, H = 320, 180
EVE = "a tall woman in a navy oilskin coat and a red knitted scarf, a copper-red braid over one shoulder"


def test_clothes_come_from_the_look() -> None:
    o = outfit(EVE, (1.0, 2.0, 3.0))
    assert o.coat == (44, 58, 96) and o.scarf == (204, 80, 70) and o.braid
    assert o.hair[0] > o.hair[2]  # copper
    assert outfit("now blue: " + EVE, (0.0, 0.0, 0.0)).coat == (92, 132, 204)
    assert outfit("a hooded traveller", (1.0, 2.0, 3.0)).coat == (1.0, 2.0, 3.0)


def test_every_face_and_pose_draws_differently() -> None:
    o = outfit(EVE, (100.0, 100.0, 100.0))
    faces = {f: person(120, o, f).rgb.tobytes() for f in EXPRESSIONS}
    assert len(set(faces.values())) == len(EXPRESSIONS)
    poses = {p: person(120, o, "neutral", p).alpha.tobytes() for p in POSES}
    assert len(set(poses.values())) == len(POSES)


def test_faces_follow_reactions_then_the_relationship() -> None:
    assert face_for("recoil", "warm") == "surprised"
    assert face_for("sleep", "") == "sleeping"
    assert face_for("idle", "warm") == "smile" and face_for("idle", "wary") == "frown"
    assert face_for("idle", "guarded") == "neutral"  # a stranger is met with a plain face, not a frown
    assert face_for("idle", "hurt") == "sad" and face_for("idle", "puzzling") == "neutral"
    assert pose_for("sleep", "", False) == "sit" and pose_for("idle", "", True) == "hold"
    assert pose_for("idle", "give", True) == "give"


def draw(entity: Entity, setting: str = "") -> tuple[np.ndarray, Layout]:
    b = ProceduralBackend(width=W, height=H)
    b.start(SessionStart("s", 1, "p"))
    scene = Scene("meadow", palette="day", time_of_day="day", entities=(entity,), setting=setting)
    chunk = next(iter(b.generate(WorldRequest("s", 1, 12, "p", scene=scene))))
    assert b.layout is not None
    return chunk.frames[0], b.layout


def region(frame: np.ndarray, layout: Layout, name: str) -> np.ndarray:
    part = layout.get(name)
    assert part is not None and part.visible, name
    x0, y0, x1, y1 = part.box
    return frame[max(0, y0):y1, max(0, x0):x1].astype(np.int16)


def test_a_person_is_a_figure_in_her_clothes_not_a_card(tmp_path: Path) -> None:
    from PIL import Image

    card = tmp_path / "card.png"
    Image.new("RGB", (128, 192), (250, 0, 250)).save(card)  # an opaque portrait card
    eve = Entity("eve", "character", "Eve", look=EVE, image=str(card), x=0.5, expression="warm")
    frame, layout = draw(eve)
    px = region(frame, layout, "eve")
    magenta = (px[..., 0] > 230) & (px[..., 1] < 30) & (px[..., 2] > 230)
    assert magenta.mean() < 0.01  # the card is not pasted
    navy = (np.abs(px - np.array((44, 58, 96))).max(axis=2) < 40).mean()
    assert navy > 0.15  # her coat


def test_the_face_changes_with_the_relationship() -> None:
    warm = Entity("eve", "character", "Eve", look=EVE, x=0.5, expression="warm")
    cold = dataclasses.replace(warm, expression="wary")
    f1, l1 = draw(warm)
    f2, l2 = draw(cold)
    assert l1.get("eve") == l2.get("eve")
    a, b = region(f1, l1, "eve"), region(f2, l2, "eve")
    head = slice(0, a.shape[0] // 4)
    assert np.abs(a[head] - b[head]).max() > 40  # the face, not the coat, changed
    assert np.abs(a[a.shape[0] // 2 :] - b[b.shape[0] // 2 :]).max() < 8


#: The ``still`` fixture: frame ``i`` of the session's current state and its layout.
Still = Callable[[Session, int], tuple[np.ndarray, Layout]]


def edit(s: Session, kind: str, **params: str) -> None:
    lines = [e for e in s.submit(Instruct(edit=kind, params=params)).events if e.kind == "edit"]
    assert lines, f"edit {kind} {params} was not applied"


def test_turning_the_creature_blue_turns_its_figure_blue(zero_mark: Session, still: Still) -> None:
    before = region(*still(zero_mark, 0), "creature")
    edit(zero_mark, "change_object", target="creature", colour="blue")
    after = region(*still(zero_mark, 0), "creature")
    assert before.shape == after.shape
    blueness = lambda px: float((px[..., 2] - px[..., 0]).mean())  # noqa: E731
    assert blueness(after) > blueness(before) + 12


def test_a_scarf_appears_on_the_creature(zero_mark: Session, still: Still) -> None:
    frame0, layout0 = still(zero_mark, 0)
    edit(zero_mark, "look", character="creature", wear="scarf", colour="red")
    frame1, layout1 = still(zero_mark, 0)
    scarf = next(p for p in layout1.parts if p.kind == "object" and "scarf" in p.name)
    assert scarf.visible
    x0, y0, x1, y1 = scarf.box
    where = np.abs(frame1[y0:y1, x0:x1].astype(np.int16) - frame0[y0:y1, x0:x1]).max(axis=2) > 30
    assert where.mean() > 0.2
    red = frame1[y0:y1, x0:x1][where].astype(np.int16)
    assert (red[:, 0] - red[:, 2]).mean() > 30


def test_lighting_a_campfire_adds_a_fire_that_smokes_and_lights_the_ground(zero_mark: Session, still: Still) -> None:
    frame0, _ = still(zero_mark, 0)
    edit(zero_mark, "add_object", name="campfire")
    frame1, layout1 = still(zero_mark, 0)
    fire = next(p for p in layout1.parts if p.name.startswith("campfire"))
    assert fire.visible
    x0, y0, x1, y1 = fire.box
    warm = frame1[y0:y1, x0:x1].astype(np.int16)
    assert (warm[..., 0] - warm[..., 2]).mean() > (frame0[y0:y1, x0:x1, 0].astype(np.int16)
                                                   - frame0[y0:y1, x0:x1, 2]).mean() + 20
    above = slice(max(0, y0 - (y1 - y0)), y0)  # smoke and firelight above the flames
    assert np.abs(frame1[above, x0:x1].astype(np.int16) - frame0[above, x0:x1]).max() > 20


def test_rain_and_night_change_the_whole_picture(zero_mark: Session, still: Still) -> None:
    frame0, _ = still(zero_mark, 0)
    edit(zero_mark, "weather", value="rain")
    rain, _ = still(zero_mark, 0)
    assert (np.abs(rain.astype(np.int16) - frame0).max(axis=2) > 20).mean() > 0.5
    edit(zero_mark, "time_of_day", value="night")
    night, layout = still(zero_mark, 0)
    assert night.mean() < rain.mean() - 15
    assert {"stump", "creature"} <= layout.visible()  # the place is still the place
