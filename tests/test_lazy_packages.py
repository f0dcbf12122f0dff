"""``game.story`` and ``game.errorbank`` bind their package names on first use (PEP 562,
``game.lazy.lazy_names``): a module of either room imports without the room's heavy parts (the
story loader and its schema; the error bank's guard, monitors and store), and the package names
still import as they always did. Each run here is a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    done = subprocess.run([sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_story_module_imports_without_the_loader() -> None:
    got = _modules_after("import game.story.diagnostics, game.story.yamlio")
    assert "game.story.yamlio" in got
    assert not {"game.story.loader", "game.story.schema", "game.story.ink"} & got


def test_an_errorbank_module_imports_without_the_guard() -> None:
    got = _modules_after("import game.errorbank.clock")
    assert "game.errorbank.clock" in got
    assert not {"game.errorbank.guard", "game.errorbank.monitors", "game.errorbank.store", "sqlite3"} & got


def test_the_package_names_import_as_before() -> None:
    import game.errorbank
    import game.story
    from game.errorbank import ErrorStore, GuardedBackend, thresholds_path
    from game.errorbank.guard import GuardedBackend as Guard
    from game.errorbank.store import ErrorStore as Store
    from game.story import Story, load_story, story_from_dict
    from game.story.loader import load_story as load
    from game.story.story import Story as Own

    assert (Story, load_story, GuardedBackend, ErrorStore) == (Own, load, Guard, Store)
    assert callable(story_from_dict) and callable(thresholds_path)
    assert {"Story", "load_story", "story_from_dict"} <= set(dir(game.story))
    assert "GuardedBackend" in dir(game.errorbank)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        game.story.nope  # noqa: B018
    from game.story import agents  # a submodule still imports by the package's name

    assert agents.__name__ == "game.story.agents"
