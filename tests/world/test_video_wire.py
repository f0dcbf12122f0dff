"""H.264 frames (PyAV) for the wire: a session's shot round-trips close, smaller than JPEG; JPEG is the fallback."""

from __future__ import annotations

import numpy as np
import pytest

from game.errors import BackendError
from game.world import video_wire
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import SessionStart, WorldRequest
from game.world.wire import encode_frames


def shot(blocks: int = 4) -> list[np.ndarray]:
    backend = ProceduralBackend(width=160, height=90, frames_per_block=12)
    backend.start(SessionStart("s", 1, "a meadow at dusk"))
    return [c.frames for seq in range(1, blocks + 1)
            for c in backend.generate(WorldRequest("s", seq, 12, "a meadow at dusk", "plain", actions=("d",) * 12))]


def test_a_shot_round_trips_as_h264_smaller_than_jpeg() -> None:
    if not video_wire.h264_available():
        pytest.skip("PyAV with libx264 is not installed (pip install 'worldloom[video]')")
    enc, dec = video_wire.H264Stream(160, 90, 24.0), video_wire.H264Decoder()
    h264_bytes = jpeg_bytes = 0
    for blk in shot():
        payload, sizes = enc.encode(blk)
        assert len(sizes) == blk.shape[0] and sum(sizes) == len(payload)  # one packet per frame, no delay
        back = dec.decode(payload, sizes)
        assert back.shape == blk.shape and back.dtype == np.uint8
        mse = float(((back.astype(np.float64) - blk) ** 2).mean())
        assert 10 * np.log10(255.0 ** 2 / mse) > 30.0
        h264_bytes += len(payload)
        jpeg_bytes += len(encode_frames(blk, "jpeg")[0])
    assert h264_bytes * 2 < jpeg_bytes  # consecutive frames differ little: video sends the differences
    with pytest.raises(BackendError, match="does not match"):
        dec.decode(b"\x00" * 10, [4])
    with pytest.raises(BackendError, match="even frame size"):
        video_wire.H264Stream(161, 90, 24.0)


def test_without_pyav_jpeg_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(video_wire, "h264_available", lambda: False)
    assert video_wire.pick_encoding("h264") == "jpeg"
    assert video_wire.pick_encoding("raw") == "raw"
    with pytest.raises(BackendError, match="PyAV"):
        video_wire.H264Stream(160, 90, 24.0)
