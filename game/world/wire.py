"""The remote backend's wire format: JSON control messages and binary frame payloads.

A ``worldloom serve`` server and :class:`game.world.backends.remote.RemoteBackend`
talk over one WebSocket. Every control message is a JSON object (a text message)
with an ``op``; a block of frames is one binary message (:func:`encode_block`):
a 4-byte big-endian length, that many bytes of the JSON ``chunk`` header, then the
frames and then the sound. One message per block, built with one copy of the frames,
so a block costs what the same bytes cost over plain WebSockets (``bench/remote.py``
prints both). Nothing is pickled.

Frames are encoded per the connection's ``encoding``:

* ``raw``: ``T * H * W * 3`` bytes of the ``(T, H, W, 3)`` uint8 array, C order
  (loopback: no CPU spent, byte-exact);
* ``jpeg`` / ``webp``: one Pillow-encoded image per frame, concatenated; the
  header lists each one's length (``sizes``) (networks: ~10-30x smaller, lossy);
  ``png`` the same, lossless (byte-exact, larger);
* ``h264``: one H.264 packet per frame of the session's video stream
  (:mod:`game.world.video_wire`, PyAV); the header's ``frames["stream"]`` says
  where in the stream the block stands (about 4x smaller than JPEG on a moving shot).
  A server sends it only to a client whose ``hello`` lists ``h264`` in its ``codecs``
  (:func:`game.world.server.choose_encoding`).

Sound, when there is any, follows the frames as little-endian float32 samples.
The header also carries ``memory["bytes_per_frame"]``: the frame bytes on the wire
divided by ``T``.

The decoders check every size and shape against limits before allocating, so a
broken or hostile peer gets a :class:`WireError`, not a crash or a giant buffer.
"""

from __future__ import annotations

import ctypes
import io
import ipaddress
import json
import struct
import sys
from dataclasses import asdict, fields
from typing import Any, Literal

import numpy as np
import orjson

from game import limits
from game.errors import BackendError
from game.world.protocol import (
    ActionFrame,
    Anchor,
    CameraPose,
    Capabilities,
    Entity,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    Scene,
    SessionStart,
    Timing,
    WorldRequest,
)
from game.world.video_wire import H264Receiver, H264Sender

#: Version of this wire format (``hello`` carries it; a mismatch is refused). 2: a block is one binary message.
WIRE_VERSION = 2
#: Default cap on one inbound JSON message, bytes (see :mod:`game.limits`).
MAX_JSON_BYTES = limits.MAX_MESSAGE_BYTES
#: Largest frame side and frames per block a decoder accepts.
MAX_SIDE = limits.MAX_WIRE_SIDE
MAX_FRAMES = limits.MAX_BLOCK_FRAMES

Encoding = Literal["raw", "jpeg", "webp", "png", "h264"]
ENCODINGS: tuple[Encoding, ...] = ("raw", "jpeg", "webp", "png", "h264")


class WireError(BackendError):
    """A message on the wire is malformed, too large or of an unknown kind."""


# -- JSON -------------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def dumps(msg: dict[str, Any]) -> str:
    """Compact JSON text of a control message."""
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def loads(text: str | bytes, limit: int = MAX_JSON_BYTES, max_depth: int = limits.MAX_DEPTH) -> dict[str, Any]:
    """Parse one control message; its size and nesting are checked before it is parsed
    (:func:`game.limits.parse_json`).

    Raises:
        WireError: longer than ``limit`` bytes, nested deeper than ``max_depth``, not JSON
            (``NaN`` included), not UTF-8, not an object, or no string ``op``.
    """
    msg = limits.parse_json(text, "", WireError, max_bytes=limit, max_depth=max_depth, what="message")
    if not isinstance(msg, dict) or not isinstance(msg.get("op"), str):
        raise WireError("message is not a JSON object with an 'op'")
    return msg


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise WireError(f"{where}: field {name!r} is missing or of the wrong type")
    return value


def _anchors(items: Any, where: str) -> tuple[Anchor, ...]:
    if not isinstance(items, list):
        raise WireError(f"{where}: anchors must be a list")
    out = []
    for a in items:
        if not isinstance(a, dict):
            raise WireError(f"{where}: an anchor must be an object")
        try:
            out.append(Anchor(id=str(a["id"]), kind=a["kind"], role=a["role"], ref=str(a["ref"]),
                              tier=a.get("tier", "sink_global")))
        except (KeyError, TypeError) as exc:
            raise WireError(f"{where}: bad anchor: {exc}") from exc
    return tuple(out)


