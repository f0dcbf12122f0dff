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


def test_a_byte_order_mark_opens_no_command(tmp_path: Path) -> None:
    """Notepad saves UTF-8 with a BOM; the first line is still `wait 1`, not "unknown command '\\ufeffwait'"."""
    path = tmp_path / "play.txt"
    path.write_bytes(b"\xef\xbb\xbfwait 1\nchoose 1\n")
    assert [c.verb for c in read_script(path)] == ["wait", "choose"]
    assert parse_line("\ufeffsay hello", "<stdin>:1") == parse_line("say hello", "<stdin>:1")


def test_lines_end_at_newlines_only() -> None:
    """A form feed or U+2028 in a `say` line is part of it; the next line keeps its editor line number."""
    cmds = parse_script("say hum a\u2028little\x0ctune\x85ok\r\nchoose 1\n", "play.txt")
    assert [(c.verb, c.args, c.where) for c in cmds] == [
        ("say", ("hum a\u2028little\x0ctune\x85ok",), "play.txt:1"), ("choose", ("1",), "play.txt:2")]
    with pytest.raises(InputError) as err:
        parse_script("say a\u2028b\njump\n", "play.txt")
    assert err.value.where == "play.txt:2"


def test_a_byte_that_is_not_utf8_is_named_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "play.txt"
    path.write_bytes(b"wait 1\nsay caf\xe9\nchoose 1\n")
    with pytest.raises(InputError, match="byte 0xe9 at column 8 is not UTF-8") as err:
        read_script(path)
    assert err.value.where == f"{path}:2"
