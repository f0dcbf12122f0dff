"""Reactions as motion: where a character is and how it is posed at each frame of a chunk.

:func:`pose` is a pure function of the state, the frame's index within the
request (reactions start when the request starts) and within the session
(breathing and blinking continue across requests). Offsets are in units of the
character's own height, so the same reaction reads the same at any frame size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from game.state.gamestate import REACTIONS

#: States drawn with their own motion (the reactions a story may name); anything else is drawn as ``idle``.
STATES = REACTIONS


@dataclass(frozen=True)
class Effect:
    """A small sprite near a character (sparkle, heart, z, drop, dust, question).

    Attributes:
        kind: effect sprite name.
        x: offset from the feet along the facing direction, in character heights.
        y: height above the feet, in character heights.
        size: in character heights.
        alpha: opacity 0..1.
    """

    kind: str
    x: float
    y: float
    size: float
    alpha: float


@dataclass(frozen=True)
class Pose:
    """A character's pose at one frame.

    Attributes:
        x: offset along the facing direction, in character heights.
        y: lift above the ground, in character heights.
        sx, sy: squash and stretch.
        head: head tilt, degrees.
        eyes: ``open``, ``closed`` or ``wide``.
        tint: ``""`` or ``dark``.
        toward: fraction of the way moved to the screen centre (the player).
        away: screen widths run away from the centre.
        flee: faces away from the centre instead of towards it.
        effects: small sprites around it.
    """

    x: float = 0.0
    y: float = 0.0
    sx: float = 1.0
    sy: float = 1.0
    head: float = 0.0
    eyes: str = "open"
    tint: str = ""
    toward: float = 0.0
    away: float = 0.0
    flee: bool = False
    effects: tuple[Effect, ...] = ()


def _smooth(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3.0 - 2.0 * t)


def _blinking(frame: int, phase: float, fps: float) -> bool:
    period = max(8, int(3.4 * fps))
    return (frame + int(phase * period)) % period < max(1, int(0.12 * fps))


def pose(state: str, local: int, frame: int, fps: float, phase: float) -> Pose:
    """The pose of a character in ``state``.

    Args:
        state: entity state; unknown states pose as ``idle``.
        local: frame index within the request (reactions start at 0).
        frame: frame index within the session (breathing, blinking).
        fps: frames per second.
        phase: the character's own phase in ``[0, 1)`` (so two characters differ).
    """
    s = local / fps
    now = frame / fps
    eyes = "closed" if _blinking(frame, phase, fps) else "open"
    breath = math.sin(2 * math.pi * (now / 2.4 + phase))
    if state == "leap":
        return _leap(s, phase, eyes)
    if state == "recoil":
        k = _smooth(s / 0.25)
        shake = (0.035 * math.exp(-2.0 * s) + 0.008) * math.sin(2 * math.pi * 14 * s)
        drops = tuple(
            Effect("drop", 0.2 + 0.1 * j, 0.95 - 0.5 * ((s * 0.9 + j * 0.5) % 1.0), 0.12,
                   max(0.0, 1.0 - ((s * 0.9 + j * 0.5) % 1.0)))
            for j in range(2)
        )
        return Pose(
            x=-0.28 * k + shake, sx=1.0 - 0.12 * k, sy=1.0 - 0.17 * k, head=-12.0 * k,
            eyes="wide", tint="dark", effects=drops,
        )
    if state == "nuzzle":
        hearts = []
        for j in range(3):
            age = (s * 0.8 + j / 3.0) % 1.0
            hearts.append(Effect("heart", 0.45 + 0.1 * math.sin(age * 6 + j), 0.85 + 0.6 * age,
                                 0.16, math.sin(math.pi * age)))
        return Pose(
            y=0.05 * abs(math.sin(2 * math.pi * 1.6 * s)), sx=1.0 + 0.02 * breath,
            sy=1.0 - 0.02 * breath, head=10.0 * math.sin(2 * math.pi * 0.8 * s),
            eyes="closed" if (s % 1.5) > 0.9 else eyes, toward=0.45 * _smooth(s / 1.2),
            effects=tuple(hearts),
        )
    if state == "tilt":
        k = _smooth(s / 0.35)
        mark = Effect("question", 0.35, 1.15 + 0.03 * math.sin(4 * s), 0.22, k)
        return Pose(head=22.0 * k + 3.0 * math.sin(2 * math.pi * 0.5 * s), eyes=eyes,
                    sy=1.0 + 0.015 * breath, effects=(mark,))
    if state == "sleep":
        zs = []
        for j in range(3):
            age = (now * 0.35 + j / 3.0) % 1.0
            zs.append(Effect("z", 0.3 + 0.25 * age, 0.75 + 0.6 * age, 0.1 + 0.1 * age,
                             math.sin(math.pi * age)))
        slow = math.sin(2 * math.pi * (now / 3.6 + phase))
        return Pose(sx=1.1 + 0.02 * slow, sy=0.8 + 0.03 * slow, head=-14.0, eyes="closed",
                    effects=tuple(zs))
    if state == "flee":
        dust = tuple(
            Effect("dust", -0.4 - 0.3 * ((s * 3 + j / 3) % 1.0), 0.05, 0.2,
                   1.0 - ((s * 3 + j / 3) % 1.0))
            for j in range(3)
        )
        return Pose(y=0.12 * abs(math.sin(2 * math.pi * 3 * s)), sx=1.08, sy=0.93, eyes="wide",
                    away=0.9 * s * s, flee=True, effects=dust)
    return Pose(sx=1.0 - 0.012 * breath, sy=1.0 + 0.025 * breath, eyes=eyes)


def _leap(s: float, phase: float, eyes: str) -> Pose:
    cycle = 0.9
    p = (s % cycle) / cycle
    y, sx, sy, head = 0.0, 1.0, 1.0, 0.0
    if p < 0.18:
        c = math.sin(p / 0.18 * math.pi)
        sx, sy = 1.0 + 0.18 * c, 1.0 - 0.22 * c
    elif p < 0.82:
        q = (p - 0.18) / 0.64
        y = 0.75 * 4.0 * q * (1.0 - q)
        vel = 1.0 - 2.0 * q
        sy, sx = 1.0 + 0.14 * abs(vel), 1.0 - 0.08 * abs(vel)
        head = -8.0 * vel
    else:
        c = math.sin((p - 0.82) / 0.18 * math.pi)
        sx, sy = 1.0 + 0.16 * c, 1.0 - 0.2 * c
    sparkles = []
    for j in range(5):
        ang = phase * 6.283 + j * 1.2566 + s * 1.5
        rad = 0.6 + 0.12 * math.sin(s * 4 + j)
        alpha = max(0.0, math.sin(s * 9 + j * 2.1))
        sparkles.append(Effect("sparkle", math.cos(ang) * rad * 0.9, y + 0.5 + math.sin(ang) * rad * 0.7,
                               0.17 + 0.06 * math.sin(s * 7 + j), alpha))
    return Pose(y=y, sx=sx, sy=sy, head=head, eyes=eyes, effects=tuple(sparkles))
