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
        ctx.options = {**X264_OPTIONS, "crf": str(crf)}
        ctx.open()
        self._ctx = ctx
        self._pts = 0
        self.width, self.height = width, height

    def encode(self, frames: np.ndarray) -> tuple[bytes, list[int]]:
        """Encode ``(T, H, W, 3)`` uint8 frames; returns ``(payload, sizes)``, one packet per frame.

        Raises:
            BackendError: frames of another size.
        """
        import av

        if frames.ndim != 4 or frames.shape[1:] != (self.height, self.width, 3):
            raise BackendError(f"frames {frames.shape} are not (T, {self.height}, {self.width}, 3)")
        out: list[bytes] = []
        for f in np.ascontiguousarray(frames, dtype=np.uint8):
            vf = av.VideoFrame.from_ndarray(f, format="rgb24")
            vf.pts = self._pts
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
            got = self._ctx.decode(av.Packet(payload[at:at + n]))
            at += n
            if len(got) != 1:
                raise BackendError(f"an H.264 packet decoded to {len(got)} frames, not 1")
            frames.append(got[0].to_ndarray(format="rgb24"))
        return np.stack(frames)


def _fraction(value: float) -> Any:
    from fractions import Fraction

    return Fraction(value).limit_denominator(1001)
