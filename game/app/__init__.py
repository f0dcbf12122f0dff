"""The pygame-ce desktop player: a view over :class:`game.session.Session`, nothing more.

One job per file:

* ``window``: ``run_window`` (what ``worldloom play`` calls) and the main loop;
* ``app``: :class:`~game.app.app.App`, the player stepped one event and one tick at a time;
* ``frames``: the frame worker thread, its queue, and the steady frame clock;
* ``inputs``: the input worker thread (typed lines, voice, dropped pictures through
  ``game.inputs.channels.Channels``), who a line is said to, push-to-talk;
* ``reload``: hot reload (F6, ``--watch``) and its diagnostics;
* ``audio``: chunk sound through ``pygame.mixer`` (off when there is no device);
* ``dialogue``: the lines of a turn, typewriter, auto-advance, skip-seen;
* ``layout``: where everything goes for a window size; where characters stand;
* ``panels`` and ``overlays``: drawing the pieces; ``paint``: colours and primitives;
* ``fonts``: a font stack that shows Latin (æøå) and CJK; ``settings``: player settings.
"""

import os

# before any module of this package imports pygame: no greeting on the terminal
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