def session_start_json(start: SessionStart) -> dict[str, Any]:
    """JSON form of a :class:`SessionStart`."""
    return asdict(start)


def session_start_from_json(data: Any) -> SessionStart:
    """Rebuild a :class:`SessionStart`.

    Raises:
        WireError: a field is missing or mistyped.
    """
    if not isinstance(data, dict):
        raise WireError("start: not an object")
    width, height = data.get("width"), data.get("height")
    for v in (width, height):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_SIDE):
            raise WireError("start: width / height must be whole numbers of pixels")
    return SessionStart(session_id=_field(data, "session_id", str, "start"), seed=_field(data, "seed", int, "start"),
                        prompt=_field(data, "prompt", str, "start"), anchors=_anchors(data.get("anchors", []), "start"),
                        width=width, height=height)


def request_json(request: WorldRequest) -> dict[str, Any]:
    """JSON form of a :class:`WorldRequest` (all of it)."""
    return request.to_json()


def request_text(request: WorldRequest) -> str:
    """The JSON text of :func:`request_json`, made in one step by orjson (a request is sent once per
    request, and this is ~20x quicker than ``asdict`` then ``json.dumps``).

    Raises:
        WireError: a field JSON cannot carry (an integer over 64 bits); a NaN or infinite
            number becomes ``null``, which the server refuses by name.
    """
    try:
        return orjson.dumps(request).decode("utf-8")
    except TypeError as exc:  # orjson.JSONEncodeError
        raise WireError(f"request {request.seq} cannot be sent as JSON: {exc}") from exc


