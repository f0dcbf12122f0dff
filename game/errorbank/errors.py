"""The error bank's named error (a :class:`game.errors.WorldloomError`, printed as one line by the CLI)."""

from __future__ import annotations

from game.errors import WorldloomError


class ErrorBankError(WorldloomError):
    """The error bank's store, thresholds file or export cannot be used (where and why)."""
