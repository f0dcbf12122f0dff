"""The one place a turn happens: :class:`Session`, its steps, reload and the assembly function."""

from game.session.assembly import Game, open_game
from game.session.session import ChoiceView, Extension, Session, TurnResult, View, default_save_dir
from game.session.steps import Begins, Observes, Prepares, Progress, Step, Turn

__all__ = ["Begins", "ChoiceView", "Extension", "Game", "Observes", "Prepares", "Progress", "Session", "Step",
           "Turn", "TurnResult", "View", "default_save_dir", "open_game"]
