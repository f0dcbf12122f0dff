"""Playthrough script lines out of range are InputErrors naming file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from game import limits
from game.errors import InputError
from game.inputs.script import parse_line, parse_script, read_script


@pytest.mark.parametrize("line", ["rollback abc", "rollback 0", "rollback -1", "rollback 1.5", "rollback ²",
                                  f"rollback {limits.MAX_ROLLBACK + 1}", "rollback 99999999999999999999999"])
def test_rollback_needs_a_number_of_turns(line: str) -> None:
    with pytest.raises(InputError, match="rollback takes a number of turns") as err:
        parse_script(f"choose 1\n{line}\n", "play.txt")
    assert err.value.where == "play.txt:2"


def test_rollback_in_range_parses() -> None:
    assert parse_line("rollback", "w") is not None
    cmd = parse_line(f"rollback {limits.MAX_ROLLBACK}", "w")
    assert cmd is not None and cmd.args == (str(limits.MAX_ROLLBACK),)


@pytest.mark.parametrize("line", ["wait nan", "wait inf", "wait 601", "move d 1e30", "wait 0"])
def test_seconds_out_of_range(line: str) -> None:
    with pytest.raises(InputError, match="seconds"):
        parse_line(line, "w")


def test_a_script_too_large_is_refused_before_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "play.txt"
    path.write_text("wait 1\n" * 100)
    monkeypatch.setattr("game.inputs.script.MAX_SCRIPT_BYTES", 64)
    with pytest.raises(InputError, match="over the 64-byte limit"):
        read_script(path)