def request_from_json(data: Any) -> WorldRequest:
    """Rebuild a :class:`WorldRequest` (the inverse of :func:`request_json`).

    Raises:
        WireError: a field is missing or mistyped.
    """
    if not isinstance(data, dict):
        raise WireError("request: not an object")
    w = "request"
    scene_d = data.get("scene") or {}
    if not isinstance(scene_d, dict):
        raise WireError(f"{w}: scene must be an object")
    ents = []
    for e in scene_d.get("entities", []) or []:
        if not isinstance(e, dict):
            raise WireError(f"{w}: an entity must be an object")
        try:
            ents.append(Entity(id=str(e["id"]), kind=e["kind"], name=str(e["name"]), look=str(e.get("look", "")),
                               image=str(e.get("image", "")), x=float(e.get("x", 0.5)), y=float(e.get("y", 0.0)),
                               state=str(e.get("state", "idle")), holding=tuple(str(h) for h in e.get("holding", ())),
                               tier=e.get("tier", "object_cache"), expression=str(e.get("expression", "")),
                               pose=str(e.get("pose", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise WireError(f"{w}: bad entity: {exc}") from exc
    scene = Scene(location=str(scene_d.get("location", "")), palette=str(scene_d.get("palette", "dusk")),
                  time_of_day=str(scene_d.get("time_of_day", "dusk")), weather=str(scene_d.get("weather", "clear")),
                  entities=tuple(ents), setting=str(scene_d.get("setting", "")), light=str(scene_d.get("light", "")))
    switch = data.get("switch_mode")
    if switch not in (None, "recache", "scene_cut", "plain"):
        raise WireError(f"{w}: unknown switch_mode {switch!r}")
    tiers = data.get("tiers") or {}
    if not isinstance(tiers, dict):
        raise WireError(f"{w}: tiers must be an object")
    try:
        return WorldRequest(
            session_id=_field(data, "session_id", str, w),
            seq=_field(data, "seq", int, w),
            min_frames=_field(data, "min_frames", int, w),
            prompt=_field(data, "prompt", str, w),
            switch_mode=switch,
            scene=scene,
            actions=tuple(str(a) for a in data.get("actions", ()) or ()),
            action_frames=action_frames_from_json(data.get("action_frames", []) or [], w),
            first_block_frames=int(data.get("first_block_frames", 0)),
            camera_x=float(data.get("camera_x", 0.0)),
            camera_dx=float(data.get("camera_dx", 0.0)),
            references=tuple(str(r) for r in data.get("references", ()) or ()),
            audio=str(data.get("audio", "")),
            cue=str(data.get("cue", "")),
            sounds=tuple(str(c) for c in data.get("sounds", ()) or ()),
            directives=tuple(str(d) for d in data.get("directives", ()) or ()),
            event=str(data.get("event", "")),
            event_id=str(data.get("event_id", "")),
            anchors=_anchors(data.get("anchors", []) or [], w),
            rolling=tuple(str(r) for r in data.get("rolling", ()) or ()),
            deadline_ms=int(data.get("deadline_ms", 0)),
            tiers={str(k): str(v) for k, v in tiers.items()},
        )
    except (TypeError, ValueError) as exc:
        raise WireError(f"{w}: {exc}") from exc


def generate_message(request_text: str, from_block: int) -> str:
    """The ``generate`` control message for a request's JSON text (:func:`request_text`, encoded once
    and reused on a resume) from block ``from_block``."""
    return f'{{"op":"generate","from_block":{int(from_block)},"request":{request_text}}}'


def action_frames_from_json(items: Any, where: str) -> tuple[ActionFrame, ...]:
    """Rebuild a request's :class:`ActionFrame` list (``[{"keys", "mouse", "camera"}]``).

    Raises:
        WireError: not a list of objects, more than :data:`MAX_FRAMES` frames, or mistyped fields.
    """
    if not isinstance(items, list) or len(items) > MAX_FRAMES:
        raise WireError(f"{where}: action_frames must be a list of at most {MAX_FRAMES} objects")
    out = []
    for f in items:
        if not isinstance(f, dict):
            raise WireError(f"{where}: an action frame must be an object")
        try:
            cam = f.get("camera")
            pose = None if cam is None else CameraPose(**{k: float(v) for k, v in dict(cam).items()})
            dx, dy = (float(v) for v in f.get("mouse", (0.0, 0.0)))
            out.append(ActionFrame(keys=tuple(str(k) for k in f.get("keys", ()) or ()), mouse=(dx, dy),
                                   camera=pose))
        except (TypeError, ValueError) as exc:
            raise WireError(f"{where}: bad action frame: {exc}") from exc
    return tuple(out)


def memory_op_json(op: MemoryOp) -> dict[str, Any]:
    """JSON form of a :class:`MemoryOp`."""
    return asdict(op)


def memory_op_from_json(data: Any) -> MemoryOp:
    """Rebuild a :class:`MemoryOp`.

    Raises:
        WireError: an unknown op or mistyped fields.
    """
    if not isinstance(data, dict):
        raise WireError("memory: not an object")
    kind = data.get("op")
    if kind not in ("reset_history", "reanchor", "reset", "snapshot", "restore", "fork"):
        raise WireError(f"memory: unknown op {kind!r}")
    return MemoryOp(op=kind, anchors=_anchors(data.get("anchors", []) or [], "memory"),
                    handle=str(data.get("handle", "")), new_session_id=str(data.get("new_session_id", "")))


def memory_result_json(result: MemoryResult) -> dict[str, Any]:
    """JSON form of a :class:`MemoryResult`."""
    return asdict(result)


def memory_result_from_json(data: Any) -> MemoryResult:
    """Rebuild a :class:`MemoryResult`.

    Raises:
        WireError: not an object.
    """
    if not isinstance(data, dict):
        raise WireError("memory result: not an object")
    return MemoryResult(ok=bool(data.get("ok")), handle=str(data.get("handle", "")), note=str(data.get("note", "")))


#: The field names of :class:`Capabilities` this version knows.
_CAPS_FIELDS = frozenset(f.name for f in fields(Capabilities))


def caps_json(caps: Capabilities) -> dict[str, Any]:
    """JSON form of :class:`Capabilities`."""
    return asdict(caps)


def unknown_caps_fields(data: Any) -> tuple[str, ...]:
    """The fields of a capabilities object this version of :class:`Capabilities` does not have.

    A newer server announces capabilities an older client does not know (a wire-version
    skew); :func:`caps_from_json` ignores them, and the client reports them with this.

    Returns:
        the unknown field names, sorted; ``()`` for a non-object.
    """
    if not isinstance(data, dict):
        return ()
    return tuple(sorted(str(k) for k in data if k not in _CAPS_FIELDS))


def caps_from_json(data: Any) -> Capabilities:
    """Rebuild :class:`Capabilities`; fields this version does not know are ignored
    (list them with :func:`unknown_caps_fields`).

    Raises:
        WireError: not an object, or missing or mistyped fields.
    """
    if not isinstance(data, dict):
        raise WireError("capabilities: not an object")
    try:
        d = {k: v for k, v in data.items() if k in _CAPS_FIELDS}
        d["switch_modes"] = tuple(d.get("switch_modes", ("plain",)))
        d["actions"] = tuple(d.get("actions", ()))
        d["directives"] = tuple(d.get("directives", ()))
        d["camera"] = tuple(d.get("camera", ()))
        caps = Capabilities(**d)
    except TypeError as exc:
        raise WireError(f"capabilities: {exc}") from exc
    if not (1 <= caps.width <= MAX_SIDE and 1 <= caps.height <= MAX_SIDE and caps.frames_per_block >= 1):
        raise WireError("capabilities: frame size or block length out of range")
    return caps


# -- memory ------------------------------------------------------------------------------------------
#: glibc ``mallopt`` parameters (``malloc.h``) and what :func:`reuse_block_memory` sets them to.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TRIM_BYTES, _MMAP_BYTES = 64 << 20, 32 << 20
_TUNED: list[bool] = []


def reuse_block_memory() -> bool:
    """Let this process reuse the memory of the blocks it sends or receives (glibc only; once).

    Every block is a fresh half-megabyte buffer or more (the frames, the message, the
    WebSocket frame). With glibc's defaults, blocks over the dynamic mmap threshold are
    mapped and unmapped each time and a heap top over the trim threshold is given back,
    so each block faults its pages in again: on a loaded machine that cost more CPU than
    sending it (measured ~1.1 ms against ~0.3 ms per 160x90 block). This sets
    ``M_MMAP_THRESHOLD`` to 32 MiB and ``M_TRIM_THRESHOLD`` to 64 MiB (``mallopt(3)``): up to
    64 MiB of freed memory stays in the heap for the next block. ``worldloom serve`` and the
    remote backend call it; elsewhere (not Linux, not glibc) it does nothing.

    Returns:
        Whether the settings were applied (now or by an earlier call).
    """
    if not _TUNED:
        applied = False
        if sys.platform.startswith("linux"):
            try:
                mallopt = ctypes.CDLL(None).mallopt
                applied = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_BYTES))
                applied = bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_BYTES)) and applied
            except (OSError, AttributeError):
                applied = False
        _TUNED.append(applied)
    return _TUNED[0]


