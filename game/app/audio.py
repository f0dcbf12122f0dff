"""World sound through ``pygame.mixer``: play each chunk's audio as its frames show.

Chunk audio is ``float32`` mono in [-1, 1] at the chunk's ``audio_rate``; it is
resampled to the mixer's rate, converted to 16-bit and duplicated to the mixer's
channels. If the mixer cannot start (no sound device, ``SDL_AUDIODRIVER=dummy``
refusing), sound is off and everything else goes on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Iterator

import numpy as np
import pygame


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence C-level stderr (alsa-lib prints pages when there is no sound card)."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pytest capture, no real stderr
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


class AudioOut:
    """Plays chunk audio on one mixer channel.

    Args:
        enabled: try to open the mixer at all.
        rate: preferred mixer rate, Hz.
        volume: 0..1.
    """

    def __init__(self, enabled: bool = True, rate: int = 22050, volume: float = 0.8) -> None:
        self.volume = volume
        self.error = ""
        self._channel: pygame.mixer.Channel | None = None
        self._voice: pygame.mixer.Channel | None = None
        self._freq = 0
        self._channels = 0
        #: spoken sentences waiting for the voice channel, in order (a Channel queues only one sound)
        self._voices: deque[pygame.mixer.Sound] = deque()
        self._voice_lock = threading.Lock()
        self._feeder: threading.Thread | None = None
        self._stop = threading.Event()
        if not enabled:
            self.error = "sound off"
            return
        try:
            if not pygame.mixer.get_init():
                with quiet_stderr():
                    pygame.mixer.init(frequency=rate, size=-16, channels=2, buffer=1024)
            init = pygame.mixer.get_init()
            if not init:
                raise pygame.error("mixer did not start")
            self._freq, _, self._channels = init
            self._channel = pygame.mixer.Channel(0)
            if pygame.mixer.get_num_channels() > 1:
                self._voice = pygame.mixer.Channel(1)
        except (pygame.error, NotImplementedError, OSError) as exc:
            self.error = f"sound off ({exc})"
            self._channel = None

    @property
    def on(self) -> bool:
        """Whether sound plays."""
        return self._channel is not None

    def set_volume(self, volume: float) -> None:
        """Volume 0..1 for what plays now and after."""
        self.volume = min(1.0, max(0.0, volume))
        if self._channel is not None:
            self._channel.set_volume(self.volume)

    def to_samples(self, audio: np.ndarray, rate: int) -> np.ndarray:
        """``audio`` (float32 mono at ``rate``) as int16 ``(N, channels)`` at the mixer rate."""
        mono = np.clip(np.asarray(audio, dtype=np.float32).reshape(-1), -1.0, 1.0)
        if self._freq and rate and rate != self._freq and mono.size > 1:
            n = max(1, int(round(mono.size * self._freq / rate)))
            mono = np.interp(np.linspace(0.0, mono.size - 1, n), np.arange(mono.size),
                             mono).astype(np.float32)
        pcm = (mono * 32767.0).astype(np.int16)
        return np.ascontiguousarray(np.repeat(pcm[:, None], max(1, self._channels), axis=1))

    def play(self, audio: np.ndarray, rate: int) -> None:
        """Play a chunk's sound now (cuts off what played before on this channel)."""
        if self._channel is None or audio.size == 0:
            return
        try:
            sound = pygame.sndarray.make_sound(self.to_samples(audio, rate))
            self._channel.set_volume(self.volume)
            self._channel.play(sound)
        except (pygame.error, ValueError) as exc:
            self.error = f"sound off ({exc})"
            self._channel = None

    def queue(self, audio: np.ndarray, rate: int) -> None:
        """Play after what plays now (gapless continuation of the same request)."""
        if self._channel is None or audio.size == 0:
            return
        if not self._channel.get_busy():
            self.play(audio, rate)
            return
        try:
            self._channel.queue(pygame.sndarray.make_sound(self.to_samples(audio, rate)))
        except (pygame.error, ValueError):
            self.play(audio, rate)

    def voice(self, audio: np.ndarray, rate: int) -> None:
        """Play a character's spoken sentence (float32 mono at ``rate`` Hz) on its own channel,
        after every sentence queued before it (of any speaker); world sound goes on under it.

        A pygame ``Channel`` holds one queued sound, so sentences wait in a queue of our own;
        a feeder thread hands the next one to the channel whenever its queue slot is free
        (polled every 20 ms).
        """
        if self._voice is None or self._channel is None or audio.size == 0:
            return
        try:
            sound = pygame.sndarray.make_sound(self.to_samples(audio, rate))
        except (pygame.error, ValueError):
            return  # a sentence lost is not a reason to stop the game
        with self._voice_lock:
            self._voices.append(sound)
            if self._feeder is None:
                self._feeder = threading.Thread(target=self._feed, name="worldloom-voice-out", daemon=True)
                self._feeder.start()
        self.pump()

    @property
    def voices_waiting(self) -> int:
        """Sentences queued and not yet handed to the voice channel."""
        with self._voice_lock:
            return len(self._voices)

    def pump(self) -> None:
        """Hand the next waiting sentence to the voice channel if it has room (called by the feeder)."""
        voice = self._voice
        if voice is None:
            return
        with self._voice_lock:
            try:
                while self._voices:
                    if not voice.get_busy():
                        voice.set_volume(min(1.0, self.volume * 1.25))
                        voice.play(self._voices.popleft())
                    elif voice.get_queue() is None:
                        voice.queue(self._voices.popleft())
                    else:
                        break
            except pygame.error:
                self._voices.clear()

    def _feed(self) -> None:
        while not self._stop.wait(0.02):
            self.pump()

    def stop(self) -> None:
        """Silence (a newer request cut the old sound short)."""
        if self._channel is not None:
            self._channel.stop()

    def close(self) -> None:
        """Stop and release the mixer."""
        self._stop.set()
        with self._voice_lock:
            self._voices.clear()
        self.stop()
        if self._channel is not None and pygame.mixer.get_init():
            pygame.mixer.quit()
        self._channel = None
        self._voice = None
