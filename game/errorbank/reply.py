"""Dialogue faults: the persona guard's reply monitor, with the store's rejected replies
as negative examples (a failure seen once is caught on its next occurrence).

A reply is checked, in order, against:

1. forbidden phrases: out-of-character boilerplate (:data:`DEFAULT_FORBIDDEN`, e.g.
   "as an AI", "language model", "I cannot") plus the lines each character never
   says; matched as whole-token sequences of the normalised text;
2. persona-guard hooks: callables ``hook(character, reply) -> reason | None`` the
   character room plugs in (contradictions with sink or entity facts...);
3. rejected replies: the newest :data:`~game.errorbank.store.MAX_REJECTED` replies
   recorded as bad in the store (and not labelled a false alarm) or rejected in this
   session, compared by normalised token overlap (see :func:`overlap`):
   exact after normalisation, or a near duplicate above the ``reply.repeat``
   threshold.

Normalisation: Unicode NFKC, case-folded, typographic quotes made plain, everything
but letters, digits and in-word apostrophes turned into spaces.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from game.cast.similarity import contains_phrase, normalise, overlap, tokens
from game.errorbank.store import MAX_REJECTED, Case, ErrorStore
from game.errorbank.thresholds import Thresholds

#: Phrases no character says: they are the model speaking, not the character.
DEFAULT_FORBIDDEN: tuple[str, ...] = (
    "as an ai",
    "i am an ai",
    "i'm an ai",
    "language model",
    "i cannot",
    "as an assistant",
    "artificial intelligence",
    "my training data",
    "openai",
    "chatgpt",
)


Hook = Callable[[str, str], "str | None"]













@dataclass(frozen=True)
class ReplyVerdict:
    """The monitor's verdict on one reply.

    Attributes:
        ok: the reply may be shown.
        kind: ``""`` (ok), ``reply.persona`` (forbidden phrase or hook) or
            ``reply.repeat`` (a rejected reply again).
        reasons: one sentence per thing found.
        matched: the forbidden phrase or the rejected reply it matched.
        score: overlap with the closest rejected reply, [0, 1].
        case_id: the stored case (0 if not recorded).
    """

    ok: bool
    kind: str = ""
    reasons: tuple[str, ...] = ()
    matched: str = ""
    score: float = 0.0
    case_id: int = 0


class ReplyMonitor:
    """Checks characters' replies and records the failures.

    Args:
        store: the error bank (read for rejected replies, written with cases), or ``None``.
        forbidden: phrases no character says (default :data:`DEFAULT_FORBIDDEN`).
        never_says: character id -> lines that character never says.
        allow: phrases removed from ``forbidden`` (a character for whom "I cannot" is fine).
        thresholds: ``reply.repeat`` threshold (default: the store's, else the defaults).
        session, story: ids written into each case.
    """

    def __init__(self, store: ErrorStore | None = None, forbidden: Sequence[str] = DEFAULT_FORBIDDEN,
                 never_says: Mapping[str, Sequence[str]] | None = None, allow: Sequence[str] = (),
                 thresholds: Thresholds | None = None, session: str = "", story: str = "") -> None:
        self.store = store
        allowed = {normalise(a) for a in allow}
        self.forbidden = [p for p in forbidden if normalise(p) not in allowed]
        self.never_says = {k: list(v) for k, v in (never_says or {}).items()}
        self.thresholds = thresholds or (store.thresholds() if store else Thresholds())
        self.session = session
        self.story = story
        self.hooks: list[Hook] = []
        self._lock = threading.Lock()
        # the newest MAX_REJECTED: a reply is compared with each, so the window is bounded
        self._rejected: deque[tuple[str, str]] = deque(maxlen=MAX_REJECTED)
        if store is not None:
            for case in store.iter_cases("reply"):
                if case.bad_reply and case.label != "good":
                    self._rejected.append((case.character, case.bad_reply))

    def add_hook(self, hook: Hook) -> None:
        """Add a persona-guard hook ``hook(character, reply) -> reason or None``."""
        self.hooks.append(hook)

    @property
    def rejected(self) -> list[tuple[str, str]]:
        """``(character, reply)`` negative examples known now (``""`` character = any)."""
        with self._lock:
            return list(self._rejected)

    def closest_rejected(self, reply: str, character: str = "") -> tuple[float, str]:
        """``(overlap, rejected reply)`` of the closest negative example for ``character``."""
        best, match = 0.0, ""
        for who, bad in self.rejected:
            if who and character and who != character:
                continue
            s = overlap(reply, bad)
            if s > best:
                best, match = s, bad
        return best, match

    def check(self, reply: str, character: str = "", *, prompt: Any = None, never: Sequence[str] = (),
              scene: str = "", frame: int = 0, fps: float = 24.0, record: bool = True) -> ReplyVerdict:
        """Judge ``reply`` of ``character``; a failure is recorded (and becomes a negative example).

        Args:
            reply: the reply text.
            character: the speaking character's id.
            prompt: the dialogue prompt (str, list of messages or dict), stored as JSON.
            never: extra lines this character never says (for this call).
            scene: scene id for the case; ``frame``: game frame index; ``fps``: for frame time.
            record: store a case when the reply fails.
        """
        toks = tokens(reply)
        reasons: list[str] = []
        matched = ""
        kind = ""
        for phrase in [*self.forbidden, *self.never_says.get(character, ()), *never]:
            if contains_phrase(toks, phrase):
                reasons.append(f"says {phrase!r}, which {character or 'the character'} never says")
                matched = matched or phrase
                kind = "reply.persona"
        for hook in self.hooks:
            why = hook(character, reply)
            if why:
                reasons.append(why)
                kind = kind or "reply.persona"
        score, bad = self.closest_rejected(reply, character)
        if score > 0 and self.thresholds.alarm("reply.repeat", score):
            reasons.append(f"repeats a rejected reply (overlap {score:.2f}): {bad[:80]!r}")
            matched = matched or bad
            kind = kind or "reply.repeat"
        if not reasons:
            return ReplyVerdict(ok=True, score=score)
        verdict = ReplyVerdict(ok=False, kind=kind, reasons=tuple(reasons), matched=matched, score=score)
        if record:
            case_id = self._record(verdict, reply, character, prompt, scene, frame, fps)
            verdict = ReplyVerdict(False, kind, tuple(reasons), matched, score, case_id)
        return verdict

    def flag(self, reply: str, character: str = "", reason: str = "flagged", *, prompt: Any = None,
             scene: str = "", frame: int = 0, fps: float = 24.0) -> int:
        """Record ``reply`` as bad although no rule caught it (a player's report, a reviewer):
        it becomes a negative example at once. Returns the case id (0 without a store)."""
        verdict = ReplyVerdict(False, "reply.flagged", (reason,), "", 0.0)
        return self._record(verdict, reply, character, prompt, scene, frame, fps)

    def correct(self, verdict: ReplyVerdict, fixed_reply: str, correction: str, worked: bool) -> None:
        """Write the correction of a recorded failure (the reply shown instead, and whether it passed)."""
        if self.store is not None and verdict.case_id:
            self.store.update(verdict.case_id, fixed_reply=fixed_reply, correction=correction, worked=worked)

    def guard(self, reply: str, character: str, regenerate: Callable[[], str] | None = None,
              authored_line: str = "", attempts: int = 1, **context: Any) -> tuple[str, ReplyVerdict]:
        """Check ``reply``; if it fails, regenerate up to ``attempts`` times, else fall back
        to ``authored_line``. Returns the reply to show and the first verdict; the case
        records the correction and whether it worked.
        """
        first = self.check(reply, character, **context)
        if first.ok:
            return reply, first
        for _ in range(attempts if regenerate else 0):
            assert regenerate is not None
            candidate = regenerate()
            if self.check(candidate, character, record=False, never=context.get("never", ())).ok:
                self.correct(first, candidate, "regenerate_reply", True)
                return candidate, first
        if authored_line:
            self.correct(first, authored_line, "authored_line", True)
            return authored_line, first
        self.correct(first, "", "none", False)
        return "", first

    def _metrics(self, verdict: ReplyVerdict) -> dict[str, Any]:
        if verdict.kind == "reply.repeat":
            return {"key": "reply.repeat", "score": round(verdict.score, 6), "direction": "above",
                    "threshold": self.thresholds.get("reply.repeat"), "matched": verdict.matched}
        return {"key": verdict.kind, "score": 1.0, "overlap": round(verdict.score, 6), "matched": verdict.matched}

    def _record(self, verdict: ReplyVerdict, reply: str, character: str, prompt: Any, scene: str,
                frame: int, fps: float) -> int:
        with self._lock:
            self._rejected.append((character, reply))
        if self.store is None:
            return 0
        request: dict[str, Any] = prompt if isinstance(prompt, dict) else {"prompt": prompt}
        return self.store.add(Case(
            kind=verdict.kind, severity="warning", session=self.session, story=self.story, scene=scene,
            frame=frame, frame_time=frame / fps if fps else 0.0, request=request, character=character,
            bad_reply=reply, metrics=self._metrics(verdict),
            note="; ".join(verdict.reasons)))
