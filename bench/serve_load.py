"""Load test of the world server: many concurrent Zero Mark sessions, one process vs Ray Serve.

    python bench/serve_load.py [--sessions 50] [--seconds 20] [--size 64x36] [--replicas 1,2,3]
                               [--no-process] [--no-kill] [--quick]

First Zero Mark is played in this process with random inputs (choices, moves, waits;
one random script per seed) on the procedural backend, and the world requests its
Director made are kept. Then ``--sessions`` clients (``RemoteBackend``, one thread
each, on 127.0.0.1) each stream one of those playthroughs (its own start seed, so no
two sessions have the same frames) for ``--seconds``, pulling blocks at the pace a
player watches them (one block's frames at the backend's fps), against:

* the single-process server (``worldloom serve``, a separate process), the baseline;
* Ray Serve (``serve --engine ray``: a gateway and 1, 2, 3 world replicas on a local
  cluster of 2 CPUs). With 2 or more replicas, halfway through the run the replica
  holding the most sessions is killed (``ray.kill``).

Per run it prints the per-block latency (ask to receipt, p50 / p99), blocks/s over all
sessions, failed sessions (an error reached the client) and stalled ones (no block for
``--stall`` seconds), and cross-session blocks: every block each client got is compared,
after the run, with what the same calls make in this process for that session alone (a
block that differs is one the client should not have seen; must be 0). For the kill:
the sessions on the killed replica, how many went on to the end, the blocks they lost
(missing or different), and the longest wait for a block among them. Prints figures;
asserts nothing. The machine is small and shared: absolute figures are not a cluster's.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from game.headless import HeadlessRunner  # noqa: E402
from game.inputs.script import parse_line  # noqa: E402
from game.session import open_game  # noqa: E402
from game.world.backends import make_backend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.journal import JournaledBackend  # noqa: E402
from game.world.protocol import SessionStart, WorldRequest  # noqa: E402
from game.world.wire import request_from_json, session_start_from_json  # noqa: E402

TOKEN = "bench-token-" + os.urandom(16).hex()
MOVES = ["choose 1", "choose 2", "choose 3", "choose 1", "move d 0.5", "move a 0.5", "move w 0.3", "wait 0.5"]


@dataclass
class Play:
    """One recorded playthrough: its start and the requests its Director made, in order."""

    start: SessionStart
    requests: list[WorldRequest]


def record(seed: int, size: tuple[int, int], inputs: int = 16) -> Play:
    """Play Zero Mark with ``inputs`` random inputs (seeded) and keep the world requests."""
    jb = JournaledBackend(make_backend("procedural", width=size[0], height=size[1]))
    game = open_game(ROOT / "stories" / "zero_mark", backend=jb, dialogue=None, voice=False, seed=seed)
    try:
        runner = HeadlessRunner(game.session, None, None)
        runner.start()
        rng = random.Random(seed)
        for i in range(inputs):
            with contextlib.suppress(Exception):  # a choice not on this menu: the player tries another
                cmd = parse_line(rng.choice(MOVES), f"random:{i}")
                if cmd is not None:
                    runner.run(cmd)
    finally:
        game.close()
    events = jb.journal.take()
    start = next(session_start_from_json(e[1]) for e in events if e[0] == "start")
    return Play(start, [request_from_json(e[2]) for e in events if e[0] == "gen"])


@dataclass
class Client:
    """One load session: what it asked, what came back and when."""

    index: int
    play: Play
    seed: int
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (time asked, seconds)
    taken: list[tuple[WorldRequest, list[str]]] = field(default_factory=list)  # request, block hashes
    replica: str = ""
    key: str = ""
    error: str = ""
    done: bool = False

    def run(self, url: str, size: tuple[int, int], until: float, fps: float) -> None:
        try:
            rb = RemoteBackend(url, token=TOKEN, width=size[0], height=size[1], block_timeout_s=120.0,
                               reconnect_attempts=8, connect_timeout_s=30.0)
            rb.start(replace(self.play.start, seed=self.seed))
            self.replica, self.key = rb.replica, rb.client_key
            n, seq = len(self.play.requests), 0
            while time.monotonic() < until:
                base = self.play.requests[seq % n]
                seq += 1
                req = replace(base, seq=seq)
                hashes: list[str] = []
                self.taken.append((req, hashes))
                it = iter(rb.generate(req))
                while time.monotonic() < until:
                    asked = time.monotonic()
                    chunk = next(it, None)
                    if chunk is None:
                        break
                    got = time.monotonic()
                    self.latencies.append((asked, got - asked))
                    hashes.append(hashlib.blake2b(chunk.frames.tobytes(), digest_size=12).hexdigest())
                    time.sleep(max(0.0, chunk.n_frames / fps - (got - asked)))  # the player watches it
                with contextlib.suppress(Exception):
                    getattr(it, "close", lambda: None)()
            rb.close()
            self.done = True
        except Exception as exc:  # reported in the table
            self.error = f"{type(exc).__name__}: {exc}"


def reference(client: Client, size: tuple[int, int]) -> list[list[str]]:
    """The block hashes the same calls make in this process, for this session alone."""
    backend = make_backend("procedural", width=size[0], height=size[1])
    backend.start(replace(client.play.start, seed=client.seed))
    out = []
    for req, hashes in client.taken:
        it = iter(backend.generate(req))
        mine = []
        for _ in range(len(hashes)):
            chunk = next(it, None)
            if chunk is None:
                break
            mine.append(hashlib.blake2b(chunk.frames.tobytes(), digest_size=12).hexdigest())
        with contextlib.suppress(Exception):
            getattr(it, "close", lambda: None)()
        out.append(mine)
    backend.close()
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {port}")


@dataclass
class Result:
    engine: str
    clients: list[Client]
    seconds: float
    kill: str = ""


def run_clients(url: str, plays: list[Play], args: argparse.Namespace, size: tuple[int, int], fps: float,
                midway: Any = None) -> tuple[list[Client], float]:
    clients = [Client(i, plays[i % len(plays)], seed=1000 + i) for i in range(args.sessions)]
    t0 = time.monotonic()
    until = t0 + args.seconds
    threads = [threading.Thread(target=c.run, args=(url, size, until, fps), daemon=True) for c in clients]
    for t in threads:
        t.start()
        time.sleep(0.02)  # players arrive over about a second, not in one instant
    if midway is not None:
        time.sleep(max(0.0, t0 + args.seconds / 2 - time.monotonic()))
        midway(clients)
    for t in threads:
        t.join(args.seconds + 300)
    return clients, time.monotonic() - t0


def summarize(res: Result, size: tuple[int, int], stall_s: float, killed_at: float | None,
              killed: str, replay: str = "") -> dict[str, Any]:
    lat = sorted(s for c in res.clients for _, s in c.latencies)
    blocks = len(lat)
    failed = [c for c in res.clients if c.error or not c.done]
    stalled = [c for c in res.clients if c.latencies and max(s for _, s in c.latencies) > stall_s]
    cross = 0
    lost_on_killed = 0
    for c in res.clients:
        ref = reference(c, size)
        bad = sum(1 for (_, got), want in zip(c.taken, ref, strict=True) for a, b in zip(got, want, strict=False)
                  if a != b) + sum(max(0, len(got) - len(want)) for (_, got), want in zip(c.taken, ref, strict=True))
        cross += bad
        if killed and c.replica == killed:
            lost_on_killed += bad
    row: dict[str, Any] = {
        "engine": res.engine, "sessions": len(res.clients), "blocks": blocks,
        "blocks_s": blocks / res.seconds if res.seconds else 0.0,
        "p50": statistics.quantiles(lat, n=100)[49] * 1000 if len(lat) > 2 else float("nan"),
        "p99": statistics.quantiles(lat, n=100)[98] * 1000 if len(lat) > 2 else float("nan"),
        "failed": len(failed), "stalled": len(stalled), "cross": cross, "kill": "-",
        "errors": sorted({c.error for c in failed if c.error})[:3],
    }
    if killed:
        moved = [c for c in res.clients if c.replica == killed]
        went_on = [c for c in moved if c.done and not c.error]
        after = [s for c in moved for t, s in c.latencies if killed_at is not None and t + s >= killed_at]
        row["kill"] = (f"{len(moved)} on it, {len(went_on)} went on, {lost_on_killed} blocks lost, "
                       f"longest wait {max(after, default=0.0):.1f} s{replay}")
    return row


def bench_process(plays: list[Play], args: argparse.Namespace, size: tuple[int, int], fps: float) -> dict[str, Any]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "game.world.server", "--backend", "procedural", "--port", str(port),
                             "--size", f"{size[0]}x{size[1]}", "--max-sessions", str(args.sessions + 8)],
                            env={**os.environ, "WORLDLOOM_TOKEN": TOKEN}, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        clients, secs = run_clients(f"ws://127.0.0.1:{port}/ws", plays, args, size, fps)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
    return summarize(Result("process", clients, secs), size, args.stall, None, "")


def bench_ray(plays: list[Play], args: argparse.Namespace, size: tuple[int, int], fps: float,
              replicas: list[int]) -> list[dict[str, Any]]:
    import ray
    from ray import serve

    from game.world.ray_serve import build_app, shutdown
    from game.world.ray_world import RaySettings
    from game.world.server import ServerConfig

    ray.init(num_cpus=2, include_dashboard=False, namespace="serve", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    rows = []
    try:
        for n in replicas:
            settings = RaySettings(backend="procedural", backend_kwargs={"width": size[0], "height": size[1]},
                                   config=ServerConfig(token=TOKEN, max_sessions=args.sessions + 8, grace_s=30.0),
                                   replicas=n, cpus_per_replica=0.0, retry_s=120.0, app_name=f"load{n}")
            serve.run(build_app(settings), name=settings.app_name, route_prefix="/")
            state: dict[str, Any] = {"at": None, "name": ""}

            def kill(clients: list[Client], state: dict[str, Any] = state) -> None:
                held: dict[str, int] = {}
                for c in clients:
                    if c.replica:
                        held[c.replica] = held.get(c.replica, 0) + 1
                if not held:
                    return
                name = max(held, key=lambda k: held[k])
                state["at"], state["name"] = time.monotonic(), name
                ray.kill(ray.get_actor(name, namespace="serve"), no_restart=True)

            midway = kill if (n >= 2 and not args.no_kill) else None
            clients, secs = run_clients(f"ws://127.0.0.1:{port}/ws", plays, args, size, fps, midway)
            replay = ""
            if state["name"]:  # what the hand-off cost the replicas that took the sessions over
                world = serve.get_deployment_handle("World", app_name=settings.app_name)
                seen: dict[str, dict[str, Any]] = {}
                for c in clients:
                    if c.replica == state["name"] and c.key:
                        with contextlib.suppress(Exception):
                            who = world.options(session_id=c.key).whoami.remote().result(timeout_s=30)
                            seen[who["replica"]] = who
                replay = (f"; {sum(w['rebuilt'] for w in seen.values())} rebuilt, "
                          f"{sum(w['rebuild_s'] for w in seen.values()):.1f} s replaying")
            rows.append(summarize(Result(f"ray x{n}", clients, secs), size, args.stall, state["at"], state["name"],
                                  replay))
            shutdown(settings)
    finally:
        serve.shutdown()
        ray.shutdown()
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=50)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--size", default="64x36")
    p.add_argument("--replicas", default="1,2,3")
    p.add_argument("--plays", type=int, default=6, help="distinct random playthroughs recorded")
    p.add_argument("--stall", type=float, default=10.0, help="a wait for one block longer than this is a stall")
    p.add_argument("--no-process", action="store_true", help="skip the single-process baseline")
    p.add_argument("--no-ray", action="store_true")
    p.add_argument("--no-kill", action="store_true")
    p.add_argument("--quick", action="store_true", help="--seconds 8 --replicas 1,2 --plays 3")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.replicas, args.plays = 8.0, "1,2", 3
    w, h = (int(x) for x in args.size.lower().split("x"))
    size = (w, h)
    t = time.monotonic()
    plays = [record(seed, size) for seed in range(args.plays)]
    fps = make_backend("procedural", width=w, height=h).capabilities().fps
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"recorded {len(plays)} random Zero Mark playthroughs ({sum(len(x.requests) for x in plays)} requests) "
          f"in {time.monotonic() - t:.1f} s; {args.sessions} sessions x {args.seconds:g} s at {w}x{h}, paced at "
          f"{fps:g} fps", flush=True)
    rows = []
    if not args.no_process:
        rows.append(bench_process(plays, args, size, fps))
        print(f"  {rows[-1]['engine']} done", flush=True)
    if not args.no_ray:
        rows.extend(bench_ray(plays, args, size, fps, [int(x) for x in args.replicas.split(",") if x]))
    print()
    print(f"{'engine':<9} {'sessions':>8} {'blocks':>7} {'blocks/s':>8} {'p50 ms':>7} {'p99 ms':>8} {'failed':>6} "
          f"{'stalled':>7} {'cross':>5}  replica kill")
    for r in rows:
        print(f"{r['engine']:<9} {r['sessions']:>8} {r['blocks']:>7} {r['blocks_s']:>8.1f} {r['p50']:>7.1f} "
              f"{r['p99']:>8.1f} {r['failed']:>6} {r['stalled']:>7} {r['cross']:>5}  {r['kill']}")
        for e in r["errors"]:
            print(f"          error: {e[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
