"""Fixtures of the story room's tests: the npm ``inkjs`` compiler for Ink stories, a function that
compiles with it (``ink_compile(source, out) -> out``), and the source of inkle's *The Intercept*
when it is on this machine (``intercept_source``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

#: The test data of Ink stories (and ``compile.js``, the node script that runs inkjs's compiler).
INK_DATA = Path(__file__).parents[1] / "data" / "ink"


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


@pytest.fixture(scope="session")
def ink_compile(inkjs: Path) -> Callable[[Path, Path], Path]:
    """``compile(source, out) -> out``: compile an ``.ink`` file to ``out`` with inkjs (node, list
    arguments); the test fails with the compiler's message when it does not compile."""

    def compile_(source: Path, out: Path) -> Path:
        done = subprocess.run(["node", str(INK_DATA / "compile.js"), str(inkjs), str(source), str(out)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return out

    return compile_


#: Where a copy of inkle's The Intercept may be (a clone, a bare mirror, or the .ink file).
INTERCEPT_PLACES = [os.environ.get("WORLDLOOM_INTERCEPT", ""), "/work/.mirror/inkle+the-intercept/repo"]
INTERCEPT_INK = "Assets/Ink/TheIntercept.ink"
#: No package on the registries a test run can reach ships it (checked: every inkjs on npm from 1.5.2 to
#: 2.4.0, bink 0.7.1, inkcpp-py 0.1.12, inkpython 0.1.0, ink-engine 1.0.0, @drincs/pixi-vn-ink, Debian),
#: so where no copy is on the machine (CI) the test says how to run it and is skipped.
INTERCEPT_SKIP = ("inkle's The Intercept is not on this machine, and no PyPI, npm or Debian package ships it, so a "
                  "test run cannot fetch it (it is their work and is not committed). To run this test: "
                  "git clone --depth 1 https://github.com/inkle/the-intercept /tmp/the-intercept && "
                  "WORLDLOOM_INTERCEPT=/tmp/the-intercept python3 -m pytest tests/story/test_ink_true.py "
                  "tests/story/test_ink_vm_lockstep.py -k intercept "
                  "(WORLDLOOM_INTERCEPT may also name TheIntercept.ink itself, or a bare mirror)")


@pytest.fixture(scope="session")
def intercept_source(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """``TheIntercept.ink`` from ``$WORLDLOOM_INTERCEPT`` (the file, a clone or a bare mirror of
    github.com/inkle/the-intercept), or None when it is not on this machine (it is inkle's work,
    so it is never committed)."""
    for place in INTERCEPT_PLACES:
        p = Path(place) if place else None
        if p is None or not p.exists():
            continue
        if p.is_file():
            return p
        if (p / INTERCEPT_INK).is_file():
            return p / INTERCEPT_INK
        git = shutil.which("git")
        if git and (p / "HEAD").is_file():  # a bare mirror
            done = subprocess.run([git, "--git-dir", str(p), "show", f"HEAD:{INTERCEPT_INK}"],
                                  capture_output=True, timeout=60)
            if done.returncode == 0:
                out = tmp_path_factory.mktemp("intercept") / "TheIntercept.ink"
                out.write_bytes(done.stdout)
                return out
    return None
