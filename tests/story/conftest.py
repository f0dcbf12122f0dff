"""Fixtures of the story room's tests: the npm ``inkjs`` compiler for Ink stories."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def npm_cache() -> Path:
    env = os.environ.get("WORLDLOOM_NPM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "worldloom" / "npm"


@pytest.fixture(scope="session")
def inkjs() -> Path:
    """The folder holding ``node_modules/inkjs`` (installed with npm on first use)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to compile Ink stories in tests (apt-get install nodejs npm)")
    folder = npm_cache()
    if not (folder / "node_modules" / "inkjs" / "compiler" / "Compiler.js").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--silent",
                               "inkjs@2"], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.fail(f"npm install inkjs@2 failed:\n{done.stdout}\n{done.stderr}")
    return folder
