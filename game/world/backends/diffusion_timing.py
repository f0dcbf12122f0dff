"""Per-stage wall time of one diffusers pipeline call (encode, denoise, decode).

A diffusers pipeline call is one opaque function; :class:`StageClock` splits its
time by wrapping, for the duration of the call only, the pieces that are not
denoising: the VAE's ``encode`` / ``decode`` and the video processor's
``preprocess`` / ``preprocess_video`` / ``postprocess_video``. Everything else in
the call (the transformer steps, the scheduler, the timestep matrix) is denoising.
On a GPU each boundary synchronises the device so the times are the device's.
The wrapped methods are instance attributes and are removed again when the
measurement ends; callers hold the pipeline's lock, so no other call sees them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass
class StageTimes:
    """Milliseconds spent in one call: ``encode`` (VAE encode, pre-processing), ``decode``
    (VAE decode, post-processing) and ``total`` (the whole call); ``denoise`` is the rest."""

    encode_ms: float = 0.0
    decode_ms: float = 0.0
    total_ms: float = 0.0

    @property
    def denoise_ms(self) -> float:
        return max(0.0, self.total_ms - self.encode_ms - self.decode_ms)


class StageClock:
    """Measures :class:`StageTimes` of calls to the pipelines sharing ``vae``.

    Args:
        device: the device the pipeline runs on (``"cuda"`` ones are synchronised).
    """

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def sync(self) -> None:
        """Wait for the GPU (no-op on the CPU)."""
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    def now(self) -> float:
        """Seconds, after waiting for the device."""
        self.sync()
        return time.perf_counter()

    @contextmanager
    def measure(self, pipe: Any) -> Iterator[StageTimes]:
        """Time everything run inside the ``with`` block on ``pipe`` (see the module doc)."""
        times = StageTimes()
        patched: list[tuple[Any, str]] = []
        depth = [0]  # nested wrapped calls (preprocess_video calls preprocess) count once

        def wrap(obj: Any, name: str, stage: str) -> None:
            if obj is None or not hasattr(obj, name) or name in vars(obj):
                return
            inner: Callable[..., Any] = getattr(obj, name)

            def timed(*args: Any, **kwargs: Any) -> Any:
                if depth[0]:
                    return inner(*args, **kwargs)
                depth[0] += 1
                t0 = self.now()
                try:
                    return inner(*args, **kwargs)
                finally:
                    depth[0] -= 1
                    ms = (self.now() - t0) * 1000.0
                    setattr(times, stage, getattr(times, stage) + ms)

            object.__setattr__(obj, name, timed)
            patched.append((obj, name))

        vae = getattr(pipe, "vae", None)
        proc = getattr(pipe, "video_processor", None)
        wrap(vae, "encode", "encode_ms")
        wrap(vae, "decode", "decode_ms")
        wrap(proc, "preprocess", "encode_ms")
        wrap(proc, "preprocess_video", "encode_ms")
        wrap(proc, "postprocess_video", "decode_ms")
        t0 = self.now()
        try:
            yield times
        finally:
            times.total_ms = (self.now() - t0) * 1000.0
            for obj, name in patched:
                obj.__dict__.pop(name, None)
