"""The two deployments of ``worldloom serve --engine ray``: the gateway and the world replicas.

    WORLDLOOM_TOKEN=... worldloom serve --engine ray --replicas 3 --port 8765
    WORLDLOOM_TOKEN=... worldloom play STORY --backend remote --url ws://127.0.0.1:8765

Two deployments (the single-process server, :mod:`game.world.server`, stays the default):

* **Gateway** (stateless, ``--gateways`` replicas): the FastAPI ingress with the one
  WebSocket route ``/ws`` and ``GET /health``. It checks the token (4401), the size and
  nesting of every inbound message (1009 / 4400) and the ``hello`` (version, client
  key, frame size) with the same code as the single-process server
  (:class:`~game.world.server.WorldServer`), chooses the connection's frame encoding,
  answers ``ping``, and passes every other message to the world deployment, routed by
  the client key (the root session id: forks and snapshots live in its backend, so they
  stay with it); an ``interrupt`` goes at once, beside the call making the block in
  flight (:meth:`WorldReplica.interrupt`), so the block is abandoned as in process.
  Frames come back raw; the gateway encodes them: raw to a loopback peer, else JPEG,
  WebP or PNG as the client asks (:meth:`Gateway.encoding`). The gateway never
  negotiates H.264 (a client listing ``h264`` in its ``codecs`` gets JPEG): see
  :meth:`Gateway.encoding` for why.
* **World** (``--replicas``, or autoscaled between ``--min-replicas`` and
  ``--max-replicas``; ``--gpus-per-replica``, ``--max-sessions`` sessions each): holds
  the sessions, each in a :class:`~game.world.slots.Slot` driven by the same
  ``WorldServer`` session logic as the single-process server. Requests are routed by
  Ray Serve's consistent-hash router on ``session_id`` (``handle.options(session_id=key)``)
  with no fallback replica, so a session's calls land on one replica while the set of
  replicas holds.

Sessions survive their replica: each session's backend is journaled
(:mod:`game.world.journal`) and after every block the new events and the slot's place
in its request go to the snapshot book (a detached Ray actor; with ``--snapshot-dir``
also append-only files). When a replica dies or is drained (scale-down), the ring
changes, the session's next call lands on another replica, which claims the session
from the book (raising its epoch, so the old replica can no longer write), replays the
journal on a fresh backend and answers the call: the client sees no reconnect and no
jump (the block it asked for is the one the old replica would have made). A call that
fails because its replica died is retried by the gateway for up to
``retry_s`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from game.errors import BackendError
from game.world.journal import JournaledBackend, Tapped, rebuild
from game.world.protocol import Backend
from game.world.server import (
    CLOSE_INTERNAL,
    CLOSE_REPLACED,
    CLOSE_UNAUTHORIZED,
    HELLO_TIMEOUT_S,
    Closed,
    ServerConfig,
    WorldServer,
    backend_factory,
    choose_encoding,
)
from game.world.slots import Current, Slot
from game.world.wire import Encoding, WireError, decode_block, dumps, encode_block, loads

log = logging.getLogger("worldloom.serve.ray")

#: The Ray namespace of the application and its snapshot book.
NAMESPACE = "serve"
#: Close code telling a client its session is gone and it should open it again (not final).
CLOSE_GONE = 1012
#: Ray Serve's consistent-hash router (sticky by ``session_id``), no fallback replica.
ROUTER = "ray.serve.experimental.consistent_hash_router.ConsistentHashRouter"
#: Out of a world replica: text and binary messages in order, or ``(code, reason)`` to close.
Out = list[Any]


@dataclass
class RaySettings:
    """How the Ray Serve deployment runs (see the module doc and ``worldloom serve --help``).

    Attributes:
        backend, backend_kwargs: the world backend each session gets (``make_backend``).
        config: the server's token and limits (``max_sessions`` is per world replica).
        replicas: world replicas when not autoscaled.
        min_replicas, max_replicas: autoscaling bounds (autoscaled when ``max_replicas > min_replicas``).
        target_sessions: busy sessions per replica the autoscaler aims at (``target_ongoing_requests``).
        gpus_per_replica, cpus_per_replica: Ray resources of one world replica.
        gateways: gateway replicas.
        snapshot_dir: a folder for the journals too ("" for the book's memory only).
        retry_s: how long the gateway retries a call whose replica died, seconds.
        app_name: the Serve application's name; the snapshot book is ``<app_name>-snapshots``.
    """

    backend: str
    backend_kwargs: dict[str, Any]
    config: ServerConfig
    replicas: int = 1
    min_replicas: int = 0
    max_replicas: int = 0
    target_sessions: float = 0.0
    gpus_per_replica: float = 0.0
    cpus_per_replica: float = 1.0
    gateways: int = 1
    snapshot_dir: str = ""
    retry_s: float = 60.0
    app_name: str = "worldloom"

    @property
    def book_name(self) -> str:
        return f"{self.app_name}-snapshots"


@dataclass
class _Relay:
    """Stands in for the client's WebSocket inside a world replica: keeps what the session logic sends."""

    out: Out = field(default_factory=list)
    client: Any = None  # no peer: the replica always makes raw frames, the gateway encodes them

    async def send_text(self, text: str) -> None:
        self.out.append(text)

    async def send_bytes(self, data: bytes) -> None:
        self.out.append(data)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.out.append((code, reason))


def _meta(slot: Slot) -> dict[str, Any]:
    """Where a slot stands at a block boundary (what a rebuild needs beside the journal)."""
    cur = slot.cur
    return {
        "started": slot.started,
        "cur": [cur.seq, cur.fp, cur.next_block, cur.it.gen] if cur is not None and isinstance(cur.it, Tapped)
        else None,
        "finished": slot.finished.gen if isinstance(slot.finished, Tapped) else None,
        "fps": [[s, f] for s, f in slot.fps.items()],
        "memory": [[m, r] for m, r in slot.memory_results.items()],
    }


class WorldReplica:
    """One world replica: sessions by client key, each journaled to the snapshot book at every block.

    Args:
        settings: the deployment's settings (as :func:`dataclasses.asdict` of :class:`RaySettings`).
    """

    def __init__(self, settings: dict[str, Any], book: Any = None, tag: str = "") -> None:
        s = settings
        self.config = ServerConfig(**s["config"])
        self.base = backend_factory(s["backend"], **s["backend_kwargs"])
        self.server = WorldServer(lambda options: JournaledBackend(self.base(options)), self.config)
        if book is None:  # in a Ray Serve replica (tests may hand in a book with the actor's ``.remote`` calls)
            import ray

            book = ray.get_actor(f"{s['app_name']}-snapshots", namespace=NAMESPACE)
            tag = tag or ray.get_runtime_context().get_actor_name() or ""
        self.book = book
        self.tag = tag or f"replica-{uuid.uuid4().hex[:8]}"
        self.epochs: dict[str, int] = {}
        self.conns: dict[str, str] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.rebuilt = 0
        self.rebuild_s = 0.0  # seconds spent replaying journals
        self.recent: dict[str, dict[int, dict[str, Any]]] = {}  # rebuilt sessions: their last requests by seq
        self._reaper: asyncio.Task[None] | None = None

    # -- the gateway's calls ---------------------------------------------------------------------------
    async def hello(self, conn: str, key: str, msg: dict[str, Any]) -> dict[str, Any]:
        """Open or resume (here, or from the book) the session ``msg`` names; what to send back."""
        self._start_reaper()
        async with self._lock(key):
            slot, _ = await self._claim(key, conn)
            relay = _Relay()
            before = set(self.server.slots)
            try:
                opened = await self.server.hello(relay, msg)
            except Closed:
                opened = None
            await self._forget(before - set(self.server.slots))
            if opened is not None:
                opened.ws, opened.encoding = conn, "raw"  # the gateway encodes for its peer
                self.conns[key] = conn
                if slot is None:  # a new session
                    self.epochs[key] = await self.book.create.remote(key, self.tag, self.server.options(msg))
                await self._flush(key, opened)
            return {"out": relay.out, "replica": self.tag}

    async def message(self, conn: str, key: str, msg: dict[str, Any]) -> dict[str, Any]:
        """Answer one message of a session's client (the session is claimed from the book if it moved here)."""
        self._start_reaper()
        async with self._lock(key):
            slot, moved = await self._claim(key, conn)
            if slot is None:
                return {"out": [(CLOSE_GONE, "this session is gone from the cluster: open it again")],
                        "replica": self.tag}
            if not moved and self.conns.get(key, conn) != conn:
                return {"out": [(CLOSE_REPLACED, "replaced by a newer connection of the same client")],
                        "replica": self.tag}
            self.conns[key] = conn
            relay = _Relay()
            with contextlib.suppress(Closed):
                await self.server.dispatch(relay, slot, self._resumable(key, slot, msg))
            if key in self.server.slots:
                await self._flush(key, slot)
            else:  # closed by the client
                await self._forget({key})
            return {"out": relay.out, "replica": self.tag}

    async def interrupt(self, conn: str, key: str, msg: dict[str, Any]) -> None:
        """The client's ``interrupt``, passed to its session's backend at once: not behind the session's
        lock, which the call making the block in flight holds (the backend abandons that block at its
        next step, as in process; one that cannot is cut after the block)."""
        slot = self.server.slots.get(key)
        if slot is not None and self.conns.get(key) == conn:
            self.server.interrupt(slot, msg)

    async def detach(self, conn: str, key: str, msg: dict[str, Any] | None = None) -> None:
        """The client's connection closed: its session waits out the grace period here."""
        slot = self.server.slots.get(key)
        if slot is not None and self.conns.get(key) == conn:
            slot.ws = None
            slot.detached_at = time.monotonic()

    async def whoami(self) -> dict[str, Any]:
        """This replica's actor name, its sessions, how many it rebuilt from the book and the seconds
        (wall) that took."""
        return {"replica": self.tag, "sessions": sorted(self.server.slots), "rebuilt": self.rebuilt,
                "rebuild_s": self.rebuild_s}

    def check_health(self) -> None:
        """Ray Serve's health probe: a replica is healthy while its event loop answers."""

    def __del__(self) -> None:
        """Drained or stopped (Ray Serve calls this once the calls in flight finished): close the
        backends; the sessions stay in the book for the replica their next call lands on."""
        server = getattr(self, "server", None)  # None if __init__ failed
        for slot in list(server.slots.values()) if server is not None else []:
            with contextlib.suppress(Exception):
                slot.backend.close()

    # -- sessions ------------------------------------------------------------------------------------------
    def _lock(self, key: str) -> asyncio.Lock:
        return self.locks.setdefault(key, asyncio.Lock())

    async def _claim(self, key: str, conn: str) -> tuple[Slot | None, bool]:
        """The session of ``key`` as the book has it: ``(slot, moved)``; rebuilt here if another
        replica held it (or this one lost track); ``(None, False)`` if the book has none."""
        slot = self.server.slots.get(key)
        epoch = self.epochs.get(key, -1) if slot is not None else -1
        claim = await self.book.claim.remote(key, self.tag, epoch)
        if claim is None:
            if slot is not None:
                await self.server.drop_slot(key)
            return None, False
        if claim["held"] and slot is not None:
            return slot, False
        if slot is not None:
            await self.server.drop_slot(key)
        t0 = time.monotonic()
        slot = await asyncio.to_thread(self._rebuild, key, claim)
        self.rebuild_s += time.monotonic() - t0
        slot.ws = conn
        self.server.slots[key] = slot
        self.epochs[key] = int(claim["epoch"])
        self.rebuilt += 1
        log.info("session %s moved to %s (epoch %d)", key, self.tag, claim["epoch"])
        return slot, True

    def _resumable(self, key: str, slot: Slot, msg: dict[str, Any]) -> dict[str, Any]:
        """``msg``, or for a rebuilt session a ``next`` this slot cannot answer (its old replica made that
        block, then died before the answer reached the gateway, which asked again) as a ``generate`` of
        the journaled request from that block (regenerated the way a reconnect is)."""
        recent = self.recent.get(key)
        if not recent or msg.get("op") != "next":
            return msg
        seq, block, cur = msg.get("seq"), msg.get("block"), slot.cur
        if cur is not None and cur.seq == seq and cur.next_block == block:
            return msg
        request = recent.get(seq) if isinstance(seq, int) else None
        return msg if request is None else {"op": "generate", "request": request, "from_block": block}

    def _rebuild(self, key: str, claim: dict[str, Any]) -> Slot:
        options, meta = dict(claim["options"]), claim["meta"] or {}
        gens = [e["request"] for e in claim["entries"] if e.get("k") == "gen"][-8:]
        self.recent[key] = {int(r["seq"]): r for r in gens if isinstance(r.get("seq"), int)}
        done = rebuild(lambda: self.base(options), claim["entries"])
        slot = Slot(key=key, backend=done.backend, caps=done.backend.capabilities(), encoding="raw",
                    started=bool(meta.get("started")))
        cur = meta.get("cur")
        if cur is not None and cur[3] in done.open:
            slot.cur = Current(int(cur[0]), str(cur[1]), done.open.pop(cur[3]), int(cur[2]))
        fin = meta.get("finished")
        if fin is not None and fin in done.open:
            slot.finished = done.open.pop(fin)
        for left in done.open.values():
            left.close()
        slot.fps = OrderedDict((int(s), str(f)) for s, f in meta.get("fps", []))
        slot.memory_results = OrderedDict((int(m), r) for m, r in meta.get("memory", []))
        return slot

    async def _flush(self, key: str, slot: Slot) -> None:
        """Write the session's new journal events and its place to the book (a block boundary)."""
        assert isinstance(slot.backend, JournaledBackend)
        events = slot.backend.journal.take()
        ok = await self.book.append.remote(key, self.tag, self.epochs.get(key, -1), events, _meta(slot))
        if not ok:  # another replica took it over: this copy is stale
            log.info("session %s is held elsewhere now; dropping the copy on %s", key, self.tag)
            await self.server.drop_slot(key)
            self.epochs.pop(key, None)
            self.recent.pop(key, None)

    async def _forget(self, keys: set[str]) -> None:
        """Sessions that ended here (closed, reaped or evicted): out of the book too."""
        for key in keys:
            self.epochs.pop(key, None)
            self.recent.pop(key, None)
            self.conns.pop(key, None)
            self.locks.pop(key, None)
            await self.book.drop.remote(key, self.tag)

    def _start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        period = max(0.05, min(1.0, self.config.grace_s / 4))
        while True:
            await asyncio.sleep(period)
            before = set(self.server.slots)
            await self.server.reap()
            await self._forget(before - set(self.server.slots))


class Gateway:
    """The stateless ingress: token, limits and ``hello`` checked here, everything else passed on.

    Args:
        world: the world deployment's handle.
        settings: as :func:`dataclasses.asdict` of :class:`RaySettings`.
    """

    def __init__(self, world: Any, settings: dict[str, Any]) -> None:
        self.world = world
        self.config = ServerConfig(**settings["config"])
        self.retry_s = float(settings["retry_s"])

        def no_backend(options: dict[str, Any]) -> Backend:
            raise BackendError("the gateway holds no sessions")

        self.server = WorldServer(no_backend, self.config)  # its checks only: the sessions live in World

    def encoding(self, hello: dict[str, Any], peer: str) -> Encoding:
        """The frame encoding of one connection (:func:`~game.world.server.choose_encoding` with no
        codecs): raw to a loopback ``peer`` with ``auto``, else the one the client asks for among raw,
        JPEG, WebP and PNG, else the server's ``--encoding`` (JPEG where that is H.264).

        Never H.264: each block comes from a replica raw and is encoded here on its own, while an
        H.264 stream is one encoder per session across its blocks (a key frame, then deltas), which
        would have to move with the session from replica to replica; use the single-process server
        for H.264.
        """
        return choose_encoding(str(hello.get("encoding", "auto")), peer, self.config.encoding)

    async def serve(self, ws: Any) -> None:
        """Handle one WebSocket connection until it closes (never raises). An ``interrupt`` is passed
        on as soon as it arrives (:meth:`_read`), not after the block in flight."""
        await ws.accept()
        srv, key, conn, attached = self.server, "", uuid.uuid4().hex, False
        try:
            if not srv.authorized(ws.headers.get("authorization", "")):
                await srv.close_with(ws, CLOSE_UNAUTHORIZED, "unauthorized: wrong or missing WORLDLOOM_TOKEN")
            hello = await srv.receive(ws, timeout=HELLO_TIMEOUT_S)
            key = await srv.check_hello(ws, hello)
            try:
                srv.options(hello)
            except WireError as exc:
                await srv.close_with(ws, 4400, exc.why)
            enc = self.encoding(hello, getattr(getattr(ws, "client", None), "host", "") or "")
            reply = await self._call("hello", conn, key, {**hello, "encoding": "raw"})
            attached = True
            await self._relay(ws, reply, enc, hello=True)
            inbox: asyncio.Queue[dict[str, Any] | BaseException] = asyncio.Queue()
            reader = asyncio.create_task(self._read(ws, conn, key, inbox))
            try:
                while True:
                    msg = await inbox.get()
                    if isinstance(msg, BaseException):
                        raise msg
                    if msg["op"] == "ping":
                        await ws.send_text(dumps({"op": "pong", "t": msg.get("t")}))
                        continue
                    await self._relay(ws, await self._call("message", conn, key, msg), enc)
            finally:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
        except Closed:
            pass
        except Exception as exc:  # a bug or a cluster that stays down must not take the gateway down
            log.warning("connection of %s failed: %s", key or "?", exc)
            with contextlib.suppress(Exception, Closed):
                await srv.close_with(ws, CLOSE_INTERNAL, f"world replicas unavailable: {type(exc).__name__}")
        finally:
            if attached:
                with contextlib.suppress(Exception):
                    await self.world.options(session_id=key).detach.remote(conn, key)

    async def _read(self, ws: Any, conn: str, key: str, inbox: asyncio.Queue[dict[str, Any] | BaseException]) -> None:
        """Read ``ws``'s messages into ``inbox`` (its end or failure last); an ``interrupt`` goes to the
        replica at once (:meth:`WorldReplica.interrupt`), while the message before it may still be
        making its block there."""
        try:
            while True:
                msg = await self.server.receive(ws)
                if msg.get("op") == "interrupt":
                    await self._call("interrupt", conn, key, msg)
                else:
                    await inbox.put(msg)
        except Exception as exc:  # Closed, or a cluster that stays down: the connection's loop raises it
            await inbox.put(exc)

    async def _call(self, method: str, conn: str, key: str, msg: dict[str, Any]) -> Any:
        """Call the world replica holding ``key``; a replica that died is retried (its sessions move)."""
        from ray.exceptions import ActorUnavailableError, RayActorError

        delay, deadline = 0.05, time.monotonic() + self.retry_s
        while True:
            try:
                handle = self.world.options(session_id=key)
                return await getattr(handle, method).remote(conn, key, msg)
            except (RayActorError, ActorUnavailableError) as exc:
                if time.monotonic() > deadline:
                    raise BackendError(f"no world replica answered for {self.retry_s:g} s") from exc
                log.info("world replica lost during %s of %s (%s): retrying", method, key, type(exc).__name__)
                await asyncio.sleep(delay)
                delay = min(1.0, delay * 2)

    async def _relay(self, ws: Any, reply: dict[str, Any], enc: str, hello: bool = False) -> None:
        """Send a replica's answer on: the hello with this connection's encoding and the replica's name,
        raw chunks encoded for the peer, a close as a close."""
        for item in reply["out"]:
            if isinstance(item, tuple | list):
                await self.server.close_with(ws, int(item[0]), str(item[1]))
            if isinstance(item, str):
                if hello:
                    msg = loads(item, 64 << 20)
                    if msg.get("op") == "hello":
                        item = dumps({**msg, "encoding": enc, "replica": reply.get("replica", "")})
                await ws.send_text(item)
            elif isinstance(item, bytes):
                if enc != "raw":  # a block: one binary message (wire v2), raw from the replica
                    chunk = decode_block(item)
                    item = encode_block(chunk, enc, self.config.quality, block=chunk.block)  # type: ignore[arg-type]
                await ws.send_bytes(item)
