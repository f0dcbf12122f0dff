"""Headless play built by open_game: the guard runs on the clock it is given, and a hung backend,
in this process or behind `worldloom serve`, costs at most one block past the director's deadline.

The clock is a ManualClock (no real sleep races a threshold): a backend stuck inside
``clock.blocked()`` moves it straight to the guard's timeout, so how far it moved is what
the hang cost the player."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from game.errorbank import ErrorStore
from game.errorbank.clock import ManualClock
from game.errorbank.faults import FaultyBackend
from game.headless import play_headless
from game.inputs.script import parse_script
from game.world.backends import BACKENDS
from game.world.backends.procedural import ProceduralBackend

STORY = str(Path(__file__).parents[2] / "stories" / "zero_mark")
W, H, FPB = 96, 54, 4
SCRIPT = parse_script("wait 0.5\nwait 0.5\nwait 0.5\nmove d 0.5\n")


def run(tmp: Path, name: str, plan: dict[int, str], clock: ManualClock | None,
        monkeypatch: pytest.MonkeyPatch, make: Any) -> tuple[FaultyBackend, list[dict[str, Any]], ErrorStore]:
    """Play SCRIPT headless on ``make()`` behind FaultyBackend(plan), with the error bank on."""
    made: list[FaultyBackend] = []

    def factory(**_: Any) -> FaultyBackend:
        made.append(FaultyBackend(make(), plan, clock=clock))
        return made[0]

    monkeypatch.setitem(BACKENDS, name, factory)
    db = tmp / f"{name}-bank.db"
    transcript = tmp / f"{name}.jsonl"
    try:
        play_headless(STORY, SCRIPT, backend=name, seed=5, save_dir=tmp / name, transcript=transcript,
                      errorbank=db, dialogue=None, voice=False, clock=clock)
    finally:
        if made:
            made[0].release()
    rows = [json.loads(line) for line in transcript.read_text().splitlines()]
    return made[0], rows, ErrorStore(db)


def frames_shown(rows: list[dict[str, Any]]) -> int:
    return sum(r["frames"] for r in rows if r["type"] == "chunk")


def check_one_block(tmp: Path, name: str, monkeypatch: pytest.MonkeyPatch, make: Any) -> None:
    _, clean, _ = run(tmp, name + "-clean", {}, ManualClock(), monkeypatch, make)
    clock = ManualClock()
    faulty, rows, store = run(tmp, name, {3: "hang"}, clock, monkeypatch, make)
    assert "hang" in faulty.modes
    hangs = store.cases("backend.hang")
    assert len(hangs) == 1, [c.kind for c in store.cases()]
    block_s = FPB / 24.0  # one block of the procedural world, here or behind the server
    deadline_s = hangs[0].metrics["deadline_ms"] / 1000
    assert deadline_s == pytest.approx(block_s, abs=1e-3)  # the director's deadline is one block (in ms)
    # the wait the player saw: the deadline and one block, on the injected clock (it moved only there)
    assert clock.now() == pytest.approx(deadline_s + block_s)
    assert frames_shown(rows) == frames_shown(clean) > 0  # the fallback filled the hung block: nothing lost
    assert [r["type"] for r in rows].count("chunk") == [r["type"] for r in clean].count("chunk")


def _procedural() -> ProceduralBackend:
    return ProceduralBackend(W, H, frames_per_block=FPB)


def test_a_hung_backend_costs_one_block_in_headless_play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_one_block(tmp_path, "hangs-in-process", monkeypatch, _procedural)


@pytest.fixture()
def remote_url() -> Iterator[str]:
    pytest.importorskip("fastapi", reason="the world server needs fastapi")
    pytest.importorskip("websockets", reason="the remote backend needs websockets")
    from game.world.server import ServerConfig, ServerThread, create_app

    app = create_app(lambda options: ProceduralBackend(W, H, frames_per_block=FPB),
                     ServerConfig(token="headless-hang-token-0123456789abcdef"))
    srv = ServerThread(app).start()
    try:
        yield srv.url
    finally:
        srv.stop()


def test_a_hung_remote_backend_costs_one_block_in_headless_play(tmp_path: Path, remote_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from game.world.backends.remote import RemoteBackend

    def remote() -> RemoteBackend:  # real time by default for a remote backend: the injected clock must win
        return RemoteBackend(remote_url, token="headless-hang-token-0123456789abcdef")

    check_one_block(tmp_path, "hangs-remote", monkeypatch, remote)
