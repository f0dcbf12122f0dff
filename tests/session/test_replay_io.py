"""`worldloom replay` given a broken transcript: an InputError naming file:line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from game.errors import InputError
from game.replay import replay
from game.replay_io import read_transcript

HEADER = {"type": "header", "version": 1, "story": "tests/data/mini", "seed": 1, "fps": 24.0, "block": 12}


def write(tmp_path: Path, *rows: Any) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("header, why", [
    ({k: v for k, v in HEADER.items() if k != "story"}, "no 'story'"),
    ({k: v for k, v in HEADER.items() if k != "fps"}, "no 'fps'"),
    ({**HEADER, "seed": "one"}, "'seed' must be a whole number"),
    ({**HEADER, "seed": True}, "'seed' must be a whole number"),
    ({**HEADER, "seed": 10**30}, "largest whole number"),
    ({**HEADER, "fps": 0}, "fps 0 is outside"),
    ({**HEADER, "fps": 1e30}, "is outside"),
    ({**HEADER, "fps": "24"}, "'fps' must be a number"),
    ({**HEADER, "block": 0}, "block 0"),
    ({**HEADER, "block": 2.5}, "'block' must be a whole number"),
    ({**HEADER, "story": 5}, "'story' must be text"),
    ({**HEADER, "type": "line"}, "no header line"),
])
def test_bad_headers_are_named(tmp_path: Path, header: dict[str, Any], why: str) -> None:
    path = write(tmp_path, header)
    with pytest.raises(InputError, match=why) as err:
        replay(path)
    assert err.value.where == f"{path}:1"


@pytest.mark.parametrize("row, why", [
    ("[1, 2]", "must be a JSON object, not list"), ("7", "not int"), ('"text"', "not str"),
    ({"type": "input"}, "needs its 'input' text"), ({"type": "input", "input": 3}, "'input' must be text"),
    ({"type": "line", "text": "hi", "time": "soon"}, "'time' must be a number"),
    ({"type": "line", "ids": [1]}, "'ids' must be an object"),
    ("[" * 200 + "]" * 200, "nests 200 levels"), ('{"type": "line", "time": NaN}', "not valid JSON"),
    ("{not json", "not valid JSON"),
])
def test_bad_rows_are_named_with_their_line(tmp_path: Path, row: Any, why: str) -> None:
    path = write(tmp_path, HEADER, {"type": "input", "input": "choose 1"}, row)
    with pytest.raises(InputError, match=why) as err:
        read_transcript(path)
    assert err.value.where == f"{path}:3"


def test_a_good_transcript_reads(tmp_path: Path) -> None:
    rows = read_transcript(write(tmp_path, HEADER, "", {"type": "input", "input": "choose 1", "time": 0.5}))
    assert [r["type"] for r in rows] == ["header", "input"]


def test_an_empty_or_missing_transcript(tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        read_transcript(tmp_path / "e.jsonl")
    with pytest.raises(InputError, match="cannot read"):
        read_transcript(tmp_path / "missing.jsonl")


def test_a_row_holding_a_line_separator_stays_one_row(tmp_path: Path) -> None:
    """The transcript writer keeps U+2028 / U+0085 raw (``ensure_ascii=False``); a typed line with one
    must still read back as one row, not as two halves that are not JSON."""
    said = "hum a\u2028little tune\x85ok\x1c"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(HEADER) + "\r\n" + json.dumps({"type": "input", "input": f"say {said}"},
                                                              ensure_ascii=False) + "\n", encoding="utf-8")
    rows = read_transcript(path)
    assert [r["type"] for r in rows] == ["header", "input"]
    assert rows[1]["input"] == f"say {said}"
