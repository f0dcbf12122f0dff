"""setup.sh installs the pinned torch only when that version is not there, from TORCH_INDEX_URL when it is set
(PyTorch's CPU index elsewhere) and pip's configured index otherwise (dry run: the commands are printed, nothing is
installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0"


def _dry_run(tmp_path: Path, torch_init: str, index: str | None = None) -> str:
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(torch_init, encoding="utf-8")
    # belt and braces: whatever setup.sh does, pip and apt only print here (never install)
    shims = tmp_path / "bin"
    shims.mkdir()
    py = shims / "python"
    py.write_text('#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
                  '  echo "setup (dry run): python $*"; exit 0\nfi\n'
                  f'exec {sys.executable} "$@"\n', encoding="utf-8")
    for name in ("apt-get", "sudo"):
        (shims / name).write_text(f'#!/bin/sh\necho "setup (dry run): {name} $*"\n', encoding="utf-8")
    for f in shims.iterdir():
        f.chmod(0o755)
    env = {**os.environ, "WORLDLOOM_SETUP_DRY_RUN": "1", "PYTHON": str(py), "PYTHONPATH": str(tmp_path / "site"),
           "PATH": f"{shims}:{os.environ.get('PATH', '')}"}
    env.pop("TORCH_INDEX_URL", None)
    if index is not None:
        env["TORCH_INDEX_URL"] = index
    done = subprocess.run(["bash", str(ROOT / "setup.sh")], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return done.stdout


@pytest.mark.parametrize("init", ['__version__ = "2.12.1"\n', "raise ImportError('no torch')\n"],
                         ids=["other version", "no torch"])
def test_torch_comes_from_the_cpu_index_when_the_pin_is_missing(tmp_path: Path, init: str) -> None:
    out = _dry_run(tmp_path, init, index="https://download.pytorch.org/whl/cpu")
    lines = [line for line in out.splitlines() if "torch==" in line]
    assert len(lines) == 1 and lines[0].startswith("setup (dry run):") and CPU_INDEX in lines[0], out


def test_without_an_index_url_pip_s_configured_index_gives_torch(tmp_path: Path) -> None:
    out = _dry_run(tmp_path, "raise ImportError('no torch')\n")
    lines = [line for line in out.splitlines() if "torch==" in line]
    assert len(lines) == 1 and "--index-url" not in lines[0] and lines[0].endswith("torch==2.13.0"), out


def test_the_pinned_torch_already_installed_is_kept(tmp_path: Path) -> None:
    out = _dry_run(tmp_path, '__version__ = "2.13.0+cpu"\n')
    assert "torch 2.13.0 is installed" in out and "torch==" not in out, out
