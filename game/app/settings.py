"""Player settings of the window: text speed, auto-advance, skip-seen, volume,
subtitles, fullscreen. Plain data with the small steps the keys take.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Text speeds the speed key cycles through, characters per second (0 = instant).
TEXT_SPEEDS = (30.0, 60.0, 120.0, 0.0)
#: Names of :data:`TEXT_SPEEDS`.
SPEED_NAMES = {30.0: "slow", 60.0: "normal", 120.0: "fast", 0.0: "instant"}


@dataclass
class Settings:
    """What the player can change while playing.

    Attributes:
        text_speed: typewriter speed in characters per second; 0 shows lines at once.
        auto_advance: move to the next line by itself after a pause.
        skip_seen: lines seen before are shown at once and skipped through.
        volume: world sound volume, 0..1.
        subtitles: show the lines' text.
        fullscreen: whether the window is fullscreen.
    """

    text_speed: float = 60.0
    auto_advance: bool = False
    skip_seen: bool = False
    volume: float = 0.8
    subtitles: bool = True
    fullscreen: bool = False

    def next_speed(self) -> str:
        """Go to the next text speed; returns its name."""
        i = TEXT_SPEEDS.index(self.text_speed) if self.text_speed in TEXT_SPEEDS else 0
        self.text_speed = TEXT_SPEEDS[(i + 1) % len(TEXT_SPEEDS)]
        return SPEED_NAMES[self.text_speed]

    def change_volume(self, step: float) -> float:
        """Add ``step`` to the volume (clamped to 0..1); returns the new volume."""
        self.volume = round(min(1.0, max(0.0, self.volume + step)), 2)
        return self.volume

    def auto_delay(self, text: str) -> float:
        """Seconds a fully shown line stays before auto-advance moves on."""
        return 1.2 + 0.035 * len(text)
