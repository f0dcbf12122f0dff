"""Relationships: numeric axes in ``GameState.relationships``, moved by words and deeds.

Each axis (``trust``, ``affinity``, and any the card adds, e.g. ``curiosity``) is a
float in ``GameState.relationships[character][axis]``, so story conditions read it
(``trust('eve') >= 3``, ``rel('eve', 'curiosity') > 2``) and saves keep it. It moves:

- **by what the player says to her**: the line's intent
  (:class:`~game.cast.appraisal.Appraiser`: apology, thanks, compliment, insult, threat,
  gift, question, other; MiniLM over a committed labelled set, VADER only to break a
  tie); each axis changes by ``axis.tone * EFFECTS[intent] * tone_scale``; a question
  (``?``) adds ``axis.question``. What an insult or a threat took is *owed*
  (``GameState.relationships[id]["owed.<axis>"]``, so saves and rollbacks keep it); an
  apology repays :data:`REPAY` of it at once on top of its own effect, so trust comes
  back toward where it was (the debt shrinks by :data:`OWED_DECAY` a turn: an apology
  long after counts for less);
- **by what the player gives her**: the card's ``gifts`` table, by item id, then by
  the item's tags, else ``default`` (her own taste; the story's ``on_give`` effects
  apply as authored, on top);
- **by choices**: the story's effects already do it (``trust('eve') += 1``);
- **back toward the baseline every turn**, exponentially:
  ``v <- baseline + (v - baseline) * (1 - axis.decay)`` (half-life
  ``ln 2 / -ln(1 - decay)`` turns: 0.01 -> 69 turns, 0.02 -> 34);

and is clamped to ``[axis.min, axis.max]``. The values map to an expression name
(first matching :class:`game.cast.card.ExpressionRule`, the card's or
:data:`DEFAULT_EXPRESSIONS`) and a voice style (the card's rate and pitch plus the
rule's offsets), sent on with every change.

:class:`RelationshipHook` plugs this into a :class:`game.session.Session` turn
(a step of the session's turn: ``Session(steps=[RelationshipHook(card)])``) and emits ``effect`` events.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from game.cast.appraisal import EFFECTS, HOSTILE, Appraisal, Appraiser, tone
from game.cast.card import Axis, CharacterCard, ExpressionRule
from game.state import Event, GameState
from game.story.host import TurnHost

#: VADER's neutral band: compound scores inside (-0.05, 0.05) move nothing.
NEUTRAL_BAND = 0.05
#: Share of what is owed that an apology gives back, and the share of the debt forgotten per turn.
REPAY = 0.8
OWED_DECAY = 0.15

#: Axes used when a card names none.
DEFAULT_AXES: dict[str, Axis] = {"trust": Axis(), "affinity": Axis()}

#: Expression rules used when a card names none (first match wins).
DEFAULT_EXPRESSIONS: tuple[ExpressionRule, ...] = (
    ExpressionRule(name="delighted", at_least={"affinity": 6.0, "trust": 4.0}, rate=15, pitch=8),
    ExpressionRule(name="hurt", below={"affinity": -4.0}, rate=-20, pitch=-6),
    ExpressionRule(name="wary", below={"trust": -2.0}, rate=-10, pitch=-4),
    ExpressionRule(name="warm", at_least={"affinity": 2.5}, rate=5, pitch=4),
    ExpressionRule(name="guarded", below={"trust": 1.0}, rate=-5, pitch=-2),
    ExpressionRule(name="neutral"),
)


@dataclass(frozen=True)
class VoiceStyle:
    """How she sounds now: the expression and absolute TTS settings (rate wpm, pitch 0-99)."""

    expression: str
    rate: int
    pitch: int
    volume: float

    def to_json(self) -> dict[str, Any]:
        return {"expression": self.expression, "rate": self.rate, "pitch": self.pitch, "volume": self.volume}


def expression_for(values: dict[str, float], rules: Iterable[ExpressionRule]) -> ExpressionRule:
    """The first rule whose ``at_least`` and ``below`` bounds all hold (an axis not set counts as 0)."""
    for rule in rules:
        if all(values.get(a, 0.0) >= v for a, v in rule.at_least.items()) and \
                all(values.get(a, 0.0) < v for a, v in rule.below.items()):
            return rule
    return ExpressionRule(name="neutral")


class Relationships:
    """One character's relationship rules, acting on a :class:`GameState`.

    Args:
        card: the character (axes, gifts, expressions, voice).
        tone_scale: multiplies every tone change (1.0 = the card's values).
        embedder: MiniLM-like encoder for the appraiser (default: the shared MiniLM).
        appraiser: the intent classifier (default ``Appraiser(embedder)``).
    """

    def __init__(self, card: CharacterCard, tone_scale: float = 1.0, embedder: Any = None,
                 appraiser: Appraiser | None = None) -> None:
        self.card = card
        self.appraiser = appraiser or Appraiser(embedder)
        self.id = card.id
        self.axes: dict[str, Axis] = dict(card.axes) or dict(DEFAULT_AXES)
        self.rules: tuple[ExpressionRule, ...] = card.expressions or DEFAULT_EXPRESSIONS
        self.tone_scale = tone_scale

    def ensure(self, state: GameState) -> None:
        """Give every axis missing from ``state`` its start value (values already there are kept)."""
        rel = state.relationships.setdefault(self.id, {})
        for name, axis in self.axes.items():
            rel.setdefault(name, axis.start)

    def values(self, state: GameState) -> dict[str, float]:
        """Current value of every axis (start values where unset)."""
        rel = state.relationships.get(self.id, {})
        return {name: float(rel.get(name, axis.start)) for name, axis in self.axes.items()}

    def set(self, state: GameState, axis: str, value: float) -> tuple[float, float]:
        """Set ``axis`` (clamped to its range); returns ``(old, new)``."""
        spec = self.axes.get(axis)
        rel = state.relationships.setdefault(self.id, {})
        old = float(rel.get(axis, spec.start if spec else 0.0))
        new = value if spec is None else min(spec.max, max(spec.min, value))
        rel[axis] = round(float(new), 6)
        return old, rel[axis]

    def change(self, state: GameState, deltas: dict[str, float]) -> dict[str, tuple[float, float]]:
        """Add ``deltas`` (clamped); returns ``axis -> (old, new)`` for the axes that moved."""
        out = {}
        for axis, delta in deltas.items():
            if delta == 0:
                continue
            old, new = self.set(state, axis, self.values(state).get(axis, 0.0) + delta)
            if new != old:
                out[axis] = (old, new)
        return out

    def appraise(self, text: str) -> Appraisal:
        """The intent of the player's line (:meth:`Appraiser.appraise`)."""
        return self.appraiser.appraise(text)

    def words_deltas(self, text: str, state: GameState | None = None,
                     appraisal: Appraisal | None = None) -> tuple[Appraisal, dict[str, float]]:
        """``(appraisal, axis -> change)`` for the player saying ``text`` to her.

        A farewell that thanks her (``Appraisal.thanked``) counts as thanks.
        With ``state``, an apology also repays :data:`REPAY` of what is owed on each axis,
        and an insult or threat adds what it takes to the debt (written into ``state``).
        """
        a = appraisal or self.appraise(text)
        # a goodbye that thanks her ("goodnight Eve. thanks for everything") warms her as the thanks does
        effect = EFFECTS["thanks"] if a.thanked else EFFECTS.get(a.intent, 0.0)
        rel = state.relationships.setdefault(self.id, {}) if state is not None else {}
        deltas: dict[str, float] = {}
        for name, axis in self.axes.items():
            d = axis.tone * effect * self.tone_scale
            if "?" in text:
                d += axis.question
            owed = float(rel.get(f"owed.{name}", 0.0))
            if a.intent == "apology" and owed > 0:
                d += owed * REPAY
                rel[f"owed.{name}"] = round(owed * (1 - REPAY), 6)
            elif a.intent in HOSTILE and d < 0 and state is not None:
                rel[f"owed.{name}"] = round(owed - d, 6)
            if d:
                deltas[name] = d
        return a, deltas

    def gift_deltas(self, item_id: str, tags: Iterable[str] = ()) -> dict[str, float]:
        """Axis changes for receiving ``item_id``: by id, else the first tag listed, else ``default``."""
        for key in (item_id, *tags, "default"):
            if key in self.card.gifts:
                return dict(self.card.gifts[key])
        return {}

    def decay(self, state: GameState, turns: int = 1) -> dict[str, tuple[float, float]]:
        """Move every axis toward its baseline by ``turns`` turns of exponential decay (and forget
        :data:`OWED_DECAY` of what is owed per turn)."""
        rel = state.relationships.get(self.id, {})
        for key in [k for k in rel if k.startswith("owed.")]:
            rel[key] = round(float(rel[key]) * (1 - OWED_DECAY) ** max(0, turns), 6)
        out = {}
        for name, axis in self.axes.items():
            v = self.values(state)[name]
            new = axis.baseline + (v - axis.baseline) * (1.0 - axis.decay) ** max(0, turns)
            old, new = self.set(state, name, new)
            if new != old:
                out[name] = (old, new)
        return out

    def half_life(self, axis: str) -> float:
        """Turns for the distance to the baseline to halve (``inf`` when the axis does not decay)."""
        d = self.axes[axis].decay
        return math.inf if d <= 0 else math.log(2) / -math.log(1 - d)

    def expression(self, state: GameState) -> str:
        """The expression name for the current values (``warm``, ``guarded``...)."""
        return expression_for(self.values(state), self.rules).name

    def voice_style(self, state: GameState) -> VoiceStyle:
        """Expression plus absolute TTS settings: the card's voice with the rule's offsets."""
        rule = expression_for(self.values(state), self.rules)
        v = self.card.voice
        return VoiceStyle(rule.name, min(500, max(60, v.rate + rule.rate)), min(99, max(0, v.pitch + rule.pitch)),
                          v.volume)

    def describe(self, state: GameState, player: str = "the player") -> str:
        """One line for her prompt: how she feels about the player now."""
        vals = self.values(state)
        parts = []
        for name, axis in self.axes.items():
            frac = (vals[name] - axis.min) / (axis.max - axis.min)
            word = ("very low" if frac < 0.2 else "low" if frac < 0.4 else "moderate" if frac < 0.6
                    else "high" if frac < 0.8 else "very high")
            parts.append(f"{name} {word} ({vals[name]:.1f} on {axis.min:g}..{axis.max:g})")
        return f"Toward {player}: " + ", ".join(parts) + f". You feel {self.expression(state)}."


class RelationshipHook:
    """A :class:`game.session.TurnHook`: applies the turn's words and gifts to her axes.

    Each turn it (1) gives missing axes their start values, (2) decays every axis
    toward its baseline, (3) applies the tone of ``say`` events from the player to
    her (``data.target`` is her id, or no target while she is present in the scene)
    and the card's gift table for ``give`` events to her, (4) emits one ``effect``
    event per axis that moved by words or gifts (``ids.target`` = ``trust(eve)`` as the
    story runtime names it; ``data``: ``old``, ``new``, ``cause`` (``tone``/``gift``),
    ``tone``, ``expression``, ``voice``) and one when the expression changes
    (``ids.target`` = ``expression(eve)``). Decay alone emits nothing unless
    ``emit_decay`` (the log stays small); the state always holds the current values.

    Args:
        card: her card.
        relationships: the rules (default ``Relationships(card)``).
        emit_decay: also emit an ``effect`` event (cause ``decay``) for decay steps.
    """

    def __init__(self, card: CharacterCard, relationships: Relationships | None = None,
                 emit_decay: bool = False) -> None:
        self.card = card
        self.rel = relationships or Relationships(card)
        self.emit_decay = emit_decay

    def _targeted(self, session: TurnHost, e: Event) -> bool:
        if e.kind != "say" or e.speaker != "player" or "unhandled" in e.data or not e.text.strip():
            return False
        target = str(e.data.get("target", ""))
        if target:
            return target == self.card.id
        scene = session.story.model.scenes.get(session.state.scene)
        return scene is not None and self.card.id in scene.present

    def _effect(self, state: GameState, axis: str, old: float, new: float, cause: str,
                extra: dict[str, Any] | None = None) -> Event:
        style = self.rel.voice_style(state)
        data: dict[str, Any] = {"old": old, "new": new, "cause": cause, "expression": style.expression,
                                "voice": style.to_json(), **(extra or {})}
        return Event(kind="effect", turn=state.turn, frame=state.frame, scene=state.scene,
                     ids={"target": f"{axis}({self.card.id})"}, data=data)

    def on_turn(self, session: TurnHost, intent: Any, events: list[Event]) -> list[Event]:
        """Apply this turn's words and gifts; return the ``effect`` events."""
        state = session.state
        self.rel.ensure(state)
        before = self.rel.expression(state)
        out: list[Event] = []
        for axis, (old, new) in self.rel.decay(state).items():
            if self.emit_decay:
                out.append(self._effect(state, axis, old, new, "decay"))
        items = session.story.model.items
        for e in events:
            if self._targeted(session, e):
                a, deltas = self.rel.words_deltas(e.text, state)
                for axis, (old, new) in self.rel.change(state, deltas).items():
                    out.append(self._effect(state, axis, old, new, "tone", {"intent": a.intent,
                                                                              "tone": round(a.tone, 4)}))
            elif e.kind == "give" and e.ids.get("to") == self.card.id and e.ids.get("item"):
                item = e.ids["item"]
                tags = items[item].tags if item in items else ()
                for axis, (old, new) in self.rel.change(state, self.rel.gift_deltas(item, tags)).items():
                    out.append(self._effect(state, axis, old, new, "gift", {"item": item}))
        after = self.rel.expression(state)
        if after != before:
            style = self.rel.voice_style(state)
            out.append(Event(kind="effect", turn=state.turn, frame=state.frame, scene=state.scene,
                             ids={"target": f"expression({self.card.id})"},
                             data={"old": before, "new": after, "cause": "relationship", "voice": style.to_json()}))
        return out


__all__ = [
    "DEFAULT_AXES",
    "DEFAULT_EXPRESSIONS",
    "NEUTRAL_BAND",
    "RelationshipHook",
    "Relationships",
    "VoiceStyle",
    "expression_for",
    "tone",
    "REPAY",
    "OWED_DECAY",
]