# -- frames -------------------------------------------------------------------------------------------
def encode_frames(frames: np.ndarray, encoding: Encoding, quality: int = 90) -> tuple[bytes, list[int]]:
    """Encode ``(T, H, W, 3)`` uint8 frames.

    Returns:
        ``(payload, sizes)``: the bytes, and each frame's length in them.
    """
    parts, sizes = _frame_parts(frames, encoding, quality)
    return b"".join(parts), sizes


def _frame_parts(frames: np.ndarray, encoding: Encoding, quality: int) -> tuple[list[Any], list[int]]:
    """The encoded frames as buffers (raw: a view of the array itself, no copy) and each frame's length."""
    frames = np.ascontiguousarray(frames, dtype=np.uint8)
    if encoding == "raw":
        return [frames.data.cast("B")], [int(frames[0].nbytes)] * int(frames.shape[0])
    if encoding == "h264":
        raise WireError("h264 frames belong to a session's stream: encode them with a video_wire.H264Sender")
    from PIL import Image

    parts: list[Any] = []
    for f in frames:
        buf = io.BytesIO()
        img = Image.fromarray(f)
        if encoding == "jpeg":
            img.save(buf, format="JPEG", quality=quality, subsampling=0 if quality >= 90 else 2)
        elif encoding == "png":
            img.save(buf, format="PNG", compress_level=1)
        else:
            img.save(buf, format="WEBP", quality=quality, method=0)
        parts.append(buf.getvalue())
    return parts, [len(p) for p in parts]


def decode_frames(payload: memoryview | bytes, encoding: str, shape: tuple[int, int, int, int],
                  sizes: list[int]) -> np.ndarray:
    """Decode what :func:`encode_frames` made back into ``(T, H, W, 3)`` uint8.

    Raw frames are a read-only view of ``payload`` (no copy: a fresh 0.5 MB array costs
    more in page faults than the whole WebSocket read); JPEG and WebP decode into a new array.

    Raises:
        WireError: sizes or shapes that do not add up, or an image Pillow cannot read.
    """
    t, h, w, c = shape
    if c != 3 or not (1 <= t <= MAX_FRAMES and 1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE):
        raise WireError(f"frames of shape {shape} are out of range")
    if len(sizes) != t or sum(sizes) != len(payload) or any(s < 0 for s in sizes):
        raise WireError("frame sizes do not add up to the payload")
    if encoding == "raw":
        if len(payload) != t * h * w * 3:
            raise WireError("raw frame payload has the wrong length")
        return np.frombuffer(payload, dtype=np.uint8).reshape(t, h, w, 3)  # a read-only view: no copy
    if encoding not in ("jpeg", "webp", "png"):
        raise WireError(f"unknown frame encoding {encoding!r}" + (" (h264 needs the session's stream)"
                                                                   if encoding == "h264" else ""))
    from PIL import Image

    out = np.empty((t, h, w, 3), np.uint8)
    pos = 0
    view = memoryview(payload)
    for i, size in enumerate(sizes):
        try:
            with Image.open(io.BytesIO(view[pos:pos + size])) as img:
                arr = np.asarray(img.convert("RGB"))
        except (OSError, ValueError) as exc:
            raise WireError(f"frame {i} is not a readable {encoding} image: {exc}") from exc
        if arr.shape != (h, w, 3):
            raise WireError(f"frame {i} is {arr.shape}, not {(h, w, 3)}")
        out[i] = arr
        pos += size
    return out


