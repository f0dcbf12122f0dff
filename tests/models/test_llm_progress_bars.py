"""Loading the dialogue model turns transformers' progress bars off while it loads, then puts
them back as they were (it used to leave them off for the rest of the process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

from transformers.utils import logging as hf_logging  # noqa: E402

from game.models import llm_transformers as llm  # noqa: E402
from game.models.embedder import progress_bars  # noqa: E402
from game.models.llm import ModelError  # noqa: E402


@pytest.fixture(autouse=True)
def keep_setting() -> Iterator[None]:
    was = hf_logging.is_progress_bar_enabled()
    yield
    (hf_logging.enable_progress_bar if was else hf_logging.disable_progress_bar)()


@pytest.mark.parametrize("before", [True, False])
def test_the_loader_quiets_bars_while_loading_and_restores_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                before: bool) -> None:
    (hf_logging.enable_progress_bar if before else hf_logging.disable_progress_bar)()
    during: list[bool] = []

    def load(self: llm.TransformersDialogueModel, path: str) -> None:
        during.append(bool(hf_logging.is_progress_bar_enabled()))
        raise ModelError("stop here", where=path)  # the rest of a load is not what this test is about

    monkeypatch.setattr(llm.TransformersDialogueModel, "_load", load)
    with pytest.raises(ModelError, match="stop here"):
        llm.TransformersDialogueModel(tmp_path)
    assert during == [False]
    assert bool(hf_logging.is_progress_bar_enabled()) is before


def test_progress_bars_puts_the_setting_back_after_an_error() -> None:
    hf_logging.enable_progress_bar()
    with pytest.raises(RuntimeError), progress_bars(False):
        assert not hf_logging.is_progress_bar_enabled()
        raise RuntimeError("boom")
    assert hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    with progress_bars(True):
        assert hf_logging.is_progress_bar_enabled()
    assert not hf_logging.is_progress_bar_enabled()
