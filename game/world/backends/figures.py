"""People as full figures: clothes read from the look, poses and expressions.

:func:`person` draws a standing (or sitting, walking, holding, giving) person
facing right, with a face that shows one of :data:`EXPRESSIONS`. What they wear
comes from their look text by :func:`outfit`: "a tall woman in a navy oilskin coat
and a red knitted scarf, a copper-red braid over one shoulder" gives a navy coat,
a red scarf and a copper braid. :func:`face_for` turns a reaction state and a
relationship expression name (a card's ``warm``, ``guarded``...) into one of the
six faces; :func:`pose_for` picks the body pose. Heights are frame pixels.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from game.story.art import EXPRESSIONS, POSES
from game.world.backends.raster import RGB
from game.world.backends.raster import lerp_rgb as _mix
from game.world.backends.sprites import COLOUR_WORDS, DARK_TINT, Pen, Sprite

#: Relationship expression words (a card's names) -> face. ``guarded`` (how a card's person meets a
#: stranger: trust not yet earned) keeps a plain face; a frown is for ``wary`` and worse.
FACE_WORDS: dict[str, str] = {
    "delighted": "smile", "warm": "smile", "happy": "smile", "fond": "smile", "glad": "smile",
    "joyful": "smile", "amused": "smile", "content": "smile", "pleased": "smile",
    "hurt": "sad", "sad": "sad", "grieving": "sad", "lonely": "sad", "sorry": "sad",
    "wary": "frown", "angry": "frown", "cross": "frown", "annoyed": "frown",
    "suspicious": "frown", "cold": "frown", "guarded": "neutral",
    "curious": "surprised", "surprised": "surprised", "startled": "surprised", "amazed": "surprised",
    "afraid": "surprised", "asleep": "sleeping", "sleeping": "sleeping", "tired": "sleeping",
}
#: Reaction states -> face (a reaction wins over the relationship while it lasts).
REACTION_FACES: dict[str, str] = {
    "leap": "smile", "nuzzle": "smile", "recoil": "surprised", "flee": "surprised", "sleep": "sleeping",
    "tilt": "surprised",
}
#: Extra colour words people's clothes use.
CLOTH_WORDS: dict[str, RGB] = {
    "navy": (44, 58, 96), "copper": (184, 96, 52), "auburn": (150, 70, 40), "ginger": (200, 110, 50),
    "blonde": (226, 200, 130), "fair": (226, 200, 130), "dark": (52, 44, 40), "tan": (190, 150, 100),
    "cream": (232, 222, 196), "oilskin": (196, 160, 60), "wool": (150, 130, 110),
}
_GARMENTS = ("coat", "cloak", "dress", "jacket", "oilskin", "jumper", "sweater", "shirt", "gown", "robe",
             "overalls", "smock")
_HAIR = ("braid", "hair", "plait", "curls", "ponytail")


@dataclass(frozen=True)
class Outfit:
    """What a person wears: coat, scarf (or ``None``), hair colours and whether the hair is braided,
    and the colour of a beard (``None``: clean-shaven)."""

    coat: RGB
    scarf: RGB | None
    hair: RGB
    braid: bool
    skin: RGB = (238, 204, 176)
    beard: RGB | None = None


def _colour_before(words: list[str], index: int) -> RGB | None:
    """The colour named in the three words before ``words[index]``, nearest first."""
    for w in reversed(words[max(0, index - 3) : index]):
        for part in w.split("-"):
            found = COLOUR_WORDS.get(part) or CLOTH_WORDS.get(part)
            if found is not None and part != "oilskin":
                return found
    return None


@functools.lru_cache(maxsize=256)
def outfit(look: str, fallback: RGB) -> Outfit:
    """Read clothes from a look text (see the module doc); ``fallback`` colours the coat when none is named.

    An edited look ("now blue: ...") recolours the coat.
    """
    low = look.lower()
    edit = re.match(r"now ([a-z -]+):", low)
    words = re.findall(r"[a-z]+(?:-[a-z]+)?", low)
    coat = scarf = hair = beard = None
    braid = False
    for k, w in enumerate(words):
        if coat is None and w in _GARMENTS:
            coat = _colour_before(words, k) or (CLOTH_WORDS["oilskin"] if w == "oilskin" else None)
        if scarf is None and w in ("scarf", "shawl", "muffler"):
            scarf = _colour_before(words, k) or (200.0, 48.0, 52.0)
        if hair is None and w in _HAIR:
            hair = _colour_before(words, k)
            braid = braid or w in ("braid", "plait")
        if beard is None and w in ("beard", "bearded", "whiskers", "whiskered"):
            beard = _colour_before(words, k) or hair or (118, 94, 74)
    if edit:
        named = COLOUR_WORDS.get(edit.group(1).split()[-1])
        coat = named or coat
    return Outfit(coat=coat or fallback, scarf=scarf, hair=hair or (92, 64, 44), braid=braid, beard=beard)


def beard_box(pose: str) -> tuple[float, float, float, float]:
    """Where :func:`person` draws a beard, in its box's units (heights; box 0.8 x 1.1), for ``pose``."""
    cx, cy = 0.41, 0.3 + 0.1 + {"sit": 0.28, "lie": 0.5}.get(pose, 0.0) - 0.13
    return (cx - 0.085, cy - 0.01, cx + 0.09, cy + 0.125)


