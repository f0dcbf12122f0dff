"""Where a character's rejected replies go: the contract the error bank fulfils.

The cast does not know the error bank (it sits above the cast); whoever builds
the cast hands it a :class:`PersonaLog` (:class:`game.errorbank.persona.PersonaCases`
over an :class:`~game.errorbank.store.ErrorStore` in a real game).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Rejection:
    """One reply the persona guard or verifier refused.

    Attributes:
        character: the speaker's id.
        scene: the scene id; ``frame``: the session's frame index when it was said.
        kind: why it was refused: ``ooc`` (out of character), ``never_say`` (a line the
            card forbids) or ``leak`` (the prompt or an instruction showed through).
        bad_reply: the refused text; ``fixed_reply``: what was said instead.
        player_text: what the player had said.
        correction: ``regenerate_reply`` (the model tried again) or ``authored_line``.
        reasons: the guard's reasons, ``"; "``-joined.
    """

    character: str
    scene: str
    frame: int
    kind: str
    bad_reply: str
    fixed_reply: str
    player_text: str
    correction: str
    reasons: str


class PersonaLog(Protocol):
    """Records refused replies and gives them back as the guard's negative examples."""

    def record(self, rejection: Rejection) -> None:
        """Keep ``rejection`` (must not raise for a storage fault the turn can ignore)."""

    def rejected_replies(self, character: str) -> list[str]:
        """Refused replies of ``character`` recorded so far, oldest first (bounded)."""


__all__ = ["PersonaLog", "Rejection"]
