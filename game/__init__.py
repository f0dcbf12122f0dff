"""worldloom: the game layer of a real-time world model.

Import package ``game``; see ``docs/api.md`` for :class:`game.session.Session`.
"""

__version__ = "0.1.0"
