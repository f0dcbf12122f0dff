"""Protocol overhead of the remote backend: the same requests in-process and through ``worldloom serve``.

    python bench/remote.py [--size 160x90] [--requests 40] [--blocks 1] [--backend procedural|null]
                           [--in-thread] [--quick]
    python bench/remote.py --codecs [--size 320x180] [--blocks 12]

The same backend (procedural by default, small frames) serves the same requests twice
in one run, alternating request by request: once in this process, once through a
``worldloom serve`` on 127.0.0.1 (a separate process by default, as it would be on a
GPU machine; ``--in-thread`` runs it in this process). For each encoding (raw, as
loopback gets by default, then JPEG, WebP and H.264, as a network would) it prints the
median wall time per chunk (one request of ``--blocks`` blocks), the overhead per
chunk and per block (remote minus in-process) and the bytes per frame on the wire.
``--backend null`` serves flat frames that cost almost nothing to make, so what is
left is the wire's cost alone (the procedural world's own 8-20 ms a block, which
varies with the machine's load, no longer blurs the difference).

The baseline is plain ``websockets`` carrying the same messages: a bare server in its
own process (the asyncio ``websockets`` server, no ASGI) answers each request text,
the same text the remote backend sends, with one binary message of exactly the size
of the protocol's block message, read by the same sync ``websockets`` client the
remote backend uses. So ``plain ms`` is what any WebSocket round trip of one block
costs on this machine, and ``x plain`` is the protocol's overhead per chunk over it
(the goal is at most 1.5x). Because a shared machine's load moves wall times, it also
prints CPU time per chunk (client: ``time.process_time``, every thread; server: the
kernel's per-thread run time, ``/proc/PID/task/*/schedstat``), the protocol's CPU
overhead and its ratio to plain websockets' CPU time. Prints figures; asserts nothing.

``--codecs`` compares H.264 and JPEG only: encode + decode in this process (bytes per
frame, ms per block, PSNR), then the same requests through a server in this process
with the codec negotiated in ``hello`` (what the server chose, bytes per frame, ms per
block and the ms added over the backend in-process).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from game.world.backends import make_backend  # noqa: E402
from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest  # noqa: E402
from game.world.server import ServerConfig, ServerThread, backend_factory, create_app  # noqa: E402
from game.world.wire import encode_block, generate_message, request_text  # noqa: E402

TOKEN = "bench-token-" + os.urandom(16).hex()
#: The plain server gets the same malloc settings the world server sets on itself (reuse_block_memory).
TUNED = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(port: int, size: str, backend: str = "procedural") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "game.world.server", "--backend", backend, "--port", str(port),
                             "--size", size, "--max-sessions", "8"], env={**os.environ, "WORLDLOOM_TOKEN": TOKEN},
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    return proc


PLAIN_SERVER = """
import asyncio, sys
from websockets.asyncio.server import serve
port, payload = int(sys.argv[1]), bytes(int(sys.argv[2]))
async def handle(ws):
    async for _ in ws:
        await ws.send(payload)
async def main():
    async with serve(handle, "127.0.0.1", port, max_size=None, compression=None):
        await asyncio.Future()
