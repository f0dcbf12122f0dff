"""The ``remote`` backend: a world backend running in ``worldloom serve`` on another machine.

    WORLDLOOM_TOKEN=... worldloom play STORY --backend remote --url ws://HOST:8765

:class:`RemoteBackend` implements the protocol over one WebSocket
(:mod:`game.world.wire`, server in :mod:`game.world.server`). It is synchronous, like
every backend; blocks are pulled one at a time, so it never asks the server for
more than the player takes.

* **Token**: ``Authorization: Bearer $WORLDLOOM_TOKEN`` (or ``token=``). A refused
  connection raises :class:`~game.errors.BackendError` with the server's reason
  (wrong token, server busy, message too big).
* **Plain ws:// only to loopback**: the token would travel in clear, so a ``ws://``
  URL to another host is refused unless ``allow_insecure_remote=True`` (or
  ``WORLDLOOM_ALLOW_INSECURE_REMOTE=1``); use ``wss://`` (``ca_file=`` for a private CA).
* **Reconnect and resume**: when the connection drops mid-request the client
  reconnects (``reconnect_attempts`` tries, ``backoff_s`` doubling) with its client
  key; the server still holds its session for its grace period, and the request
  resumes at the next block the client lacks (re-sent from the server's replay buffer,
  or regenerated deterministically). If the server is unreachable, the call raises
  ``BackendError`` at once (the error bank's ``GuardedBackend`` then shows the
  procedural fallback); the next call tries again, and once the server is back the
  session goes on. A server that restarted has forgotten the session: the client
  opens it again with its original :class:`SessionStart` and sets :attr:`notice`.
* **Frames**: raw on loopback (a read-only view of the received message: no copy);
  otherwise H.264 when both sides have PyAV (the ``hello`` lists the codecs this client
  decodes; the server's ``--encoding`` decides among them), else JPEG, WebP or PNG;
  ``encoding=`` asks for one. :attr:`RemoteBackend.encoding_used` is what the server
  chose; each chunk's ``memory["bytes_per_frame"]`` says what a frame cost,
  ``memory["reconnects"]`` how often this client reconnected. A block is one binary
  message (:func:`~game.world.wire.decode_block`, decoded under the client's lock, so an
  H.264 stream decodes in the order it came); a request's JSON is encoded once and
  reused on a resume.
* **Interrupt**: :meth:`RemoteBackend.interrupt` sends ``interrupt`` beside the request
  in flight (not waiting for its block); ``worldloom serve`` passes it to the served
  backend at once, so the block being made is abandoned and the request ends, as in
  process. Through the Ray gateway it arrives after that block (the request is cut then).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, NoReturn
from urllib.parse import urlsplit, urlunsplit

from game.errors import BackendError
from game.world.protocol import Capabilities, FrameChunk, MemoryOp, MemoryResult, SessionStart, WorldRequest
from game.world.video_wire import H264Receiver, h264_decodable
from game.world.wire import (
    MAX_JSON_BYTES,
    WIRE_VERSION,
    WireError,
    caps_from_json,
    decode_block,
    dumps,
    generate_message,
    is_loopback,
    loads,
    memory_op_json,
    memory_result_from_json,
    request_text,
    reuse_block_memory,
    session_start_json,
    unknown_caps_fields,
)

#: Close codes after which reconnecting cannot help.
FINAL_CODES = {1008, 1009, 4400, 4401, 4429}


class _Lost(Exception):
    """The connection broke (reconnecting may help)."""


def _direct() -> dict[str, Any]:
    """``legacy=True`` where websockets has the flag (16+: a plain connection, no auto-reconnect wrapper)."""
    import inspect

    from websockets.sync.client import connect

    return {"legacy": True} if "legacy" in inspect.signature(connect).parameters else {}


def decodable_codecs() -> list[str]:
    """The frame encodings this client can decode (``h264`` where PyAV has an H.264 decoder)."""
    return ["raw", "jpeg", "webp", "png", *(["h264"] if h264_decodable() else [])]


def _is_loopback_host(host: str) -> bool:
    return is_loopback(host)


class RemoteBackend:
    """A backend served by ``worldloom serve`` (see the module doc).

    Args:
        url: ``ws://HOST:PORT`` or ``wss://HOST:PORT`` (``/ws`` is added when there is no path);
            default ``$WORLDLOOM_URL``.
        token: the shared secret; default ``$WORLDLOOM_TOKEN``.
        width, height: frame size to ask the server's backend for (default: the server's).
        encoding: ``auto`` (raw on loopback, else the server's choice), ``raw``, ``jpeg``, ``webp``,
            ``png`` (lossless) or ``h264`` (where both sides have PyAV; else the server's fallback, JPEG).
        connect_timeout_s: seconds to open a connection.
        block_timeout_s: seconds to wait for one block (a big model's first block is slow).
        reconnect_attempts: tries per broken call before it raises.
        backoff_s: first wait between tries (doubles).
        ca_file: a CA bundle to trust for ``wss://`` (a private certificate).
        allow_insecure_remote: allow ``ws://`` to a host that is not this machine.

    Raises:
        BackendError: no token, a refused or unreachable server (with its reason).
    """

    def __init__(self, url: str | None = None, *, token: str | None = None, width: int | None = None,
                 height: int | None = None, encoding: str = "auto", connect_timeout_s: float = 3.0,
                 block_timeout_s: float = 600.0, reconnect_attempts: int = 3, backoff_s: float = 0.1,
                 ca_file: str | None = None, allow_insecure_remote: bool = False,
                 max_message_bytes: int = MAX_JSON_BYTES) -> None:
        url = url or os.environ.get("WORLDLOOM_URL", "")
        if not url:
            raise BackendError("the remote backend needs the world server's URL",
                               hint="--url ws://HOST:PORT (or set WORLDLOOM_URL)")
        self.token = token if token is not None else os.environ.get("WORLDLOOM_TOKEN", "")
        if not self.token:
            raise BackendError("no token for the world server", where=url,
                               hint="set WORLDLOOM_TOKEN to the value the server was started with")
        parts = urlsplit(url)
        if parts.scheme not in ("ws", "wss") or not parts.hostname:
            raise BackendError(f"bad world server URL {url!r}", hint="ws://HOST:PORT or wss://HOST:PORT")
        insecure_ok = allow_insecure_remote or os.environ.get("WORLDLOOM_ALLOW_INSECURE_REMOTE") == "1"
        if parts.scheme == "ws" and not _is_loopback_host(parts.hostname) and not insecure_ok:
            raise BackendError(f"refusing to send WORLDLOOM_TOKEN unencrypted to {parts.hostname}", where=url,
                               hint="use wss:// (serve with --tls-cert/--tls-key), or allow_insecure_remote")
        self.url = urlunsplit((parts.scheme, parts.netloc, parts.path or "/ws", parts.query, ""))
        self.loopback = _is_loopback_host(parts.hostname)
        self.size = [width, height] if width and height else None
        self.encoding = encoding
        self.connect_timeout_s = connect_timeout_s
        self.block_timeout_s = block_timeout_s
        self.reconnect_attempts = max(1, reconnect_attempts)
        self.backoff_s = backoff_s
        self.max_message_bytes = max_message_bytes
        self._ssl: ssl.SSLContext | None = None
        if parts.scheme == "wss":
            self._ssl = ssl.create_default_context(cafile=ca_file)
        reuse_block_memory()  # each block is a fresh half-megabyte: keep its pages (see the function)
        self._client = uuid.uuid4().hex
        self._ws: Any = None
        self._lock = threading.RLock()
        self._send_lock = threading.Lock()  # interrupt() sends while the request's thread waits for a block
        self._start: SessionStart | None = None
        self._caps: Capabilities | None = None
        self._public: Capabilities | None = None
        self._mseq = 0
        self._closed = False
        #: The frame encoding the server chose in its ``hello`` answer (``""`` before it answered).
        self.encoding_used = ""
        self._video = H264Receiver()
        #: Times this client reconnected; whether the last reconnect found its session.
        self.reconnects = 0
        self.resumed = True
        #: The server replica holding this session, as its last ``hello`` said (``--engine ray``; else "").
        self.replica = ""
        #: A sentence for the player when something about the world changed (server restarted,
        #: unknown capabilities of a newer server); the error bank's guard shows it when it changes.
        self.notice = ""
        try:
            self._connect()
        except BackendError as exc:
            cause = exc.__cause__
            down = isinstance(cause, ConnectionRefusedError | TimeoutError) or (
                isinstance(cause, ConnectionError) and not isinstance(cause, ssl.SSLError))
            if not down:
                raise  # refused, bad token, TLS trouble, wrong version: the user must fix something
            # Down at start: the error bank's guard shows the procedural world meanwhile and
            # connects when the server answers (capabilities() and start() try again).
            self.notice = f"world server unreachable ({self.url}): showing the procedural world"

    @property
    def client_key(self) -> str:
        """The random key naming this client's session to the server (its ``hello``)."""
        return self._client

    # -- protocol ------------------------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        """The served backend's capabilities (from the ``hello`` answer), named ``remote:<served backend>``.

        Raises:
            BackendError: the server was unreachable when this client was made and still is.
        """
        with self._lock:
            if self._public is None:
                self._connect()
            assert self._public is not None
            return self._public

    def start(self, start: SessionStart) -> None:
        """Open the session on the server's backend.

        Raises:
            BackendError: the server refused it or cannot be reached.
        """
        with self._lock:
            self._start = start
            self._exchange({"op": "start", "start": session_start_json(start)}, "started")

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        """Stream the request's blocks from the server, one per ask, resuming across reconnects.

        Raises:
            BackendError: the request is too large, the served backend failed, or the
                server stayed unreachable for ``reconnect_attempts`` tries.
        """
        text = request_text(request)  # encoded once: sent as is, and again after a reconnect
        size = len(generate_message(text, 0).encode("utf-8"))
        if size > self.max_message_bytes:
            raise BackendError(f"request {request.seq} is {size} bytes, over the server's "
                               f"{self.max_message_bytes}-byte limit", hint="shorten the prompt or the rolling history")
        self._check_open()
        return self._stream(request, text)

    def memory(self, op: MemoryOp) -> MemoryResult:
        """Apply ``op`` on the server (retried under the same number after a reconnect, so applied once).

        Raises:
            BackendError: the server cannot be reached or failed.
        """
        with self._lock:
            self._mseq += 1
            reply = self._exchange({"op": "memory", "memop": memory_op_json(op), "mseq": self._mseq}, "memory")
            return memory_result_from_json(reply.get("result"))

    def interrupt(self, session_id: str = "") -> None:
        """Ask the server to abandon the block in flight of ``session_id`` (``""``: this client's
        session); the request's stream then ends without it (see
        :class:`~game.world.protocol.Interruptible`). Best effort, never raises, does not wait: with
        no connection there is no block in flight to stop."""
        ws = self._ws
        if ws is None or self._closed:
            return
        session = session_id or (self._start.session_id if self._start is not None else "")
        with self._send_lock, contextlib.suppress(Exception):
            ws.send(dumps({"op": "interrupt", "session": session}))

    def close(self) -> None:
        """End the session on the server (best effort) and close the connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._ws is not None:
                with self._send_lock, contextlib.suppress(Exception):
                    self._ws.send(dumps({"op": "close"}))
                self._drop()

    # -- streaming -----------------------------------------------------------------------------------
    def _stream(self, request: WorldRequest, text: str) -> Iterator[FrameChunk]:
        received = 0
        while True:
            with self._lock:
                chunk = self._call_chunk(text, request.seq, received)
            if chunk is None:
                return
            chunk.memory["reconnects"] = float(self.reconnects)
            received += 1
            yield chunk
            if chunk.last:
                return

    def _call_chunk(self, text: str, seq: int, block: int) -> FrameChunk | None:
        """Ask for block ``block`` of request ``seq`` (``text``: the request's JSON): the block, or ``None``
        past the end.

        The first block is asked with ``generate`` (the whole request), later ones with
        ``next``; after a reconnect always with ``generate`` from ``block`` (the server
        resumes, replays or regenerates).
        """
        fresh = block == 0
        for attempt in range(self.reconnect_attempts + 1):
            try:
                self._ensure_connected(attempt)
                ask = {"op": "next", "seq": seq, "block": block}
                self._send_text(generate_message(text, block) if fresh else dumps(ask))
                data = self._recv(self.block_timeout_s)
                if isinstance(data, bytes):  # a block: one binary message
                    try:
                        chunk = decode_block(data, self.max_message_bytes, self._video)
                    except WireError as exc:
                        self._drop()
                        raise BackendError(f"bad block from the world server: {exc.why}", where=self.url) from exc
                    if chunk.seq != seq or chunk.block != block:
                        self._drop()
                        raise BackendError(f"world server sent block {chunk.block} of {chunk.seq} "
                                           f"to a request for block {block} of {seq}", where=self.url)
                    return chunk
                reply = self._parse(data)
                op = reply["op"]
                if op == "done" and reply.get("seq") == seq:
                    return None
                if op == "error":
                    raise self._server_error(reply)
                self._drop()
                raise BackendError(f"world server answered {op} to a request for block {block} of {seq}",
                                   where=self.url)
            except _Lost as exc:
                self._drop()
                if attempt >= self.reconnect_attempts:
                    raise self._unreachable(exc) from exc
                fresh = True
        raise AssertionError("unreachable")

    def _exchange(self, msg: dict[str, Any], expect: str) -> dict[str, Any]:
        """Send ``msg`` and return the answer of kind ``expect``, reconnecting on a broken connection."""
        self._check_open()
        last: Exception | None = None
        for attempt in range(self.reconnect_attempts + 1):
            try:
                self._ensure_connected(attempt)
                self._send(msg)
                reply = self._recv_json(self.block_timeout_s)
                if reply["op"] == "error":
                    raise self._server_error(reply)
                if reply["op"] != expect:
                    self._drop()
                    raise BackendError(f"world server answered {reply['op']} to {msg['op']}", where=self.url)
                return reply
            except _Lost as exc:
                self._drop()
                last = exc
        raise self._unreachable(last)

    # -- the connection --------------------------------------------------------------------------------
    def _ensure_connected(self, attempt: int = 0) -> None:
        if self._ws is None:
            self._connect(reconnect=True, attempt=attempt)

    def _connect(self, reconnect: bool = False, attempt: int = 0) -> None:
        """Open a connection and say hello; on a reconnect to a server that lost the session, start it again.

        Raises:
            BackendError: refused (final close codes) or, on the first connect, unreachable.
            _Lost: a reconnect could not get through (the caller counts attempts).
        """
        from websockets.exceptions import InvalidHandshake, InvalidStatus
        from websockets.sync.client import connect

        if reconnect and attempt:
            time.sleep(min(2.0, self.backoff_s * 2 ** (attempt - 1)))
        try:
            ws = connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"},
                         open_timeout=self.connect_timeout_s, close_timeout=1.0, max_size=None, compression=None,
                         proxy=None, ssl=self._ssl, user_agent_header="worldloom", **_direct())
        except InvalidStatus as exc:
            raise BackendError(f"world server refused the connection: HTTP {exc.response.status_code}",
                               where=self.url) from exc
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            if not reconnect:
                raise self._unreachable(exc) from exc
            raise _Lost(str(exc)) from exc
        self._ws = ws
        try:
            self._send({"op": "hello", "v": WIRE_VERSION, "client": self._client, "encoding": self.encoding,
                        "codecs": decodable_codecs(), "size": self.size})
            reply = self._recv_json(max(self.connect_timeout_s, 30.0))
            if reply["op"] == "error":
                raise self._server_error(reply)
            if reply["op"] != "hello":
                raise BackendError(f"world server answered {reply['op']} to hello", where=self.url)
            caps = caps_from_json(reply.get("caps"))
            unknown = unknown_caps_fields(reply.get("caps"))
            self.replica = str(reply.get("replica", ""))
        except _Lost as exc:
            self._drop()
            if not reconnect:
                raise self._unreachable(exc) from exc
            raise
        except BackendError:
            self._drop()
            raise
        if self._caps is not None and caps != self._caps:
            self._drop()
            raise BackendError("the world server now serves another backend or size", where=self.url,
                               hint=f"was {self._caps.backend} {self._caps.width}x{self._caps.height}")
        if self._caps is None:
            self._public = replace(caps, backend=f"remote:{caps.backend}")
        self._caps = caps
        self.encoding_used = str(reply.get("encoding", ""))
        # Connected: a stale "unreachable" goes; a newer server's unknown capabilities are named.
        self.notice = (f"the world server ({self.url}) announces capabilities this worldloom does not know: "
                       f"{', '.join(unknown)} (ignored; update worldloom to use them)") if unknown else ""
        if reconnect:
            self.reconnects += 1
            self.resumed = bool(reply.get("resumed"))
            if not self.resumed and self._start is not None:
                self.notice = "the world server restarted: the world continues from its opening state"
                self._send({"op": "start", "start": session_start_json(self._start)})
                again = self._recv_json(self.block_timeout_s)
                if again["op"] != "started":
                    raise self._server_error(again)

    def _send(self, msg: dict[str, Any]) -> None:
        self._send_text(dumps(msg))

    def _send_text(self, text: str) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            with self._send_lock:
                self._ws.send(text)
        except ConnectionClosed as exc:
            self._raise_closed(exc)
        except OSError as exc:
            raise _Lost(str(exc)) from exc

    def _recv(self, timeout: float) -> str | bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            data: str | bytes = self._ws.recv(timeout=timeout)
            return data
        except TimeoutError as exc:
            self._drop()
            raise BackendError(f"the world server sent nothing for {timeout:g} s", where=self.url,
                               hint="the model may be overloaded; block_timeout_s sets the wait") from exc
        except ConnectionClosed as exc:
            self._raise_closed(exc)
        except OSError as exc:
            raise _Lost(str(exc)) from exc

    def _recv_json(self, timeout: float) -> dict[str, Any]:
        data = self._recv(timeout)
        if not isinstance(data, str):
            self._drop()
            raise BackendError("world server sent binary where a message was due", where=self.url)
        return self._parse(data)

    def _parse(self, text: str) -> dict[str, Any]:
        try:
            return loads(text, limit=64 << 20)
        except WireError as exc:
            self._drop()
            raise BackendError(f"bad message from the world server: {exc.why}", where=self.url) from exc

    def _raise_closed(self, exc: Any) -> NoReturn:
        rcvd = getattr(exc, "rcvd", None)
        code = getattr(rcvd, "code", None)
        reason = getattr(rcvd, "reason", "") or ""
        self._drop()
        if code in FINAL_CODES:
            raise BackendError(f"world server closed the connection: {reason or 'no reason given'} (code {code})",
                               where=self.url)
        raise _Lost(f"connection closed ({code}: {reason})" if code else "connection lost")

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close()

    def _server_error(self, reply: dict[str, Any]) -> BackendError:
        return BackendError(str(reply.get("why") or reply.get("message") or "world server error"),
                            str(reply.get("where") or self.url), str(reply.get("hint") or ""))

    def _unreachable(self, exc: BaseException | None) -> BackendError:
        return BackendError(f"world server unreachable: {exc}", where=self.url,
                            hint="is `worldloom serve` running there? the game falls back to the procedural world")

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError("remote backend is closed", where=self.url)
