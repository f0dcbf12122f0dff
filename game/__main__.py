"""``python -m game`` is ``worldloom``."""

import sys

from game.cli import main

sys.exit(main())