asyncio.run(main())
"""


def cpu_s(pid: int) -> float:
    """CPU seconds process ``pid`` has run, all its threads (nanosecond counters); 0.0 where unknown."""
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


class Plain:
    """A bare websockets server (own process) answering each request text with one binary message of
    ``reply_bytes``, and a client timing one round trip (wall ms, client CPU ms)."""

    def __init__(self, request_text: str, reply_bytes: int) -> None:
        from websockets.sync.client import connect

        port = free_port()
        self.request_text = request_text
        self.proc = subprocess.Popen([sys.executable, "-c", PLAIN_SERVER, str(port), str(reply_bytes)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **TUNED})
        wait_port(port, self.proc)
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(f"ws://127.0.0.1:{port}", max_size=None, compression=None,
                                                   proxy=None))

    def round_trip(self) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        self.ws.send(self.request_text)
        self.ws.recv()
        return (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0

    def close(self) -> None:
        self.stack.close()
        self.proc.kill()
        self.proc.wait(10)


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("a bench server did not start")


def request(seq: int, blocks: int) -> WorldRequest:
    return WorldRequest("main", seq, 12 * blocks, f"a meadow at dusk {seq % 3}", switch_mode="plain", scene=SCENE,
                        actions=("d",) * 12 if seq % 2 else ())


def timed(backend: Any, request: WorldRequest) -> tuple[float, float, float]:
    """Wall ms and this process's CPU ms to receive every block of ``request``, and the bytes per frame."""
    t0, c0 = time.perf_counter(), time.process_time()
    chunks = list(backend.generate(request))
    ms, cpu = (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0
    return ms, cpu, float(chunks[0].memory.get("bytes_per_frame", 0.0))


def codec_figures(w: int, h: int, blocks: int) -> int:
    """H.264 (PyAV, one stream per session) vs JPEG (per frame) on a procedural shot, in this process:
    bytes per frame, added latency per 12-frame block (encode + decode) and PSNR. Prints; asserts nothing."""
    import numpy as np

    from game.world.video_wire import H264Decoder, H264Stream, h264_available
    from game.world.wire import decode_frames, encode_frames

    local = ProceduralBackend(w, h)
    local.start(SessionStart("main", 1, "a meadow at dusk"))
    shot = [c.frames for seq in range(1, blocks + 1) for c in local.generate(
        WorldRequest("main", seq, 12, "a meadow at dusk", "plain", scene=SCENE, actions=("d",) * 12))]

    def psnr(a: np.ndarray, b: np.ndarray) -> float:
        mse = float(((a.astype(np.float64) - b) ** 2).mean())
        return 10 * np.log10(255.0 ** 2 / max(mse, 1e-9))

    print(f"codecs on a {w}x{h} procedural shot of {blocks} blocks of 12 frames (in this process)")
    print(f"{'codec':6s} {'bytes/frame':>12s} {'ms/block':>9s} {'PSNR dB':>8s}")
    rows: list[tuple[str, float, float, float]] = []
    sizes_j, ms_j, q_j = 0, [], []
    for blk in shot:
        t0 = time.perf_counter()
        payload, sizes = encode_frames(blk, "jpeg")
        back = decode_frames(payload, "jpeg", blk.shape, sizes)
        ms_j.append((time.perf_counter() - t0) * 1000.0)
        sizes_j += len(payload)
        q_j.append(psnr(back, blk))
    rows.append(("jpeg", sizes_j / (12 * blocks), statistics.median(ms_j), statistics.mean(q_j)))
    if h264_available():
        enc, dec = H264Stream(w, h, 24.0), H264Decoder()
        total, ms_h, q_h = 0, [], []
        for blk in shot:
            t0 = time.perf_counter()
            payload, sizes = enc.encode(blk)
            back = dec.decode(payload, sizes)
            ms_h.append((time.perf_counter() - t0) * 1000.0)
            total += len(payload)
            q_h.append(psnr(back, blk))
        rows.append(("h264", total / (12 * blocks), statistics.median(ms_h), statistics.mean(q_h)))
    else:
        print("h264: PyAV with libx264 is not installed; JPEG is the fallback")
    for name, bpf, ms, q in rows:
        print(f"{name:6s} {bpf:12.0f} {ms:9.1f} {q:8.1f}")
    return negotiated_figures(w, h, blocks)


def negotiated_figures(w: int, h: int, requests: int) -> int:
    """The same requests through ``worldloom serve`` on 127.0.0.1 (in this process) per negotiated codec,
    interleaved with the same backend in-process: bytes per frame, ms per 12-frame block, added ms."""
    app = create_app(backend_factory("procedural", width=w, height=h), ServerConfig(token=TOKEN, max_sessions=8))
    thread = ServerThread(app, port=free_port()).start()
    print(f"through worldloom serve on 127.0.0.1, {requests} requests of 1 block, codec negotiated in hello")
    print(f"{'asked':6s} {'got':6s} {'bytes/frame':>12s} {'remote ms':>10s} {'in-process':>11s} {'added ms':>9s}")
    try:
        for enc in ("jpeg", "h264"):
            remote = RemoteBackend(thread.url, token=TOKEN, width=w, height=h, encoding=enc)
            local = ProceduralBackend(w, h)
            for b in (remote, local):
                b.start(SessionStart("main", 1, "a meadow at dusk"))
            loc_ms, rem_ms, bpf = [], [], []
            for seq in range(1, requests + 1):
                req = WorldRequest("main", seq, 12, "a meadow at dusk", "plain", scene=SCENE, actions=("d",) * 12)
                loc_ms.append(timed(local, req)[0])
                ms, _, b = timed(remote, req)
                rem_ms.append(ms)
                bpf.append(b)
            got = remote.encoding_used
            remote.close()
            lm, rm = statistics.median(loc_ms[2:]), statistics.median(rem_ms[2:])  # after the warm-up
            print(f"{enc:6s} {got:6s} {statistics.mean(bpf[1:]):12.0f} {rm:10.1f} {lm:11.1f} {rm - lm:9.1f}")
    finally:
        thread.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="160x90")
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--blocks", type=int, default=1, help="blocks of 12 frames per request")
    p.add_argument("--in-thread", action="store_true", help="run the server in this process")
    p.add_argument("--backend", choices=("procedural", "null"), default="procedural",
                   help="the served (and in-process) backend; null makes frames at almost no cost, so the "
                        "overhead is the wire's alone")
    p.add_argument("--quick", action="store_true", help="at most 60 requests, raw encoding only")
    p.add_argument("--codecs", action="store_true",
                   help="only H.264 vs JPEG: bytes/frame and latency in-process, then negotiated through the server")
    args = p.parse_args(argv)
    if args.quick:
        args.requests = min(args.requests, 60)
    w, h = (int(v) for v in args.size.split("x"))
    if args.codecs:
        return codec_figures(w, h, max(4, args.blocks))
    port = free_port()
    proc = None
    thread = None
    if args.in_thread:
        app = create_app(backend_factory(args.backend, width=w, height=h), ServerConfig(token=TOKEN, max_sessions=8))
        thread = ServerThread(app, port=port).start()
    else:
        proc = spawn(port, args.size, args.backend)
    url = f"ws://127.0.0.1:{port}"
    print(f"{args.backend} {w}x{h}, {args.blocks} block(s) of 12 frames per chunk, {args.requests} requests per "
          f"encoding, server {'in this process' if args.in_thread else 'in its own process'} on 127.0.0.1")
    print(f"{'encoding':9s} {'in-process ms':>14s} {'remote ms':>10s} {'overhead/chunk':>15s} {'overhead/block':>15s} "
          f"{'bytes/frame':>12s} {'raw bytes/frame':>16s}")
    probe = make_backend(args.backend, width=w, height=h)  # the sizes the raw protocol sends, for the baseline
    probe.start(SessionStart("main", 1, "a meadow at dusk"))
    block_msg = encode_block(next(iter(probe.generate(request(1, 1)))), "raw", block=0)
    req_text = generate_message(request_text(request(1, args.blocks)), 0)
    plain = Plain(req_text, len(block_msg))
    server_pid = 0 if proc is None else proc.pid
    try:
        for enc in ("raw",) if args.quick else ("raw", "jpeg", "webp", "h264"):
            t_conn = time.perf_counter()
            remote = RemoteBackend(url, token=TOKEN, width=w, height=h, encoding=enc)
            connect_ms = (time.perf_counter() - t_conn) * 1000.0
            local = make_backend(args.backend, width=w, height=h)
            for b in (remote, local):
                b.start(SessionStart("main", 1, "a meadow at dusk"))
            loc: list[tuple[float, float]] = []
            rem: list[tuple[float, float]] = []
            pln: list[tuple[float, float]] = []
            bpf = 0.0
            srv: list[float] = []  # the servers' CPU ms per request (nanosecond counters, read around each)
            psrv: list[float] = []
            for seq in range(1, args.requests + 1):  # interleaved, so the machine's load falls on all alike
                req = request(seq, args.blocks)
                loc.append(timed(local, req)[:2])
                s0 = cpu_s(server_pid) if server_pid else 0.0
                ms, cpu, bpf = timed(remote, req)
                srv.append((cpu_s(server_pid) - s0) * 1000.0 if server_pid else 0.0)
                rem.append((ms, cpu))
                if enc == "raw":
                    p0 = cpu_s(plain.proc.pid)
                    trips = [plain.round_trip() for _ in range(args.blocks)]
                    psrv.append((cpu_s(plain.proc.pid) - p0) * 1000.0)
                    pln.append((sum(t for t, _ in trips), sum(c for _, c in trips)))
            remote.close()
            lm, rm = (statistics.median(x[0] for x in v[2:]) for v in (loc, rem))  # the first two warm up
            print(f"{enc:9s} {lm:14.2f} {rm:10.2f} {rm - lm:15.2f} {(rm - lm) / args.blocks:15.2f} {bpf:12.0f} "
                  f"{w * h * 3:16d}   (connect {connect_ms:.1f} ms)")
            if enc != "raw":
                continue
            pm = statistics.median(x[0] for x in pln[2:])
            print(f"plain     {'':14s} {pm:10.2f}   plain websockets, the same messages per chunk (request "
                  f"{len(req_text)} B, one binary reply of {len(block_msg)} B per block)")
            print(f"raw protocol overhead per chunk, wall: {rm - lm:.2f} ms = {(rm - lm) / pm:.2f}x plain websockets "
                  "(goal <= 1.5x)")
            med = statistics.median
            lc = med(x[1] for x in loc[2:])
            rcc, rcs, pcc, pcs = (med(x) for x in ([x[1] for x in rem[2:]], srv[2:], [x[1] for x in pln[2:]], psrv[2:]))
            rc = med(x[1] + y for x, y in zip(rem[2:], srv[2:], strict=True))
            pc = med(x[1] + y for x, y in zip(pln[2:], psrv[2:], strict=True))
            where = "client + server" if server_pid else "this process: client and server"
            print(f"raw protocol overhead per chunk, CPU ({where}, median): in-process {lc:.2f} ms, remote {rc:.2f} ms "
                  f"({rcc:.2f} + {rcs:.2f}), overhead {rc - lc:.2f} ms; plain websockets {pc:.2f} ms ({pcc:.2f} + "
                  f"{pcs:.2f}); = {(rc - lc) / pc:.2f}x plain (goal <= 1.5x)")
    finally:
        plain.close()
        if proc is not None:
            proc.kill()
            proc.wait(10)
        if thread is not None:
            thread.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
