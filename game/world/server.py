"""``worldloom serve``: any world backend behind a WebSocket, so a laptop can drive a model on a GPU machine.

    WORLDLOOM_TOKEN=... worldloom serve --backend diffusion --model PATH --port 8765
    WORLDLOOM_TOKEN=... worldloom play STORY --backend remote --url ws://127.0.0.1:8765

An ASGI app (FastAPI, run by uvicorn) with one WebSocket route, ``/ws``, speaking
:mod:`game.world.wire`. Client side: :class:`game.world.backends.remote.RemoteBackend`.

Security and limits:

* every connection must send ``Authorization: Bearer $WORLDLOOM_TOKEN``; a wrong or
  missing token is closed with code 4401 and a reason saying so (compared in
  constant time). The server does not start without a token;
* it binds to 127.0.0.1 unless ``--host`` says otherwise, and off loopback it
  requires TLS (``--tls-cert``, ``--tls-key``) unless ``--allow-insecure-remote``;
* the token must be at least 32 bytes (``game.limits.MIN_TOKEN_BYTES``; checked where the
  server is built, :class:`WorldServer`, not only by the CLI) unless
  ``--insecure-token``; ``GET /health`` answers ``ok`` and nothing more without it;
* an inbound message over ``--max-message-kib`` (1 MiB) is refused with code 1009
  and a reason, and one nested deeper than ``game.limits.MAX_DEPTH`` with 4400, before
  it is parsed; clients may not send binary messages; nothing is unpickled or evaluated;
* a client may ask for frames up to ``--max-side`` pixels a side and ``--max-pixels`` in
  all (2048, 1280x720), requests of up to ``--max-request-frames`` frames (2400), and a
  ``from_block`` within its request: the server never renders more than it was asked to
  send;
* at most ``--max-sessions`` sessions live at once; when they are all taken, a new
  client takes the slot of the session that vanished longest ago (its grace ends early),
  so clients that drop without closing never lock others out; only when every session
  is attached is one more closed with 4429 ("server busy").

Sessions: a client names itself with a random key in ``hello``; each key gets its own
backend instance (models shared through the loader's cache are the same weights, but
no state is shared), so nothing crosses between clients. When a connection drops the
session waits ``--grace`` seconds for the same key to come back: it then resumes where
it was (the block in flight, the last sent blocks, the memory-op results); after that
its backend is closed. A client that vanishes never takes the server down.

Blocks are pulled, one per ask (``generate`` for the first, ``next`` for the others),
so the backend never runs ahead of what the player is shown: a pre-empted request
advances the world exactly as far as it did in-process. Frames travel raw to a
loopback peer and otherwise as H.264 video when both sides have PyAV (the client's
``hello`` lists the ``codecs`` it decodes; one stream per session, a key frame after
each reconnect), else as JPEG (or WebP); the ``hello`` answer names the encoding
chosen (:func:`choose_encoding`) and each chunk's ``memory["bytes_per_frame"]`` says
what frames cost.

``interrupt`` (``{"op": "interrupt", "session": ID}``, no answer) is read while a block is
being made and passed at once to the session's backend
(:class:`~game.world.protocol.Interruptible`): the block in flight is abandoned at its next
step and the request ends with ``done``, as it would in process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, cast

import orjson

from game import limits
from game.errors import BackendError, WorldloomError
from game.world.backends import make_backend
from game.world.protocol import Backend, Capabilities, FrameChunk, WorldRequest, interrupt
from game.world.slots import END, Current, Slot, Worker, settle
from game.world.video_wire import H264Sender, h264_available
from game.world.wire import (
    MAX_JSON_BYTES,
    MAX_SIDE,
    WIRE_VERSION,
    Encoding,
    WireError,
    caps_json,
    dumps,
    encode_block,
    is_loopback,
    loads,
    memory_op_from_json,
    memory_result_json,
    request_from_json,
    reuse_block_memory,
    session_start_from_json,
)

log = logging.getLogger("worldloom.serve")

#: Close codes (4000-4999 are the application's own).
CLOSE_UNAUTHORIZED = 4401
CLOSE_BAD_MESSAGE = 4400
CLOSE_BUSY = 4429
CLOSE_REPLACED = 4409
CLOSE_TOO_BIG = 1009
CLOSE_INTERNAL = 1011
#: Seconds a new connection has to send ``hello``.
HELLO_TIMEOUT_S = 10.0
#: Messages of a client read ahead while one is answered (the client sends one at a time, and
#: ``interrupt`` while it waits; more ahead only waits, so a flood cannot pile up).
READ_AHEAD = 4
_CLIENT_KEY = re.compile(r"^[A-Za-z0-9_-]{8,64}$")

#: Builds one session's backend from the client's options (``width``, ``height``).
BackendFactory = Callable[[dict[str, Any]], Backend]


@dataclass
class ServerConfig:
    """How the server runs.

    Attributes:
        token: the shared secret (``WORLDLOOM_TOKEN``); required.
        max_sessions: sessions alive at once (attached or in their grace period).
        max_message_bytes: largest inbound JSON message.
        grace_s: how long a dropped session waits for its client to come back.
        encoding: frame encoding for peers off loopback: ``h264`` (where the client decodes it,
            else JPEG), ``jpeg``, ``webp`` or ``png`` (lossless); a client may ask for another.
        quality: JPEG / WebP quality, 1-100.
        replay_blocks: sent blocks kept per session for re-sends after a reconnect (at least
            the newest one is always kept, so a resume never needs the backend to replay).
        replay_bytes: byte cap on the older kept blocks.
        allow_client_size: let clients choose the frame size (``width``, ``height``, 16 to ``max_side``).
        max_side: largest frame side a client may ask for, pixels (``hello`` and ``start``).
        max_pixels: largest frame area a client may ask for, pixels.
        max_request_frames: most frames one request may ask for (``min_frames``); ``from_block``
            must lie within the request.
        max_depth: deepest JSON nesting of an inbound message.
        insecure_token: accept a token shorter than ``game.limits.MIN_TOKEN_BYTES`` (``--insecure-token``).
    """

    token: str
    max_sessions: int = 4
    max_message_bytes: int = MAX_JSON_BYTES
    grace_s: float = 60.0
    encoding: Encoding = "h264"
    quality: int = 90
    replay_blocks: int = 4
    replay_bytes: int = 256 << 20
    allow_client_size: bool = True
    max_side: int = limits.MAX_SESSION_SIDE
    max_pixels: int = limits.MAX_SESSION_PIXELS
    max_request_frames: int = limits.MAX_REQUEST_FRAMES
    max_depth: int = limits.MAX_DEPTH
    insecure_token: bool = False


class Closed(Exception):
    """The peer went away (or was closed by us)."""


def choose_encoding(wanted: str, peer: str, default: Encoding, codecs: Any = (),
                    size: tuple[int, int] = (2, 2)) -> Encoding:
    """The frame encoding of one connection, from the client's ``hello``.

    ``wanted`` is what the client asked for (``auto`` or an encoding), ``codecs`` what it
    can decode, ``default`` the server's choice off loopback. H.264 is chosen only where
    both sides have it (this side: :func:`~game.world.video_wire.h264_available`; the
    client: ``"h264"`` in ``codecs``) and the frame ``size`` (width, height) is even;
    otherwise it falls back to ``default`` (JPEG where the default is H.264). ``auto``
    gives raw frames to a loopback ``peer``.
    """
    fallback: Encoding = "jpeg" if default == "h264" else default
    h264_ok = isinstance(codecs, list | tuple) and "h264" in codecs and not size[0] % 2 and not size[1] % 2 \
        and h264_available()
    if wanted in ("raw", "jpeg", "webp", "png"):
        return cast(Encoding, wanted)
    if wanted == "h264":
        return "h264" if h264_ok else fallback
    if is_loopback(peer):
        return "raw"
    return "h264" if default == "h264" and h264_ok else fallback


def _fingerprint(data: Any) -> str:
    try:  # orjson: ~10x quicker than json.dumps on a request; json for what it cannot write (huge integers)
        text = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = json.dumps(data, sort_keys=True).encode("utf-8")
    return hashlib.blake2b(text, digest_size=12).hexdigest()


def _reason(text: str) -> str:
    """A close reason cut to the 123 bytes WebSocket allows."""
    raw = text.encode("utf-8")[:120]
    return raw.decode("utf-8", "ignore")


def token_problem(token: str, insecure: bool = False) -> str:
    """``""`` if ``token`` may guard a server, else why not: empty, or shorter than
    ``game.limits.MIN_TOKEN_BYTES`` bytes (UTF-8) without ``insecure``."""
    if not token:
        return "the world server needs a token (WORLDLOOM_TOKEN)"
    size = len(token.encode("utf-8"))
    if size < limits.MIN_TOKEN_BYTES and not insecure:
        return (f"WORLDLOOM_TOKEN is {size} bytes; use {limits.MIN_TOKEN_BYTES} or more random bytes "
                "(python -c 'import secrets; print(secrets.token_urlsafe(32))'), or pass --insecure-token")
    return ""


def _error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, WorldloomError):
        return {"op": "error", "message": str(exc), "why": exc.why, "where": exc.where, "hint": exc.hint}
    return {"op": "error", "message": f"backend failed: {type(exc).__name__}: {exc}", "why": str(exc),
            "where": "", "hint": ""}


class WorldServer:
    """The session registry and the WebSocket protocol (see the module doc).

    Args:
        factory: builds a backend for a new session from the client's options.
        config: limits and the token.

    Raises:
        BackendError: no token, or one shorter than ``game.limits.MIN_TOKEN_BYTES`` bytes
            unless ``config.insecure_token``.
    """

    def __init__(self, factory: BackendFactory, config: ServerConfig) -> None:
        problem = token_problem(config.token, config.insecure_token)
        if problem:
            raise BackendError(problem, hint="set WORLDLOOM_TOKEN to a long random secret")
        self.factory = factory
        self.config = config
        self.slots: dict[str, Slot] = {}
        self._reaper: asyncio.Task[None] | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """Starts the reaper of expired sessions; closes every backend on shutdown."""
        self._reaper = asyncio.create_task(self._reap_forever())
        try:
            yield
        finally:
            self._reaper.cancel()
            for key in list(self.slots):
                await self.drop_slot(key)

    async def _reap_forever(self) -> None:
        period = max(0.05, min(1.0, self.config.grace_s / 4))
        while True:
            await asyncio.sleep(period)
            await self.reap()

    async def reap(self) -> int:
        """Close the sessions whose grace period is over; returns how many."""
        now = time.monotonic()
        expired = [k for k, s in self.slots.items() if s.ws is None and now - s.detached_at > self.config.grace_s]
        for key in expired:
            await self.drop_slot(key)
        return len(expired)

    async def make_room(self) -> bool:
        """Whether a new session fits: reaps, then, if every slot is taken, closes the session
        that vanished longest ago (a detached one, waiting out its grace)."""
        await self.reap()
        if len(self.slots) < self.config.max_sessions:
            return True
        detached = [s for s in self.slots.values() if s.ws is None]
        if not detached:
            return False
        oldest = min(detached, key=lambda s: s.detached_at)
        log.info("session %s evicted for a new client (vanished %.1f s ago)", oldest.key,
                 time.monotonic() - oldest.detached_at)
        await self.drop_slot(oldest.key)
        return True

    async def drop_slot(self, key: str) -> None:
        """Close a session's backend and forget it (nothing if there is no such session)."""
        slot = self.slots.pop(key, None)
        if slot is None:
            return

        def close() -> None:
            settle(slot)
            if slot.cur is not None:
                with contextlib.suppress(Exception):
                    close_it = getattr(slot.cur.it, "close", None)
                    if close_it is not None:
                        close_it()
            with contextlib.suppress(Exception):
                slot.backend.close()

        try:
            await slot.worker.run(close)
        finally:
            slot.worker.stop()

    # -- one connection ------------------------------------------------------------------------
    async def serve(self, ws: Any) -> None:
        """Handle one WebSocket connection until it closes (never raises)."""
        await ws.accept()
        slot: Slot | None = None
        try:
            if not self.authorized(ws.headers.get("authorization", "")):
                await self.close_with(ws, CLOSE_UNAUTHORIZED, "unauthorized: wrong or missing WORLDLOOM_TOKEN")
                return
            hello = await self.receive(ws, timeout=HELLO_TIMEOUT_S)
            slot = await self.hello(ws, hello)
            if slot is None:
                return
            inbox: asyncio.Queue[dict[str, Any] | BaseException] = asyncio.Queue(READ_AHEAD)
            reader = asyncio.create_task(self._read(ws, slot, inbox))
            try:
                while True:
                    msg = await inbox.get()
                    if isinstance(msg, BaseException):
                        raise msg
                    if not await self.dispatch(ws, slot, msg):
                        return
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
        except Closed:
            pass
        except Exception:  # a bug here must not take the server down
            log.exception("connection failed")
            with contextlib.suppress(Exception):
                await self.close_with(ws, CLOSE_INTERNAL, "internal server error")
        finally:
            if slot is not None and slot.ws is ws:
                slot.ws = None
                slot.detached_at = time.monotonic()

    async def _read(self, ws: Any, slot: Slot, inbox: asyncio.Queue[dict[str, Any] | BaseException]) -> None:
        """Read ``ws``'s messages into ``inbox`` (its end or failure last); an ``interrupt`` is done at once,
        while the message before it may still be making its block."""
        try:
            while True:
                msg = await self.receive(ws)
                if msg.get("op") == "interrupt":
                    self.interrupt(slot, msg)
                else:
                    await inbox.put(msg)
        except Exception as exc:  # Closed, or a bug: the connection's loop raises it
            await inbox.put(exc)

    def interrupt(self, slot: Slot, msg: dict[str, Any]) -> None:
        """Pass ``interrupt`` on to the session's backend (one that cannot is cut after its block)."""
        session = msg.get("session", "")
        if isinstance(session, str) and len(session) <= 256:
            interrupt(slot.backend, session)

    def authorized(self, header: str) -> bool:
        """Whether an ``Authorization`` header carries the token (compared in constant time)."""
        scheme, _, token = header.partition(" ")
        given = token.strip().encode("utf-8") if scheme.lower() == "bearer" else b""
        return hmac.compare_digest(given, self.config.token.encode("utf-8"))

    async def close_with(self, ws: Any, code: int, reason: str) -> NoReturn:
        """Close ``ws`` with ``code`` and ``reason`` (cut to what WebSocket allows), then raise :class:`Closed`."""
        with contextlib.suppress(Exception):
            await ws.close(code=code, reason=_reason(reason))
        raise Closed(reason)

    async def receive(self, ws: Any, timeout: float | None = None) -> dict[str, Any]:
        """The next control message of ``ws``, within the size and nesting limits (else ``ws`` is closed).

        Raises:
            Closed: the peer went away, or sent something refused (1009 too big, 4400 binary or bad JSON,
                no hello within ``timeout``).
        """
        try:
            msg = await asyncio.wait_for(ws.receive(), timeout) if timeout else await ws.receive()
        except TimeoutError:
            await self.close_with(ws, CLOSE_BAD_MESSAGE, f"no hello within {timeout:g} s")
        except Exception as exc:  # the transport broke
            raise Closed(str(exc)) from exc
        if msg.get("type") == "websocket.disconnect":
            raise Closed("client went away")
        text, data = msg.get("text"), msg.get("bytes")
        limit = self.config.max_message_bytes
        size = len(text.encode("utf-8")) if text is not None else len(data or b"")
        if size > limit:
            await self.close_with(ws, CLOSE_TOO_BIG, f"message too big: {size} bytes, limit {limit}")
        if text is None:
            await self.close_with(ws, CLOSE_BAD_MESSAGE, "clients send JSON text messages only")
        try:
            return loads(text, limit, self.config.max_depth)
        except WireError as exc:
            await self.close_with(ws, CLOSE_BAD_MESSAGE, exc.why)

    async def check_hello(self, ws: Any, msg: dict[str, Any]) -> str:
        """The client key of a ``hello`` of this wire version; anything else closes ``ws`` with 4400
        (raises :class:`Closed`)."""
        if msg.get("op") != "hello" or msg.get("v") != WIRE_VERSION:
            await self.close_with(ws, CLOSE_BAD_MESSAGE, f"expected hello, wire version {WIRE_VERSION}")
        key = str(msg.get("client", ""))
        if not _CLIENT_KEY.match(key):
            await self.close_with(ws, CLOSE_BAD_MESSAGE, "hello needs a client key of 8-64 letters, digits, - or _")
        return key

    async def hello(self, ws: Any, msg: dict[str, Any]) -> Slot | None:
        """Open or resume the session a ``hello`` names and answer it; ``None`` if its backend failed to start.

        Raises:
            Closed: the hello was refused (bad version or key, server busy, bad size) and ``ws`` closed.
        """
        key = await self.check_hello(ws, msg)
        slot = self.slots.get(key)
        resumed = slot is not None
        if slot is None:
            if not await self.make_room():
                await self.close_with(ws, CLOSE_BUSY, f"server busy: {len(self.slots)} sessions open, "
                                                  f"limit {self.config.max_sessions}")
            try:
                options = self.options(msg)
            except WireError as exc:
                await self.close_with(ws, CLOSE_BAD_MESSAGE, exc.why)
            try:
                backend = await asyncio.to_thread(self.factory, options)
                caps = backend.capabilities()
            except Exception as exc:
                await _send(ws, dumps(_error(exc)))
                await self.close_with(ws, CLOSE_INTERNAL, f"cannot start the backend: {exc}")
                return None
            wanted = str(msg.get("encoding", "auto"))
            peer = getattr(getattr(ws, "client", None), "host", "") or ""
            enc = choose_encoding(wanted, peer, self.config.encoding, msg.get("codecs", ()), (caps.width, caps.height))
            slot = Slot(key=key, backend=backend, caps=caps, encoding=enc, worker=Worker(key[:16]),
                        video=H264Sender(caps.fps) if enc == "h264" else None)
            self.slots[key] = slot
        elif slot.ws is not None and slot.ws is not ws:
            old = slot.ws
            slot.ws = None
            with contextlib.suppress(Exception):
                await old.close(code=CLOSE_REPLACED, reason="replaced by a newer connection of the same client")
        slot.ws = ws
        if resumed and slot.video is not None:
            slot.video.want_key()  # the client may lack the last block encoded: restart the stream there
        await _send(ws, dumps({"op": "hello", "v": WIRE_VERSION, "caps": caps_json(slot.caps), "resumed": resumed,
                                  "started": slot.started, "encoding": slot.encoding,
                                  "max_message_bytes": self.config.max_message_bytes}))
        return slot

    def options(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The backend options a ``hello`` asks for (``width``, ``height``), within the server's limits.

        Raises:
            WireError: a size that is not ``[width, height]`` or past ``max_side`` / ``max_pixels``.
        """
        size = msg.get("size")
        if not self.config.allow_client_size or size is None:
            return {}
        if not isinstance(size, list) or len(size) != 2:
            raise WireError("hello: size must be [width, height]")
        self.check_size(size[0], size[1], "hello", 16)
        return {"width": size[0], "height": size[1]}

    def check_size(self, width: Any, height: Any, where: str, least: int = 1) -> None:
        """Refuse a frame size past the server's own limits (``max_side``, ``max_pixels``).

        Raises:
            WireError: not whole numbers, a side outside ``least``..``max_side``, or an area over ``max_pixels``.
        """
        c = self.config
        if not all(isinstance(v, int) and not isinstance(v, bool) and least <= v <= c.max_side
                   for v in (width, height)):
            raise WireError(f"{where}: size must be whole numbers of pixels, {least}-{c.max_side} a side")
        if width * height > c.max_pixels:
            raise WireError(f"{where}: {width}x{height} is over this server's {c.max_pixels:,}-pixel frame limit")

    def check_request(self, request: WorldRequest, from_block: Any, fpb: int) -> int:
        """The block to start at, if the request keeps to the server's limits.

        Raises:
            WireError: ``min_frames`` over ``max_request_frames`` or under 1, or ``from_block`` not a
                block of this request (0 to its block count).
        """
        cap = self.config.max_request_frames
        if not 1 <= request.min_frames <= cap:
            raise WireError(f"generate: min_frames {request.min_frames} is outside this server's 1-{cap}")
        blocks = -(-request.min_frames // max(1, fpb))
        if not isinstance(from_block, int) or isinstance(from_block, bool) or not 0 <= from_block <= blocks:
            raise WireError(f"generate: from_block must be a block of the request, 0-{blocks}")
        return from_block

    async def dispatch(self, ws: Any, slot: Slot, msg: dict[str, Any]) -> bool:
        """Answer one message of a session's client (errors of the backend go back as ``error``).

        Raises:
            Closed: the client closed the session, or ``ws`` went away.
        """
        op = msg["op"]
        async with slot.lock:
            try:
                if op == "generate":
                    data = msg.get("request")
                    request = request_from_json(data)
                    block = self.check_request(request, msg.get("from_block", 0), slot.caps.frames_per_block)
                    await self._block(ws, slot, request.seq, _fingerprint(data), block, request)
                elif op == "next":
                    seq, nxt = msg.get("seq"), msg.get("block")
                    if not (isinstance(seq, int) and isinstance(nxt, int)):
                        raise WireError("next: seq and block must be whole numbers")
                    await self._block(ws, slot, seq, slot.fps.get(seq, ""), nxt, None)
                elif op == "start":
                    start = session_start_from_json(msg.get("start"))
                    if start.width is not None or start.height is not None:
                        self.check_size(start.width or slot.caps.width, start.height or slot.caps.height, "start")
                    await slot.worker.run(_settled, slot, slot.backend.start, start)
                    slot.started = True
                    self._forget_requests(slot)
                    await _send(ws, dumps({"op": "started"}))
                elif op == "memory":
                    await self._memory(ws, slot, msg)
                elif op == "ping":
                    await _send(ws, dumps({"op": "pong", "t": msg.get("t")}))
                elif op == "interrupt":  # sent in turn with the other messages: too late for the block in flight
                    self.interrupt(slot, msg)
                elif op == "close":
                    slot.ws = None
                    await self.drop_slot(slot.key)
                    await self.close_with(ws, 1000, "closed by the client")
                else:
                    await _send(ws, dumps({"op": "error", "message": f"unknown op {op!r}", "why": "", "where": "",
                                              "hint": ""}))
            except Closed:
                raise
            except Exception as exc:  # a backend or request error goes back to the client
                await _send(ws, dumps(_error(exc)))
        return True

    def _forget_requests(self, slot: Slot) -> None:
        if slot.cur is not None:
            with contextlib.suppress(Exception):
                getattr(slot.cur.it, "close", lambda: None)()
        slot.cur = None
        slot.sent.clear()
        slot.sent_bytes = 0
        slot.fps.clear()

    async def _memory(self, ws: Any, slot: Slot, msg: dict[str, Any]) -> None:
        mseq = int(msg.get("mseq", -1))
        cached = slot.memory_results.get(mseq)
        if cached is None:
            op = memory_op_from_json(msg.get("memop"))
            result = await slot.worker.run(_settled, slot, slot.backend.memory, op)
            cached = memory_result_json(result)
            slot.memory_results[mseq] = cached
            while len(slot.memory_results) > 32:
                slot.memory_results.popitem(last=False)
        await _send(ws, dumps({"op": "memory", "mseq": mseq, "result": cached}))

    async def _block(self, ws: Any, slot: Slot, seq: int, fp: str, block: int, request: Any) -> None:
        """Send block ``block`` of request ``seq``: from the replay buffer, the request in flight,
        or a fresh (deterministic) run of the request that skips the blocks already delivered."""
        if request is not None:
            slot.fps[seq] = fp
            while len(slot.fps) > 64:
                slot.fps.popitem(last=False)
        kept = slot.sent.get((seq, block))
        if kept is not None and slot.fps.get(seq) == fp:
            await _send(ws, kept)
            return
        message = await slot.worker.run(self._produce, slot, seq, fp, block, request)
        if message is None:
            await _send(ws, dumps({"op": "done", "seq": seq}))
            return
        slot.sent[(seq, block)] = message
        slot.sent_bytes += len(message)
        # the newest block always stays: a client lacks at most the one it was last sent
        while len(slot.sent) > max(1, self.config.replay_blocks) or (
                len(slot.sent) > 1 and slot.sent_bytes > self.config.replay_bytes):
            _, old = slot.sent.popitem(last=False)
            slot.sent_bytes -= len(old)
        slot.blocks_served += 1
        await _send(ws, message)

    def _produce(self, slot: Slot, seq: int, fp: str, block: int, request: Any) -> bytes | None:
        """In one worker thread (one hop off the event loop per block): finish the previous request,
        start or resume this one, take block ``block`` and encode it as one binary message
        (:func:`~game.world.wire.encode_block`); ``None`` past the end.

        Raises:
            BackendError: no request ``seq`` in progress at ``block`` and none given.
        """
        settle(slot)
        cur = slot.cur
        if cur is None or cur.seq != seq or cur.fp != fp or cur.next_block != block:
            if request is None:
                raise BackendError(f"no request {seq} in progress at block {block}", hint="send generate again")
            if cur is not None:
                with contextlib.suppress(Exception):
                    getattr(cur.it, "close", lambda: None)()
            slot.cur = None
            cur = Current(seq, fp, iter(slot.backend.generate(request)), 0)
            slot.cur = cur
            while cur.next_block < block:  # the client has these already (a regenerated replay)
                if next(cur.it, END) is END:
                    break
                cur.next_block += 1
        chunk = next(cur.it, END)
        if chunk is END:
            slot.cur = None
            return None
        assert isinstance(chunk, FrameChunk)
        cur.next_block += 1
        if chunk.last:  # its trailing code runs before the backend's next call (see _settle)
            slot.cur = None
            slot.finished = cur.it
        return encode_block(chunk, slot.encoding, self.config.quality, block=block, video=slot.video)


async def _send(ws: Any, data: str | bytes) -> None:
    """Send one message; a peer that is gone becomes :class:`Closed` (not an error to log)."""
    try:
        if isinstance(data, str):
            await ws.send_text(data)
        else:
            await ws.send_bytes(data)
    except Exception as exc:
        raise Closed(f"send failed: {exc}") from exc


def _settled(slot: Slot, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)`` once the slot's finished request has run to its end (in a worker thread)."""
    settle(slot)
    return call(*args)


def create_app(factory: BackendFactory, config: ServerConfig) -> Any:
    """The FastAPI app: ``GET /health`` (``ok``; with the token, the session count too) and the WebSocket ``/ws``.

    Raises:
        BackendError: FastAPI is not installed, or no token or a short one (see :class:`WorldServer`).
    """
    try:
        from fastapi import FastAPI
        from starlette.responses import JSONResponse, PlainTextResponse
        from starlette.routing import Route, WebSocketRoute
    except ImportError as exc:
        raise BackendError(f"worldloom serve needs fastapi and uvicorn: {exc}",
                           hint="pip install 'worldloom[remote]'") from exc
    server = WorldServer(factory, config)
    app = FastAPI(title="worldloom world server", lifespan=server.lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None)
    app.state.world = server

    async def health(request: Any) -> Any:  # only "ok" to a caller without the token
        if not server.authorized(request.headers.get("authorization", "")):
            return PlainTextResponse("ok")
        return JSONResponse({"ok": True, "sessions": len(server.slots), "max_sessions": config.max_sessions})

    async def world(ws: Any) -> None:  # a plain Starlette route: no dependency injection on the socket
        await server.serve(ws)

    app.router.routes.append(Route("/health", health, methods=["GET"]))
    app.router.routes.append(WebSocketRoute("/ws", world))
    return app


def backend_factory(name: str, **base: Any) -> BackendFactory:
    """A factory building ``make_backend(name, **base, **client_options)`` for each session."""
    def make(options: dict[str, Any]) -> Backend:
        return make_backend(name, **{**base, **options})

    return make


class ServerThread:
    """Runs an app under uvicorn in a daemon thread on ``host`` (tests, benchmarks).

    Args:
        app: the ASGI app.
        host: address to bind (loopback by default).
        port: port, 0 for a free one (see :attr:`port`).
        max_message_bytes: the app's inbound limit (uvicorn is told 4x, so the app's own
            refusal, with its reason, is what a client normally sees).
        tls_cert, tls_key: PEM files to serve ``wss://``.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0,
                 max_message_bytes: int = MAX_JSON_BYTES, tls_cert: str | None = None,
                 tls_key: str | None = None) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host = host
        self.port = int(self.sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", ws_max_size=4 * max_message_bytes,
                                ws_per_message_deflate=False, timeout_graceful_shutdown=1, lifespan="on",
                                ssl_certfile=tls_cert, ssl_keyfile=tls_key)
        self.scheme = "wss" if tls_cert else "ws"
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       name="worldloom-serve", daemon=True)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}/ws"

    def start(self, timeout: float = 10.0) -> ServerThread:
        """Start and wait until it accepts connections.

        Raises:
            BackendError: it did not start within ``timeout`` seconds.
        """
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise BackendError("the world server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Ask it to exit and wait (open connections are closed with 1012)."""
        self.server.should_exit = True
        self.thread.join(timeout)
        with contextlib.suppress(OSError):
            self.sock.close()


# -- the CLI --------------------------------------------------------------------------------------------
def add_serve_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``worldloom serve`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``).

    The handler is set as ``args.handler`` (``(args) -> int``) and also returned by
    :func:`cmd_serve`.
    """
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve", help="run a world backend behind a WebSocket (token: WORLDLOOM_TOKEN)",
        description="Serve a world backend to remote players. The token comes from WORLDLOOM_TOKEN.")
    p.add_argument("--backend", default="procedural",
                   help="backend to serve (procedural, diffusion, null...; default %(default)s)")
    p.add_argument("--model", help="model folder or hub id (diffusion)")
    p.add_argument("--size", help="default frame size WIDTHxHEIGHT")
    p.add_argument("--backend-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra backend option (JSON value or text), e.g. steps=8; repeatable")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765)")
    p.add_argument("--tls-cert", help="TLS certificate (PEM); required off loopback")
    p.add_argument("--tls-key", help="TLS private key (PEM)")
    p.add_argument("--allow-insecure-remote", action="store_true",
                   help="serve off loopback without TLS (token and frames travel in clear)")
    p.add_argument("--max-sessions", type=int, default=4, help="sessions alive at once (default 4)")
    p.add_argument("--max-message-kib", type=int, default=MAX_JSON_BYTES // 1024,
                   help="largest inbound message, KiB (default %(default)s)")
    p.add_argument("--grace", type=float, default=60.0,
                   help="seconds a dropped session waits for its client (default %(default)s)")
    p.add_argument("--encoding", choices=("h264", "jpeg", "webp", "png"), default="h264",
                   help="frames off loopback (default h264 where the client has PyAV, else jpeg)")
    p.add_argument("--quality", type=int, default=90, help="JPEG / WebP quality, 1-100 (default %(default)s)")
    p.add_argument("--fixed-size", action="store_true", help="clients may not choose the frame size")
    p.add_argument("--max-side", type=int, default=limits.MAX_SESSION_SIDE,
                   help="largest frame side a client may ask, pixels (default %(default)s)")
    p.add_argument("--max-pixels", type=int, default=limits.MAX_SESSION_PIXELS,
                   help="largest frame area a client may ask, pixels (default %(default)s)")
    p.add_argument("--max-request-frames", type=int, default=limits.MAX_REQUEST_FRAMES,
                   help="most frames one request may ask for (default %(default)s)")
    p.add_argument("--insecure-token", action="store_true",
                   help=f"accept a WORLDLOOM_TOKEN shorter than {limits.MIN_TOKEN_BYTES} bytes")
    ray = p.add_argument_group("--engine ray (Ray Serve: a gateway and world replicas; see docs/backends.md)")
    ray.add_argument("--engine", choices=("process", "ray"), default="process",
                     help="process: this one process holds every session (default); ray: Ray Serve")
    ray.add_argument("--ray-address", default="", help="Ray cluster to join (auto: the one `ray start` made here); "
                     "default: start a local one")
    ray.add_argument("--replicas", type=int, default=1,
                     help="world replicas (fixed; see --max-replicas; default %(default)s)")
    ray.add_argument("--min-replicas", type=int, default=1,
                     help="autoscale from this many world replicas (default %(default)s) ...")
    ray.add_argument("--max-replicas", type=int, default=0, help="... to this many, by sessions per replica")
    ray.add_argument("--target-sessions", type=float, default=0.0,
                     help="busy sessions per replica the autoscaler aims at (default: half of --max-sessions)")
    ray.add_argument("--gpus-per-replica", type=float, default=-1.0, help="GPUs per world replica (default: 1 "
                     "when the cluster has a GPU, else 0)")
    ray.add_argument("--cpus-per-replica", type=float, default=1.0, help="CPUs per world replica (default %(default)s)")
    ray.add_argument("--gateways", type=int, default=1, help="gateway replicas (stateless; default %(default)s)")
    ray.add_argument("--snapshot-dir", default="", help="also keep session journals in this folder "
                     "(shared by the nodes) so they outlive the cluster's snapshot book")
    p.set_defaults(handler=cmd_serve)
    return p


def _backend_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if getattr(args, "model", None):
        kwargs["model"] = args.model
    if getattr(args, "size", None):
        try:
            w, h = (int(x) for x in str(args.size).lower().split("x"))
        except ValueError as exc:
            raise BackendError(f"bad --size {args.size!r}", hint="WIDTHxHEIGHT, e.g. 960x544") from exc
        kwargs.update(width=w, height=h)
    for item in getattr(args, "backend_arg", []) or []:
        key, sep, value = str(item).partition("=")
        if not sep or not key.isidentifier():
            raise BackendError(f"bad --backend-arg {item!r}", hint="KEY=VALUE, e.g. steps=8")
        try:
            kwargs[key] = json.loads(value)
        except ValueError:
            kwargs[key] = value
    return kwargs


def check_bind(host: str, tls: bool, allow_insecure: bool) -> str:
    """``""`` if serving on ``host`` is allowed, else why not (off loopback without TLS or the flag)."""
    if is_loopback(host) or tls or allow_insecure:
        return ""
    return (f"refusing to serve on {host} without TLS: pass --tls-cert and --tls-key, "
            "or --allow-insecure-remote on a network you trust")


def check_tls(cert: str, key: str) -> str:
    """``""`` if ``cert`` and ``key`` are readable PEM files that belong together, else why not."""
    import ssl

    for name, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not os.path.isfile(path):
            return f"{name} {path}: no such file"
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError, ValueError) as exc:
        return f"cannot use --tls-cert {cert} with --tls-key {key}: {exc}"
    return ""


@dataclass(frozen=True)
class ServePlan:
    """What ``worldloom serve`` checked before it runs: the token and limits, the backend and its caps."""

    config: ServerConfig
    backend: str
    backend_kwargs: dict[str, Any]
    caps: Capabilities
    tls: bool


def prepare_serve(args: argparse.Namespace) -> ServePlan | int:
    """Check the token, TLS, binding and limits of ``worldloom serve`` and load the backend once;
    the plan, or the exit code 2 after printing why not (to stderr)."""
    out = sys.stderr
    token = os.environ.get("WORLDLOOM_TOKEN", "")
    if not token:
        print("error: WORLDLOOM_TOKEN is not set (the server refuses to run without a token; "
              "e.g. export WORLDLOOM_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(32))'))",
              file=out)
        return 2
    problem = token_problem(token, args.insecure_token)
    if problem:
        print(f"error: {problem}", file=out)
        return 2
    tls = bool(args.tls_cert and args.tls_key)
    if bool(args.tls_cert) != bool(args.tls_key):
        print("error: --tls-cert and --tls-key go together", file=out)
        return 2
    if tls:
        problem = check_tls(args.tls_cert, args.tls_key)
        if problem:
            print(f"error: {problem}", file=out)
            return 2
    refusal = check_bind(args.host, tls, args.allow_insecure_remote)
    if refusal:
        print(f"error: {refusal}", file=out)
        return 2
    if (args.max_sessions < 1 or args.max_message_kib < 1 or args.grace < 0 or not 1 <= args.quality <= 100
            or not 16 <= args.max_side <= MAX_SIDE or args.max_pixels < 256 or args.max_request_frames < 1):
        print("error: --max-sessions, --max-message-kib, --max-pixels and --max-request-frames must be positive, "
              f"--max-side 16-{MAX_SIDE}, --grace not negative, --quality 1-100", file=out)
        return 2
    try:
        kwargs = _backend_kwargs(args)
        factory = backend_factory(args.backend, **kwargs)
        probe = factory({})  # fail now, not at the first player; loads a model once
        caps = probe.capabilities()
        probe.close()
    except WorldloomError as exc:
        print(f"error: {exc}", file=out)
        return 2
    if len(token.encode("utf-8")) < limits.MIN_TOKEN_BYTES:
        print("warning: WORLDLOOM_TOKEN is short (--insecure-token)", file=out)
    config = ServerConfig(token=token, max_sessions=args.max_sessions, max_message_bytes=args.max_message_kib * 1024,
                          grace_s=args.grace, encoding=args.encoding, quality=args.quality,
                          allow_client_size=not args.fixed_size, max_side=args.max_side, max_pixels=args.max_pixels,
                          max_request_frames=args.max_request_frames, insecure_token=args.insecure_token)
    return ServePlan(config, args.backend, kwargs, caps, tls)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the single-process server until interrupted; returns the exit code (2 for a configuration error)."""
    plan = prepare_serve(args)
    if isinstance(plan, int):
        return plan
    config, caps, tls, out = plan.config, plan.caps, plan.tls, sys.stderr
    app = create_app(backend_factory(plan.backend, **plan.backend_kwargs), config)
    reuse_block_memory()  # a block is a fresh half-megabyte or more: keep its pages for the next one
    import uvicorn

    scheme = "wss" if tls else "ws"
    print(f"serving {caps.backend} ({caps.width}x{caps.height}, {caps.fps:g} fps) on "
          f"{scheme}://{args.host}:{args.port}/ws, at most {config.max_sessions} sessions", file=out)
    uvicorn.run(app, host=args.host, port=args.port, ssl_certfile=args.tls_cert if tls else None,
                ssl_keyfile=args.tls_key if tls else None, ws_max_size=4 * config.max_message_bytes,
                ws_per_message_deflate=False, log_level="warning", timeout_graceful_shutdown=2)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m game.world.server [serve options]`` (the same as ``worldloom serve``)."""
    parser = argparse.ArgumentParser(prog="worldloom")
    sub = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(sub)
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] != "serve":
        args_list = ["serve", *args_list]
    args = parser.parse_args(args_list)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
