"""The error bank as the cast's :class:`~game.cast.persona_log.PersonaLog`: each refused
reply becomes a ``reply.persona`` case, and the bank's refused replies come back as the
persona guard's negative examples on the next start."""

from __future__ import annotations

from game.cast.persona_log import Rejection
from game.errorbank.store import Case, ErrorStore


class PersonaCases:
    """A :class:`~game.cast.persona_log.PersonaLog` over ``store``.

    Args:
        store: the error bank.
        session: the session id recorded with each case; ``story``: the story id.
        fps: the session's frames per second (``frame_time = frame / fps``, seconds).
    """

    def __init__(self, store: ErrorStore, *, session: str, story: str, fps: float) -> None:
        self.store = store
        self.session = session
        self.story = story
        self.fps = fps

    def record(self, rejection: Rejection) -> None:
        """Store ``rejection`` as a ``reply.persona`` case (``worked=True``: what was said instead passed)."""
        r = rejection
        self.store.add(Case(kind="reply.persona", session=self.session, story=self.story, scene=r.scene,
                            frame=r.frame, frame_time=r.frame / self.fps if self.fps > 0 else 0.0,
                            character=r.character, bad_reply=r.bad_reply, fixed_reply=r.fixed_reply,
                            request={"player_text": r.player_text},
                            metrics={"key": f"reply.{r.kind}", "score": 1.0},
                            correction=r.correction, worked=True, note=r.reasons))

    def rejected_replies(self, character: str) -> list[str]:
        """See :meth:`ErrorStore.rejected_replies`."""
        return self.store.rejected_replies(character)


__all__ = ["PersonaCases"]
