"""Frames over the wire as H.264 video (PyAV), with JPEG as the fallback.

A world model streams a continuous shot, so consecutive frames differ little:
a video codec sends each frame as the difference from the last, where JPEG
(:func:`game.world.wire.encode_frames`) sends every frame whole. One
:class:`H264Stream` encodes one session's frames in order (libx264, ``ultrafast``
preset, ``zerolatency`` tune: no B-frames and no look-ahead, so every frame's
packet exists as soon as the frame is encoded and a block never waits for the next
one); one :class:`H264Decoder` on the other side decodes them in the same order.
A block's payload is its frames' packets concatenated, with each packet's length
(``sizes``) as the JPEG payload has.

Over the remote protocol one :class:`H264Sender` per server session and one
:class:`H264Receiver` per client keep the stream in step: each block's header
carries the stream's id, the position of its first frame in the stream and
whether that frame is a key frame (:meth:`H264Sender.encode`). The receiver decodes
a block only where its stream stands, returns a block it already decoded (a
re-send after a reconnect) from its recent blocks, starts over at a key frame (a
new stream, or a forced key frame after a reconnect), and refuses a gap with a
:class:`~game.errors.BackendError` rather than show broken frames.

Frames are ``(T, H, W, 3)`` uint8 RGB with even ``H`` and ``W`` (4:2:0 chroma);
they come back as the same shape, lossy (about 35-45 dB PSNR at ``crf`` 23 on the
procedural world's frames).

:func:`pick_encoding` says whether H.264 can be used here (PyAV with libx264
installed) and otherwise names ``jpeg``, the fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from game.errors import BackendError

#: The codec options: fastest preset, no frame delay (no B-frames, no look-ahead).
X264_OPTIONS = {"preset": "ultrafast", "tune": "zerolatency"}


def h264_available() -> bool:
    """Whether PyAV with an H.264 encoder (libx264) and decoder is installed."""
    try:
        import av
    except ImportError:
        return False
    codecs = av.codecs_available
    return "libx264" in codecs and "h264" in codecs


def h264_decodable() -> bool:
    """Whether PyAV with an H.264 decoder is installed (what a client needs to receive H.264)."""
    try:
        import av
    except ImportError:
        return False
    return "h264" in av.codecs_available


def pick_encoding(wanted: str = "h264") -> str:
    """``wanted`` if this machine can encode it, else ``jpeg`` (H.264 needs PyAV with libx264)."""
    if wanted == "h264" and not h264_available():
        return "jpeg"
    return wanted


class H264Stream:
    """Encodes one session's frames, in order, as H.264 packets.

    Args:
        width, height: frame size in pixels (even).
        fps: frames per second (the stream's time base).
        crf: x264 constant rate factor (lower = better, bigger; 23 is x264's default).
        keyframe_every: frames between key frames (a late joiner or a lost packet
            recovers at the next one).

    Raises:
        BackendError: PyAV / libx264 missing, or an odd frame size.
    """

    def __init__(self, width: int, height: int, fps: float, crf: int = 23, keyframe_every: int = 48) -> None:
        if width % 2 or height % 2:
            raise BackendError(f"H.264 needs an even frame size, not {width}x{height}", hint="use jpeg")
        if not h264_available():
            raise BackendError("H.264 frames need PyAV with libx264", hint="pip install av, or use jpeg")
        import av

        ctx: Any = av.CodecContext.create("libx264", "w")
        ctx.width, ctx.height, ctx.pix_fmt = width, height, "yuv420p"
        ctx.time_base = _fraction(fps)
        ctx.framerate = _fraction(1.0 / fps)
        ctx.gop_size = keyframe_every
        ctx.options = {**X264_OPTIONS, "crf": str(crf), "forced-idr": "1"}
        ctx.open()
        self._ctx = ctx
        self._pts = 0
        self.width, self.height = width, height

    def encode(self, frames: np.ndarray, key: bool = False) -> tuple[bytes, list[int]]:
        """Encode ``(T, H, W, 3)`` uint8 frames; returns ``(payload, sizes)``, one packet per frame.

        ``key``: make the first frame a key frame (an IDR with the stream's parameter sets,
        so a fresh decoder can start there).

        Raises:
            BackendError: frames of another size.
        """
        import av
        from av.video.frame import PictureType

        if frames.ndim != 4 or frames.shape[1:] != (self.height, self.width, 3):
            raise BackendError(f"frames {frames.shape} are not (T, {self.height}, {self.width}, 3)")
        out: list[bytes] = []
        for f in np.ascontiguousarray(frames, dtype=np.uint8):
            vf = av.VideoFrame.from_ndarray(f, format="rgb24")
            vf.pts = self._pts
            if key and not out:
                vf.pict_type = PictureType.I
            self._pts += 1
            packets = self._ctx.encode(vf)
            out.append(b"".join(bytes(p) for p in packets))
        return b"".join(out), [len(p) for p in out]


class H264Decoder:
    """Decodes the packets of one :class:`H264Stream`, in order, back to RGB frames."""

    def __init__(self) -> None:
        import av

        self._ctx: Any = av.CodecContext.create("h264", "r")

    def decode(self, payload: bytes, sizes: list[int]) -> np.ndarray:
        """``(T, H, W, 3)`` uint8 frames of a block's ``payload`` (``sizes``: one packet per frame).

        Raises:
            BackendError: the sizes do not add up, or a packet does not decode to one frame.
        """
        import av

        if sum(sizes) != len(payload):
            raise BackendError(f"H.264 payload of {len(payload)} bytes does not match its sizes ({sum(sizes)})")
        frames = []
        at = 0
        for n in sizes:
            try:
                got = self._ctx.decode(av.Packet(payload[at:at + n]))
            except av.FFmpegError as exc:
                raise BackendError(f"an H.264 packet does not decode: {exc}") from exc
            at += n
            if len(got) != 1:
                raise BackendError(f"an H.264 packet decoded to {len(got)} frames, not 1")
            frames.append(got[0].to_ndarray(format="rgb24"))
        return np.stack(frames)


class H264Sender:
    """One server session's H.264 stream: encodes its blocks in order and labels them.

    The encoder is made at the first block (its frame size); a block of another size
    starts a new stream (new id, key frame). :meth:`want_key` makes the next block
    start with a key frame (after a reconnect, where the client may have missed a block).

    Args:
        fps: frames per second of the stream.
        crf, keyframe_every: as :class:`H264Stream`.
    """

    def __init__(self, fps: float, crf: int = 23, keyframe_every: int = 48) -> None:
        self.fps, self.crf, self.keyframe_every = fps, crf, keyframe_every
        self._stream: H264Stream | None = None
        self._id = ""
        self._at = 0
        self._key = True

    def want_key(self) -> None:
        """Start the next block with a key frame."""
        self._key = True

    def encode(self, frames: np.ndarray) -> tuple[bytes, list[int], dict[str, Any]]:
        """``(payload, sizes, stream)`` of a ``(T, H, W, 3)`` uint8 block; ``stream`` is
        ``{"id", "at", "key"}``: the stream, its first frame's position in it, and whether
        that frame is a key frame.

        Raises:
            BackendError: PyAV / libx264 missing, or an odd frame size.
        """
        import secrets

        h, w = int(frames.shape[1]), int(frames.shape[2])
        if self._stream is None or (self._stream.width, self._stream.height) != (w, h):
            self._stream = H264Stream(w, h, self.fps, self.crf, self.keyframe_every)
            self._id, self._at, self._key = secrets.token_hex(6), 0, True
        key = self._key
        payload, sizes = self._stream.encode(frames, key=key)
        label = {"id": self._id, "at": self._at, "key": key}
        self._at += len(sizes)
        self._key = False
        return payload, sizes, label


#: Decoded blocks a receiver keeps for re-sends (as many as the server's replay buffer keeps by default).
RECENT_BLOCKS = 4


class H264Receiver:
    """One client's side of an :class:`H264Sender` stream (kept across reconnects).

    Decodes each block once, in stream order (see the module doc). Frames come back
    ``(T, H, W, 3)`` uint8.
    """

    def __init__(self) -> None:
        self._decoder: H264Decoder | None = None
        self._id = ""
        self._at = 0
        self._recent: dict[tuple[str, int, int], np.ndarray] = {}

    def decode(self, payload: bytes, sizes: list[int], stream: dict[str, Any],
               shape: tuple[int, int, int, int]) -> np.ndarray:
        """The frames of one block labelled ``stream`` (``{"id", "at", "key"}``).

        Raises:
            BackendError: the label is malformed, the block is not where this client's
                stream stands and is no key frame (a block was lost), a packet does not
                decode, or the frames are not ``shape``.
        """
        try:
            sid, at, key = str(stream["id"]), int(stream["at"]), bool(stream["key"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"H.264 block without a stream label: {exc}") from exc
        hit = self._recent.get((sid, at, len(sizes)))
        if hit is not None:  # a re-send of a block already decoded
            return hit.copy()
        if not key and (sid != self._id or at != self._at or self._decoder is None):
            where = f"stream {self._id or 'none'} at frame {self._at}"
            raise BackendError(f"H.264 block of stream {sid} at frame {at} does not follow this client's {where} "
                               "and is no key frame (a block was lost)", hint="reconnect: the server sends a key frame")
        if key:  # a fresh decoder: the key frame carries the stream's parameter sets
            self._decoder = H264Decoder()
        assert self._decoder is not None
        frames = self._decoder.decode(payload, sizes)
        if frames.shape != shape:
            raise BackendError(f"H.264 frames are {frames.shape}, the header says {shape}")
        self._id, self._at = sid, at + len(sizes)
        self._recent[(sid, at, len(sizes))] = frames
        while len(self._recent) > RECENT_BLOCKS:
            del self._recent[next(iter(self._recent))]
        return frames


def _fraction(value: float) -> Any:
    from fractions import Fraction

    return Fraction(value).limit_denominator(1001)
