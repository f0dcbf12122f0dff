"""The one place a turn happens: :class:`Session`, its steps, reload and the assembly function."""

from game.session.session import ChoiceView, Session, TurnResult, View, default_save_dir

__all__ = ["ChoiceView", "Session", "TurnResult", "View", "default_save_dir"]
