"""Every sentence of every speaker plays, in order (issue 11, part 7): a queue of our own over the mixer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pygame
import pytest

from game.app.audio import AudioOut


class FakeChannel:
    """A pygame Channel's queue rules: one playing, one queued; ``finish()`` ends the playing sound."""

    def __init__(self) -> None:
        self.playing: Any = None
        self.queued: Any = None
        self.heard: list[Any] = []

    def get_busy(self) -> bool:
        return self.playing is not None

    def get_queue(self) -> Any:
        return self.queued

    def play(self, sound: Any) -> None:
        self.playing = sound
        self.heard.append(sound)

    def queue(self, sound: Any) -> None:
        assert self.queued is None, "a pygame Channel holds one queued sound: the second would replace it"
        self.queued = sound

    def finish(self) -> None:
        self.playing, self.queued = self.queued, None
        if self.playing is not None:
            self.heard.append(self.playing)

    def set_volume(self, volume: float) -> None:
        pass


def test_five_sentences_of_two_speakers_all_play_in_order() -> None:
    out = AudioOut(enabled=True)
    if not out.on:
        pytest.skip(f"no mixer here: {out.error}")
    fake = FakeChannel()
    out._voice = fake  # type: ignore[assignment]
    out._stop.set()  # no feeder thread: the test pumps by hand, so nothing depends on timing
    out._feeder = object()  # type: ignore[assignment]
    for k in range(5):  # Eve's three sentences, then two of another character
        audio = np.full(2205, 0.01 * (k + 1), np.float32)
        out.voice(audio, 22050)
    assert len(fake.heard) == 1 and fake.queued is not None and out.voices_waiting == 3
    while fake.get_busy():
        fake.finish()
        out.pump()
    assert len(fake.heard) == 5 and out.voices_waiting == 0
    levels = [float(np.asarray(pygame.sndarray.array(s)).max()) for s in fake.heard]
    assert levels == sorted(levels)  # in the order they were said
    out.close()
