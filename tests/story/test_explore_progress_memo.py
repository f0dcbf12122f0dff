"""`worldloom explore` shows progress even where stderr is not a terminal, and `worldloom map
--coverage` reuses the coverage explore computed for the same story and bounds (#17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from game.cli import main
from game.story import explorer


def test_explore_prints_progress_lines_to_a_pipe(mini_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(explorer, "PLAIN_EVERY_S", 0.0)  # a line at every update (the default: every 5 s)
    main(["explore", str(mini_path), "--random", "3", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err  # captured: not a terminal, so no rich bar
    assert "explore: breadth-first" in err and "explore: random playthroughs: " in err
    main(["explore", str(mini_path), "--random", "3", "--out", str(tmp_path / "out"), "--no-progress"])
    assert "explore:" not in capsys.readouterr().err


def test_map_coverage_reuses_what_explore_computed(mini_path: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))
    args = ["map", str(mini_path), "-o", str(tmp_path / "m.dot"), "--coverage", "--engine", "builtin",
            "--max-states", "500", "--random", "5"]
    calls: list[int] = []
    real = explorer.explore

    def counted(*a: Any, **kw: Any) -> explorer.Report:
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(explorer, "explore", counted)
    assert main(["explore", str(mini_path), "--max-states", "500", "--random", "5", "--out",
                 str(tmp_path / "out"), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    assert calls == [1]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert calls == [1] and "reached" in first  # the map read explore's coverage back
    assert main([*args[:-1], "6"]) == 0  # other bounds: explored again
    assert calls == [1, 1]
    # the same figures as a map that explored itself
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cold"))
    capsys.readouterr()
    assert main(args) == 0
    assert calls == [1, 1, 1] and capsys.readouterr().out == first
