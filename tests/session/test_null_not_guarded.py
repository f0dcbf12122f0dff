"""`play --backend null` is not guarded by the error bank unless one is named: its flat frames are
frozen by design, and guarding them recorded a `frame.frozen` case each block and swapped in the
procedural world ("world model unreachable")."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.cli import main


def _play(mini_path: Path, tmp_path: Path, *extra: str) -> int:
    script = tmp_path / "play.txt"
    script.write_text("wait 48\nchoose offer_kite\nwait 48\nchoose finish_good\n")
    return main(["play", str(mini_path), "--headless", "--inputs", str(script), "--backend", "null",
                 "--transcript", str(tmp_path / "t.jsonl"), *extra])


def test_the_null_backend_is_not_guarded_by_default(mini_path: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "bank.sqlite"
    monkeypatch.setenv("WORLDLOOM_ERRORBANK", str(db))
    assert _play(mini_path, tmp_path) == 0
    out = capsys.readouterr()
    assert "unreachable" not in out.out + out.err
    assert not db.exists()  # no guard was built: nothing opened the bank


def test_an_explicit_errorbank_still_guards_the_null_backend(mini_path: Path, tmp_path: Path) -> None:
    db = tmp_path / "bank.sqlite"
    assert _play(mini_path, tmp_path, "--errorbank", str(db)) == 0
    assert db.exists()  # the guard opened the bank it was given
