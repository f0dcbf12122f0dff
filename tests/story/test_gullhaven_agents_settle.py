"""Gullhaven's agents settle when there is nothing left for them to fetch: once the player has
worked the oil into the wick, Ysolde and Brann no longer walk shed<->quay every turn (their rules
sent them to the shed for a flask that was gone, and back), and Ysolde does not ask for the oil
the player is carrying, nor say the same line each time the player comes back to the quay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from game.headless import play_headless
from game.inputs.script import parse_line, read_script

STORY = Path(__file__).resolve().parents[2] / "stories" / "gullhaven"
PLAYS = STORY / "playthroughs"
WANT_OIL = "I'll want the oil soon."


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))


def _rows(commands: list, tmp: Path) -> list[dict]:
    play_headless(str(STORY), commands, backend="null", save_dir=tmp / "saves", transcript=tmp / "t.jsonl",
                  size=(64, 36), dialogue=None, voice=False)
    return [json.loads(x) for x in (tmp / "t.jsonl").read_text(encoding="utf-8").splitlines()]


def _round_trips(rows: list[dict]) -> dict[str, int]:
    """Per agent: moves that undo the move before them (A->B then B->A) with nothing done between."""
    last: dict[str, tuple[str, str] | None] = {}
    trips: dict[str, int] = {}
    for r in rows:
        if r["type"] != "agent":
            continue
        who, kind = r["speaker"], r["data"].get("kind")
        if kind == "move":
            step = (r["data"]["from"], r["data"]["to"])
            if last.get(who) == (step[1], step[0]):
                trips[who] = trips.get(who, 0) + 1
            last[who] = step
        else:
            last[who] = None
    return trips


def test_with_the_oil_in_the_wick_nobody_shuttles_to_the_shed(tmp_path: Path) -> None:
    lines = ["choose be_apprentice", "move d", "choose take_flask", "choose take_wick", "give oil_flask wick",
             "move s", *["choose watch_sea"] * 6]
    rows = _rows([parse_line(x, f"play.txt:{i}") for i, x in enumerate(lines, 1)], tmp_path)
    assert _round_trips(rows) == {}, [(r["speaker"], r["data"]) for r in rows if r["type"] == "agent"]
    said = [r["text"] for r in rows if r["type"] == "line" and WANT_OIL in (r["text"] or "")]
    assert len(said) == 1  # asked once, on arriving, not again while the player carries the oiled wick


@pytest.mark.parametrize("script", sorted(p.name for p in PLAYS.glob("*.txt")))
def test_no_playthrough_repeats_an_empty_round_trip(script: str, tmp_path: Path) -> None:
    rows = _rows(read_script(PLAYS / script), tmp_path)
    assert all(n <= 1 for n in _round_trips(rows).values()), _round_trips(rows)
    quay = [r["text"] for r in rows if r["type"] == "line" and (r["text"] or "").startswith("Ysolde")
            and "'" in r["text"]]
    assert len(quay) == len(set(quay)), quay  # none of her quay lines twice