def chunk_header(chunk: FrameChunk, encoding: Encoding, sizes: list[int], audio_samples: int,
                 stream: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON ``chunk`` header announcing the binary message that follows (``stream``: the
    H.264 stream label, see :class:`~game.world.video_wire.H264Sender`)."""
    frame_bytes = sum(sizes)
    memory = dict(chunk.memory)
    memory["bytes_per_frame"] = frame_bytes / max(1, chunk.n_frames)
    frames: dict[str, Any] = {"encoding": encoding, "shape": list(chunk.frames.shape), "sizes": sizes}
    if stream is not None:
        frames["stream"] = stream
    return {
        "op": "chunk", "seq": chunk.seq, "block": chunk.block, "last": chunk.last, "first_frame": chunk.first_frame,
        "fps": chunk.fps, "audio_rate": chunk.audio_rate, "ignored": list(chunk.ignored), "drawn": list(chunk.drawn),
        "memory": memory, "probes": dict(chunk.probes), "timing": asdict(chunk.timing),
        "frames": frames,
        "audio": audio_samples if chunk.audio is not None else None,
        "nbytes": frame_bytes + 4 * audio_samples,
    }


def _encoded(chunk: FrameChunk, encoding: Encoding, quality: int,
             video: H264Sender | None) -> tuple[list[Any], list[int], dict[str, Any] | None]:
    """The frame buffers, their sizes and the H.264 stream label (``None`` for the image encodings)."""
    if encoding != "h264":
        parts, sizes = _frame_parts(chunk.frames, encoding, quality)
        return parts, sizes, None
    if video is None:
        raise WireError("h264 frames need the session's H264Sender")
    payload, sizes, stream = video.encode(np.ascontiguousarray(chunk.frames, dtype=np.uint8))
    return [payload], sizes, stream


def encode_chunk(chunk: FrameChunk, encoding: Encoding, quality: int = 90,
                 video: H264Sender | None = None) -> tuple[dict[str, Any], bytes]:
    """``(header, payload)`` of one block: frames (per ``encoding``) then float32 audio.

    Raises:
        WireError: ``h264`` without the session's ``video`` stream.
        BackendError: the H.264 encoder failed (PyAV missing, an odd frame size).
    """
    parts, sizes, stream = _encoded(chunk, encoding, quality, video)
    payload = b"".join(parts)
    audio = b""
    samples = 0
    if chunk.audio is not None:
        pcm = np.ascontiguousarray(chunk.audio, dtype="<f4")
        audio, samples = pcm.tobytes(), int(pcm.shape[0])
    return chunk_header(chunk, encoding, sizes, samples, stream), payload + audio


def encode_block(chunk: FrameChunk, encoding: Encoding, quality: int = 90, block: int | None = None,
                 video: H264Sender | None = None) -> bytes:
    """One block as the single binary message the server sends: ``len(header)`` (4 bytes, big-endian),
    the JSON ``chunk`` header (UTF-8), the frames (per ``encoding``), the sound (float32 LE).

    Raw frames are copied once, straight into the message. ``block`` overrides the chunk's own
    block number in the header (the server numbers blocks as the client asked for them).
    ``video`` is the session's H.264 stream (needed for ``h264``).

    Raises:
        WireError: ``h264`` without ``video``.
        BackendError: the H.264 encoder failed (PyAV missing, an odd frame size).
    """
    parts, sizes, stream = _encoded(chunk, encoding, quality, video)
    samples = 0
    if chunk.audio is not None:
        pcm = np.ascontiguousarray(chunk.audio, dtype="<f4")
        parts.append(pcm.data.cast("B"))
        samples = int(pcm.shape[0])
    header = chunk_header(chunk, encoding, sizes, samples, stream)
    if block is not None:
        header["block"] = block
    head = dumps(header).encode("utf-8")
    return b"".join([struct.pack(">I", len(head)), head, *parts])


def decode_block(message: bytes | memoryview, max_header_bytes: int = MAX_JSON_BYTES,
                 video: H264Receiver | None = None) -> FrameChunk:
    """Rebuild the :class:`FrameChunk` of one :func:`encode_block` message (``video``: the client's
    H.264 receiver, needed for ``h264`` frames).

    Raises:
        WireError: shorter than its length prefix, a header over ``max_header_bytes`` or
            past the message's end, a header that is not a ``chunk``, or a payload that
            does not match it (see :func:`decode_chunk`).
    """
    view = memoryview(message)
    if len(view) < 4:
        raise WireError(f"block message is {len(view)} bytes, shorter than its 4-byte length")
    (n,) = struct.unpack_from(">I", view)
    if n > max_header_bytes or 4 + n > len(view):
        raise WireError(f"block header of {n} bytes does not fit the {len(view)}-byte message "
                        f"(or is over {max_header_bytes})")
    header = loads(bytes(view[4:4 + n]), max_header_bytes)
    if header["op"] != "chunk":
        raise WireError(f"block message carries {header['op']!r}, not a chunk")
    return decode_chunk(header, view[4 + n:], video)


def decode_chunk(header: dict[str, Any], payload: bytes | memoryview, video: H264Receiver | None = None) -> FrameChunk:
    """Rebuild a :class:`FrameChunk` from its header and binary payload (``video``: the
    client's H.264 receiver, needed for ``h264`` frames).

    Raises:
        WireError: the header is malformed, the payload does not match it, or H.264 frames
            that do not decode where the client's stream stands.
    """
    try:
        fr = header["frames"]
        shape = tuple(int(x) for x in fr["shape"])
        sizes = [int(s) for s in fr["sizes"]]
        samples = header.get("audio")
        n_audio = int(samples) if samples is not None else 0
        if len(shape) != 4 or n_audio < 0:
            raise ValueError("bad shape or audio length")
        frame_bytes = sum(sizes)
        if len(payload) != frame_bytes + 4 * n_audio:
            raise WireError(f"chunk payload is {len(payload)} bytes, header says {frame_bytes + 4 * n_audio}")
        view = memoryview(payload)
        shape4 = (shape[0], shape[1], shape[2], shape[3])
        if fr["encoding"] == "h264" and video is not None:
            frames = _h264_frames(video, bytes(view[:frame_bytes]), sizes, fr.get("stream"), shape4)
        else:
            frames = decode_frames(view[:frame_bytes], str(fr["encoding"]), shape4, sizes)
        audio = np.frombuffer(view[frame_bytes:], dtype="<f4").astype(np.float32) if samples is not None else None
        t = header.get("timing") or {}
        return FrameChunk(
            seq=int(header["seq"]), block=int(header["block"]), last=bool(header["last"]),
            first_frame=int(header["first_frame"]), frames=frames, fps=float(header["fps"]), audio=audio,
            audio_rate=int(header.get("audio_rate", 22050)), ignored=tuple(str(x) for x in header.get("ignored", [])),
            drawn=tuple(str(x) for x in header.get("drawn", [])),
            memory={str(k): float(v) for k, v in (header.get("memory") or {}).items()},
            probes={str(k): float(v) for k, v in (header.get("probes") or {}).items()},
            timing=Timing(**{k: float(t.get(k, 0.0)) for k in ("queue_ms", "encode_ms", "recache_ms", "denoise_ms",
                                                              "decode_ms", "total_ms")}),
        )
    except WireError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"malformed chunk header: {exc}") from exc


def _h264_frames(video: H264Receiver, payload: bytes, sizes: list[int], stream: Any,
                 shape: tuple[int, int, int, int]) -> np.ndarray:
    t, h, w, c = shape
    if c != 3 or not (1 <= t <= MAX_FRAMES and 1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE) or len(sizes) != t:
        raise WireError(f"frames of shape {shape} are out of range")
    if not isinstance(stream, dict):
        raise WireError("h264 frames without a stream label")
    try:
        return video.decode(payload, sizes, stream, shape)
    except WireError:
        raise
    except BackendError as exc:
        raise WireError(exc.why, exc.where, exc.hint) from exc