def face_for(state: str, expression: str) -> str:
    """The face for a reaction ``state`` and a relationship ``expression`` name (see the tables)."""
    if state in REACTION_FACES:
        return REACTION_FACES[state]
    if expression in EXPRESSIONS:
        return expression
    return FACE_WORDS.get(expression.lower(), "neutral")


def pose_for(state: str, asked: str, holding: bool) -> str:
    """The body pose: the one asked for (the director's ``give``...), else from the reaction and hands."""
    if asked in POSES:
        return asked
    if state == "leap":
        return "leap"
    if state == "sleep":
        return "sit"
    if state == "flee":
        return "walk"
    return "hold" if holding else "stand"


def person(height: int, dress: Outfit, face: str = "neutral", pose: str = "stand", step: int = 0,
           tint: str = "", blink: bool = False) -> Sprite:
    """A person facing right, ``height`` px tall standing (box 0.8 x 1.1 heights).

    Args:
        height: standing height in frame pixels (a sitting figure is lower in the same box).
        dress: clothes and hair (:func:`outfit`).
        face: one of :data:`EXPRESSIONS`.
        pose: one of :data:`POSES`; ``step`` (0/1) alternates the legs of ``walk``.
        tint: ``""`` or ``"dark"`` (shrinking back).
        blink: eyes shut for this frame.
    """
    top = 0.1
    pen = Pen(height, 0.8, 1.0 + top)
    coat, line = dress.coat, _mix(dress.coat, (14, 12, 20), 0.6)
    boots = (46, 38, 36)
    drop = {"sit": 0.28, "lie": 0.5}.get(pose, 0.0)  # a sitting (lying) figure's hips are lower
    hip = 0.62 + top + drop
    if pose in ("sit", "lie"):
        pen.polygon(((0.28, hip - 0.02), (0.62, hip - 0.02), (0.62, hip + 0.08), (0.28, hip + 0.08)), coat, line, 0.01)
        pen.line(((0.6, hip + 0.06), (0.66, 1.0 + top)), _mix(coat, (0, 0, 0), 0.3), 0.07)
        pen.ellipse((0.6, 0.96 + top, 0.76, 1.02 + top), boots)
    else:
        feet = {"walk": ((0.2, 0.6), (0.3, 0.5))[step % 2], "leap": (0.16, 0.64)}.get(pose, (0.34, 0.46))
        for x_top, x_foot in ((0.34, feet[0]), (0.44, feet[1])):
            pen.line(((x_top, hip), (x_foot, 0.97 + top)), _mix(coat, (0, 0, 0), 0.35), 0.07)
            pen.ellipse((x_foot - 0.06, 0.95 + top, x_foot + 0.08, 1.0 + top), boots)
    body_top = 0.3 + top + drop
    pen.polygon(((0.22, hip + 0.08 - drop * 0.3), (0.56, hip + 0.08 - drop * 0.3), (0.52, body_top),
                 (0.26, body_top)), coat, line, 0.012)  # the coat
    pen.line(((0.39, body_top + 0.04), (0.39, hip)), line, 0.008)
    for k in range(3):
        pen.circle(0.41, body_top + 0.08 + 0.09 * k, 0.008, _mix(coat, (230, 210, 150), 0.7))
    if dress.braid:  # the braid over one shoulder
        pen.line(((0.33, body_top - 0.04), (0.3, body_top + 0.08), (0.32, body_top + 0.22)), dress.hair, 0.045)
        for k in range(4):
            y = body_top + 0.02 + 0.055 * k
            pen.line(((0.29, y), (0.34, y + 0.02)), _mix(dress.hair, (0, 0, 0), 0.3), 0.01)
    if dress.scarf is not None:
        sc = dress.scarf
        pen.polygon(((0.25, body_top - 0.02), (0.53, body_top - 0.02), (0.5, body_top + 0.05),
                     (0.28, body_top + 0.05)), sc, _mix(sc, (0, 0, 0), 0.4), 0.008)
        pen.polygon(((0.44, body_top + 0.03), (0.5, body_top + 0.03), (0.49, body_top + 0.2),
                     (0.43, body_top + 0.19)), _mix(sc, (0, 0, 0), 0.15))
    # The near arm, by pose; ``hand`` is where held things go.
    shoulder = (0.46, body_top + 0.05)
    arm: tuple[tuple[float, float], ...]
    if pose == "give":
        hand = (0.76, body_top + 0.12)
        arm = (shoulder, (0.62, body_top + 0.12), hand)
    elif pose == "hold":
        hand = (0.62, body_top + 0.2)
        arm = (shoulder, (0.56, body_top + 0.22), hand)
    elif pose == "leap":  # an arm flung up
        hand = (0.62, body_top - 0.12)
        arm = (shoulder, (0.56, body_top - 0.02), hand)
    elif pose == "walk":
        hand = (0.6 if step % 2 == 0 else 0.24, body_top + 0.28)
        arm = (shoulder, hand)
    else:
        hand = (0.5, body_top + 0.32)
        arm = (shoulder, (0.5, body_top + 0.2), hand)
    pen.line(arm, _mix(coat, (0, 0, 0), 0.15), 0.055)
    pen.circle(hand[0], hand[1], 0.03, dress.skin)
    # The head.
    head = pen.layer()
    cx, cy = 0.41, body_top - 0.13
    head.circle(cx - 0.02, cy - 0.02, 0.115, dress.hair)
    head.circle(cx, cy + 0.005, 0.095, dress.skin)
    head.polygon(((cx - 0.12, cy - 0.02), (cx - 0.04, cy - 0.12), (cx + 0.09, cy - 0.09),
                  (cx + 0.1, cy - 0.04), (cx - 0.02, cy - 0.05)), dress.hair)  # fringe
    if dress.beard is not None:  # a full beard round the jaw and chin, the mouth showing through
        head.polygon(((cx - 0.085, cy - 0.01), (cx - 0.055, cy + 0.03), (cx + 0.09, cy + 0.03),
                      (cx + 0.085, cy + 0.075), (cx + 0.04, cy + 0.125), (cx - 0.02, cy + 0.12),
                      (cx - 0.08, cy + 0.06)), dress.beard)
    _face(head, cx, cy, face, blink)
    pen.paste_rotated(head, 0.0, (cx, cy))
    return pen.finish(foot=(0.41, 1.0 + top), hold=hand, tint=DARK_TINT if tint == "dark" else None, light=0.16)


