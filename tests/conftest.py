"""Shared fixtures: an isolated story cache and save folder for every test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("WORLDLOOM_ERRORBANK", str(tmp_path_factory.getbasetemp() / "errorbank.db"))


@pytest.fixture
def mini_path() -> Path:
    return DATA / "mini"


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The shared MiniLM embedder, loaded once per test run (skipped without the model extras).

    Its vector cache goes to the run's temporary folder, as ``_isolated_cache`` does.
    """
    pytest.importorskip("sentence_transformers")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WORLDLOOM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        from game.models.embedder import get_embedder

        return get_embedder()
