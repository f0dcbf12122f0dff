"""Kill a saving game with SIGKILL at random instants; check that every slot still loads.

    python bench/savekill.py [--kills 500] [--seed 0]

A forked child plays on from what the slot holds (one checkpoint a turn, a save a
turn, reporting each finished save through a pipe) until the parent kills it
with ``SIGKILL`` after a random delay. After each kill the slot and its previous
copy must load, and the slot must hold the last reported save or the one after
it (at most the checkpoint being written is lost). ``tests/state/test_save_safety.py``
runs 50 kills; ``bench/frames.py`` runs 500 and prints the counts. POSIX only (fork).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from game.errors import SaveError
from game.state import Event, GameState
from game.state.saves import Checkpoint, SaveData, damaged_paths, previous_path, read_save, write_save

#: Checkpoints the child keeps (a sliding window, as a session keeps 200).
WINDOW = 50


@dataclass
class KillReport:
    """What :func:`kill_loop` saw: kills, slots that did not load, rounds that lost more than the last save."""

    kills: int = 0
    unloadable: int = 0
    lost_more_than_last: int = 0
    turns: int = 0
    problems: list[str] = field(default_factory=list)


def _state(turn: int) -> GameState:
    return GameState(story_id="kill", scene=f"s{turn % 7}", turn=turn, log_offset=20 * turn, draws=turn,
                     visits={f"s{i}": 1 + (i < turn % 300) for i in range(300)}, variables={"x": turn})


def _child(slot: Path, report_fd: int, turn: int) -> None:
    """Play on from ``turn``: each turn adds 20 events and a checkpoint (the last :data:`WINDOW` kept), then saves."""
    os.write(report_fd, b"ready\n")  # the parent times its kill from here, not from the fork
    events = [Event(kind="line", turn=i // 20, scene=f"s{i % 7}", text=f"line {i} of a long game, said once")
              for i in range(20 * turn)]
    cps = [Checkpoint(f"turn {t}", _state(t), {"notes": {"n": list(range(t % 40))}})
           for t in range(max(0, turn - WINDOW), turn)]
    while True:
        cps = [*cps[-WINDOW + 1:], Checkpoint(f"turn {turn}", _state(turn), {"notes": {"n": list(range(turn % 40))}})]
        events += [Event(kind="line", turn=turn, scene=f"s{i % 7}", text=f"line {20 * turn + i} of a long game")
                   for i in range(20)]
        turn += 1
        write_save(slot, SaveData("kill", "hash", _state(turn), events, cps, f"turn {turn}"))
        os.write(report_fd, f"{turn}\n".encode())


def _turn_of(path: Path, problems: list[str]) -> int | None:
    try:
        data = read_save(path)
    except SaveError as exc:
        problems.append(str(exc))
        return None
    if len(data.checkpoints) != min(WINDOW, data.state.turn) or \
            any(cp.state.turn != data.state.turn - len(data.checkpoints) + i for i, cp in enumerate(data.checkpoints)):
        problems.append(f"{path}: checkpoints do not match turn {data.state.turn}")
        return None
    return data.state.turn


def save_seconds(folder: Path) -> float:
    """How long one save of the child's game takes here (the disk's fsync dominates), median of 3."""
    data = SaveData("kill", "hash", _state(WINDOW), [], [Checkpoint("t", _state(t)) for t in range(WINDOW)])
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        write_save(folder / "calibrate.json", data)
        times.append(time.perf_counter() - t0)
    for p in folder.glob("calibrate.json*"):
        p.unlink()
    return sorted(times)[1]


#: The shortest longest-wait before a kill, seconds (a busy machine's first save can be slow).
MIN_DELAY_S = 0.1


def kill_loop(folder: Path, kills: int, seed: int = 0, max_delay_s: float | None = None) -> KillReport:
    """Run ``kills`` fork/save/SIGKILL rounds on ``folder/slot.json`` (see the module docstring).

    ``max_delay_s``: the longest wait before a kill (default: four saves' time, measured here).
    """
    rng = random.Random(seed)
    if max_delay_s is None:
        max_delay_s = max(4 * save_seconds(folder), MIN_DELAY_S)
    slot = folder / "slot.json"
    report = KillReport()
    turn = 0
    for _ in range(kills):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            try:
                os.close(read_fd)
                _child(slot, write_fd, turn)
            finally:
                os._exit(0)
        os.close(write_fd)
        got_ready = b""
        while not got_ready.endswith(b"ready\n"):  # a fork of a large process can take a while
            chunk = os.read(read_fd, 6 - len(got_ready)) if len(got_ready) < 6 else b""
            if not chunk:
                break
            got_ready += chunk
        time.sleep(rng.uniform(0.0, max_delay_s))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with os.fdopen(read_fd, "rb") as fh:
            reported = [int(x) for x in fh.read().split()]
        confirmed = reported[-1] if reported else turn
        report.kills += 1
        if not slot.exists():
            if confirmed:
                report.unloadable += 1
                report.problems.append(f"{slot} is gone after turn {confirmed}")
            continue
        got = _turn_of(slot, report.problems)
        if previous_path(slot).exists() and _turn_of(previous_path(slot), report.problems) is None:
            report.unloadable += 1
        if got is None:
            report.unloadable += 1
            continue
        if got < confirmed:
            report.lost_more_than_last += 1
            report.problems.append(f"slot holds turn {got}, but turn {confirmed} was saved")
        turn = got
    report.turns = turn
    report.unloadable += len(damaged_paths(slot))
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        r = kill_loop(Path(folder), args.kills, args.seed)
    print(f"SIGKILL during saves: {r.kills} kills, {r.turns} turns saved, {r.unloadable} unloadable slots, "
          f"{r.lost_more_than_last} lost more than the last checkpoint")
    for line in r.problems[:5]:
        print("  ", line)


if __name__ == "__main__":
    main()