def _face(pen: Pen, cx: float, cy: float, face: str, blink: bool) -> None:
    """Eyes, brows and mouth for ``face`` on a head centred at ``(cx, cy)`` (facing right)."""
    ink, lip = (40, 30, 30), (150, 64, 64)
    ey = cy - 0.005
    for ex in (cx + 0.01, cx + 0.06):
        if face == "sleeping" or blink:
            pen.arc((ex - 0.016, ey - 0.01, ex + 0.016, ey + 0.012), 20, 160, ink, 0.008)
        elif face == "surprised":
            pen.circle(ex, ey, 0.017, (250, 250, 246))
            pen.circle(ex + 0.003, ey, 0.009, ink)
        else:
            pen.circle(ex, ey, 0.012, ink)
        if face == "frown":
            pen.line(((ex - 0.02, ey - 0.035), (ex + 0.015, ey - 0.025)), ink, 0.007)
        elif face == "sad":
            pen.line(((ex - 0.02, ey - 0.025), (ex + 0.015, ey - 0.036)), ink, 0.007)
        elif face == "surprised":
            pen.arc((ex - 0.02, ey - 0.05, ex + 0.02, ey - 0.02), 200, 340, ink, 0.007)
    mx, my = cx + 0.035, cy + 0.05
    if face == "smile":
        pen.arc((mx - 0.03, my - 0.025, mx + 0.03, my + 0.015), 20, 160, lip, 0.01)
    elif face in ("frown", "sad"):
        pen.arc((mx - 0.026, my - 0.0, mx + 0.026, my + 0.03), 200, 340, lip, 0.01)
    elif face == "surprised":
        pen.ellipse((mx - 0.012, my - 0.012, mx + 0.012, my + 0.018), (90, 40, 44))
    else:
        pen.line(((mx - 0.018, my), (mx + 0.018, my)), lip, 0.008)
