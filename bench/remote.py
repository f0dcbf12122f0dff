"""Protocol overhead of the remote backend: the same requests in-process and through ``worldloom serve``.

    python bench/remote.py [--size 160x90] [--requests 40] [--blocks 1] [--in-thread] [--quick]
    python bench/remote.py --codecs [--size 320x180] [--blocks 12]

The same backend (procedural, small frames) serves the same requests twice in one
run, alternating request by request: once in this process, once through a
``worldloom serve`` on 127.0.0.1 (a separate process by default, as it would be on
a GPU machine; ``--in-thread`` runs it in this process). For each encoding (raw, as
loopback gets by default, then JPEG, WebP and H.264, as a network would) it prints the
median wall time per chunk (one request of ``--blocks`` blocks), the overhead per
chunk and per block (remote minus in-process) and the bytes per frame on the wire.

The baseline is plain ``websockets`` carrying the same bytes: a bare server in its own
process answers each request text with a text header and a binary payload of exactly
the sizes the raw protocol sent (the same asyncio ``websockets`` client library the
remote backend uses), so ``plain ms`` is what any WebSocket round trip of one chunk
costs on this machine, and ``x plain`` is the protocol's overhead per chunk over it
(the goal is at most 1.5x). Prints figures; asserts nothing.

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

from game.world.backends.procedural import ProceduralBackend  # noqa: E402
from game.world.backends.remote import RemoteBackend  # noqa: E402
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest  # noqa: E402
from game.world.server import ServerConfig, ServerThread, backend_factory, create_app  # noqa: E402
from game.world.wire import dumps, encode_chunk  # noqa: E402

TOKEN = "bench-token-" + os.urandom(16).hex()
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(port: int, size: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "game.world.server", "--backend", "procedural", "--port", str(port),
                             "--size", size, "--max-sessions", "8"], env={**os.environ, "WORLDLOOM_TOKEN": TOKEN},
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    return proc


PLAIN_SERVER = """
import asyncio, sys
from websockets.asyncio.server import serve
port, header, payload = int(sys.argv[1]), "h" * int(sys.argv[2]), bytes(int(sys.argv[3]))
async def handle(ws):
    async for _ in ws:
        await ws.send(header)
        await ws.send(payload)
async def main():
    async with serve(handle, "127.0.0.1", port, max_size=None, compression=None):
        await asyncio.Future()
asyncio.run(main())
"""


class Plain:
    """A bare websockets server (own process) answering each request text with a header and a payload
    of the given sizes, and a client timing one round trip (ms)."""

    def __init__(self, request_text: str, header_bytes: int, payload_bytes: int) -> None:
        from websockets.sync.client import connect

        port = free_port()
        self.request_text = request_text
        self.proc = subprocess.Popen([sys.executable, "-c", PLAIN_SERVER, str(port), str(header_bytes),
                                      str(payload_bytes)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, self.proc)
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(f"ws://127.0.0.1:{port}", max_size=None, compression=None,
                                                   proxy=None))

    def round_trip_ms(self) -> float:
        t0 = time.perf_counter()
        self.ws.send(self.request_text)
        self.ws.recv()
        self.ws.recv()
        return (time.perf_counter() - t0) * 1000.0

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


def timed(backend: Any, request: WorldRequest) -> tuple[float, float]:
    """Wall ms to receive every block of ``request``, and the bytes per frame reported."""
    t0 = time.perf_counter()
    chunks = list(backend.generate(request))
    ms = (time.perf_counter() - t0) * 1000.0
    return ms, float(chunks[0].memory.get("bytes_per_frame", 0.0))


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
                ms, b = timed(remote, req)
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
    p.add_argument("--quick", action="store_true", help="20 requests, raw encoding only")
    p.add_argument("--codecs", action="store_true",
                   help="only H.264 vs JPEG: bytes/frame and latency in-process, then negotiated through the server")
    args = p.parse_args(argv)
    if args.quick:
        args.requests = min(args.requests, 20)
    w, h = (int(v) for v in args.size.split("x"))
    if args.codecs:
        return codec_figures(w, h, max(4, args.blocks))
    port = free_port()
    proc = None
    thread = None
    if args.in_thread:
        app = create_app(backend_factory("procedural", width=w, height=h), ServerConfig(token=TOKEN, max_sessions=8))
        thread = ServerThread(app, port=port).start()
    else:
        proc = spawn(port, args.size)
    url = f"ws://127.0.0.1:{port}"
    print(f"procedural {w}x{h}, {args.blocks} block(s) of 12 frames per chunk, {args.requests} requests per encoding, "
          f"server {'in this process' if args.in_thread else 'in its own process'} on 127.0.0.1")
    print(f"{'encoding':9s} {'in-process ms':>14s} {'remote ms':>10s} {'overhead/chunk':>15s} {'overhead/block':>15s} "
          f"{'bytes/frame':>12s} {'raw bytes/frame':>16s}")
    probe = ProceduralBackend(w, h)  # the sizes the raw protocol sends, for the plain baseline
    probe.start(SessionStart("main", 1, "a meadow at dusk"))
    head, body = encode_chunk(next(iter(probe.generate(request(1, 1)))), "raw")
    req_text = dumps({"op": "generate", "request": request(1, args.blocks).to_json(), "from_block": 0})
    plain = Plain(req_text, len(dumps(head)) + 12, len(body))  # + the block number the server adds
    try:
        for enc in ("raw",) if args.quick else ("raw", "jpeg", "webp", "h264"):
            t_conn = time.perf_counter()
            remote = RemoteBackend(url, token=TOKEN, width=w, height=h, encoding=enc)
            connect_ms = (time.perf_counter() - t_conn) * 1000.0
            local = ProceduralBackend(w, h)
            for b in (remote, local):
                b.start(SessionStart("main", 1, "a meadow at dusk"))
            loc_ms, rem_ms, plain_ms, bpf = [], [], [], 0.0
            for seq in range(1, args.requests + 1):  # interleaved, so the machine's load falls on all alike
                req = request(seq, args.blocks)
                loc_ms.append(timed(local, req)[0])
                ms, bpf = timed(remote, req)
                rem_ms.append(ms)
                if enc == "raw":
                    plain_ms.append(sum(plain.round_trip_ms() for _ in range(args.blocks)))
            remote.close()
            lm, rm = statistics.median(loc_ms[2:]), statistics.median(rem_ms[2:])
            print(f"{enc:9s} {lm:14.2f} {rm:10.2f} {rm - lm:15.2f} {(rm - lm) / args.blocks:15.2f} {bpf:12.0f} "
                  f"{w * h * 3:16d}   (connect {connect_ms:.1f} ms)")
            if enc == "raw":
                pm = statistics.median(plain_ms[2:])
                print(f"plain     {'':14s} {pm:10.2f}   plain websockets, the same bytes per chunk (request "
                      f"{len(req_text)} B, header {len(dumps(head)) + 12} B, payload {len(body)} B per block)")
                print(f"raw protocol overhead per chunk: {rm - lm:.2f} ms = {(rm - lm) / pm:.2f}x plain websockets "
                      "(goal <= 1.5x)")
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
