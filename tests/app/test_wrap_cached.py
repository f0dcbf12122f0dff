"""The dialogue panel wraps the line it shows on every frame; a long story line (20,000 words)
took seconds of CPU a frame to wrap, so the window stalled. A text wrapped once is not measured again."""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import pytest  # noqa: E402

from game.app import fonts  # noqa: E402
from game.app.fonts import Typeface  # noqa: E402


def test_a_text_wrapped_once_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    face = Typeface(20)
    text = "blah " * 2000
    rows = face.wrap(text, 400)
    assert len(rows) > 100 and all(face.width(r) <= 400 for r in rows)
    measured: list[str] = []
    real = Typeface.width
    monkeypatch.setattr(Typeface, "width", lambda self, t: measured.append(t) or real(self, t))
    for _ in range(3):  # three frames of the same line
        assert face.wrap(text, 400) == rows
    assert measured == []
    face.wrap(text, 300)  # another column width is wrapped anew
    assert measured
    rows.append("changed by the caller")
    assert face.wrap(text, 400)[-1] != "changed by the caller"
    for i in range(fonts.WRAPPED + 1):  # the oldest results give way
        face.wrap(f"line {i}", 400)
    assert len(face._wrapped) == fonts.WRAPPED
