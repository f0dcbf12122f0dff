"""Procedural sound: ambience by time, weather and water, and short reaction sounds.

Everything is a pure function of its arguments. Noise is read from fixed pages
of a generator seeded by ``(seed, channel, page)`` and indexed by absolute sample
position, filters are FIR over a window that reaches back before the block, and
random events (rain drops, bubbles, bird calls) are drawn per page; so a block's
sound is the same however a session is cut into blocks, and blocks join without
clicks. Signals are ``float32`` mono in [-1, 1] at ``rate`` Hz.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

#: Samples per noise / event page.
PAGE = 4096
#: Reactions that have a sound.
REACTIONS = ("leap", "recoil", "nuzzle", "tilt", "sleep", "flee")

_CHANNELS = {
    name: k
    for k, name in enumerate(
        ("wind", "rustle", "crickets", "birds", "rain", "drops", "water", "bubbles", *REACTIONS)
    )
}
_PAGE_BIAS = 1 << 40


@dataclass(frozen=True)
class Ambience:
    """Levels (0..1) of the ambient sound layers."""

    wind: float = 0.3
    crickets: float = 0.0
    birds: float = 0.0
    rain: float = 0.0
    water: float = 0.0


def ambience_for(time_of_day: str, weather: str, water: bool) -> Ambience:
    """The ambience of a place.

    Args:
        time_of_day: ``day``, ``dawn``, ``golden`` (the hour before dusk), ``dusk`` or ``night``.
        weather: ``clear``, ``rain``, ``fog`` or ``snow``.
        water: whether running water is near (a creek).
    """
    wet = weather == "rain"
    quiet = weather in ("rain", "snow")
    crickets = {"dusk": 0.6, "night": 0.9}.get(time_of_day, 0.0) * (0.0 if quiet else 1.0)
    birds = {"day": 0.5, "dawn": 0.8}.get(time_of_day, 0.0) * (0.2 if quiet else 1.0)
    wind = {"night": 0.18, "day": 0.3}.get(time_of_day, 0.25)
    wind = {"rain": 0.4, "snow": 0.45, "fog": 0.12}.get(weather, wind)
    return Ambience(wind=wind, crickets=crickets, birds=birds, rain=1.0 if wet else 0.0,
                    water=0.7 if water else 0.0)


def _gen(seed: int, channel: str, page: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, _CHANNELS[channel], page + _PAGE_BIAS])


def noise(seed: int, channel: str, start: int, n: int) -> F32:
    """Standard normal noise for absolute samples ``[start, start + n)`` of a channel."""
    if n <= 0:
        return np.zeros(0, dtype=np.float32)
    p0, p1 = start // PAGE, (start + n - 1) // PAGE
    pages = [_gen(seed, channel, p).standard_normal(PAGE, dtype=np.float32) for p in range(p0, p1 + 1)]
    joined = np.concatenate(pages)
    off = start - p0 * PAGE
    return joined[off : off + n]


def _fir(x: F32, taps: int, passes: int = 2) -> F32:
    """Box-filter ``x`` ``passes`` times (causal, 'valid'): output is ``passes*(taps-1)`` shorter."""
    kernel = np.full(taps, 1.0 / taps, dtype=np.float32)
    for _ in range(passes):
        x = np.convolve(x, kernel, mode="valid").astype(np.float32)
    return x


def _fir_gain(taps: int, passes: int = 2) -> float:
    """RMS of unit white noise after :func:`_fir` (to normalise it back to 1)."""
    k = np.ones(1)
    for _ in range(passes):
        k = np.convolve(k, np.full(taps, 1.0 / taps))
    return float(np.sqrt(np.sum(k * k)))


def lowpassed(seed: int, channel: str, start: int, n: int, taps: int) -> F32:
    """Unit-RMS low-passed noise (cutoff about ``rate / taps / 2``) for ``[start, start + n)``."""
    pad = 2 * (taps - 1)
    x = _fir(noise(seed, channel, start - pad, n + pad), taps)
    return (x / _fir_gain(taps)).astype(np.float32)


def _events(
    seed: int, channel: str, start: int, n: int, rate: int, per_second: float, longest: int,
    render: Callable[[np.random.Generator], F32],
) -> F32:
    """Sum of short sounds at random times (Poisson, ``per_second``), each ``render(gen)``,
    at most ``longest`` samples long, over ``[start, start + n)``."""
    out = np.zeros(n, dtype=np.float32)
    if per_second <= 0.0:
        return out
    lam = per_second * PAGE / rate
    for page in range((start - longest) // PAGE, (start + n - 1) // PAGE + 1):
        g = _gen(seed, channel, page)
        times = np.sort(g.integers(0, PAGE, int(g.poisson(lam))))
        for t in times:
            sig = render(g)
            t0 = page * PAGE + int(t) - start
            a, b = max(0, t0), min(n, t0 + sig.size)
            if b > a:
                out[a:b] += sig[a - t0 : b - t0]
    return out


def _chirp(f0: float, f1: float, dur: float, rate: int, shape: float = 2.0) -> F32:
    """A sine sweeping from ``f0`` to ``f1`` Hz over ``dur`` s with a smooth envelope."""
    t = np.arange(int(dur * rate), dtype=np.float64) / rate
    freq = f0 + (f1 - f0) * t / dur
    phase = 2 * math.pi * np.cumsum(freq) / rate
    env = np.sin(math.pi * t / dur) ** shape
    return (np.sin(phase) * env).astype(np.float32)


def ambience(amb: Ambience, seed: int, start: int, n: int, rate: int) -> F32:
    """Ambient sound for absolute samples ``[start, start + n)``, float32, unclipped (~±0.5)."""
    t = (start + np.arange(n, dtype=np.float64)) / rate
    out = np.zeros(n, dtype=np.float32)
    if amb.wind > 0:
        g = _gen(seed, "wind")
        p1, p2 = g.uniform(0, 2 * math.pi, 2)
        gust = 0.35 + 0.65 * (0.5 + 0.5 * np.sin(2 * math.pi * t / 7.3 + p1)) * (
            0.6 + 0.4 * np.sin(2 * math.pi * t / 2.9 + p2)
        )
        body = lowpassed(seed, "wind", start, n, max(2, rate // 350))
        rustle = lowpassed(seed, "rustle", start, n, max(2, rate // 2500))
        out += (amb.wind * 0.2 * gust * (body + 0.25 * rustle)).astype(np.float32)
    if amb.crickets > 0:
        g = _gen(seed, "crickets")
        for _ in range(3):
            f = g.uniform(4000, 5200)
            period, off = g.uniform(0.6, 1.2), g.uniform(0, 1.2)
            pulses, gap, dur = int(g.integers(3, 5)), 0.05, 0.02
            ph = (t + off) % period
            idx = np.floor(ph / gap)
            within = ph - idx * gap
            env = np.where((idx < pulses) & (within < dur), np.sin(math.pi * within / dur), 0.0)
            level = amb.crickets * 0.045 * g.uniform(0.6, 1.0)
            out += (level * env * np.sin(2 * math.pi * f * t)).astype(np.float32)
    if amb.birds > 0:
        def bird(g: np.random.Generator) -> F32:
            notes = [
                _chirp(f, f * g.uniform(0.7, 1.4), g.uniform(0.05, 0.09), rate)
                for f in g.uniform(2400, 4600, int(g.integers(2, 6)))
            ]
            gap = np.zeros(int(0.03 * rate), dtype=np.float32)
            calls = np.concatenate([np.concatenate([s, gap]) for s in notes])
            return (calls * 0.06).astype(np.float32)

        out += amb.birds * _events(seed, "birds", start, n, rate, 0.5, int(0.7 * rate), bird)
    if amb.rain > 0:
        white = noise(seed, "rain", start, n)
        dull = lowpassed(seed, "rain", start, n, 4)
        out += (amb.rain * (0.05 * (white - 0.5 * dull) + 0.04 * dull)).astype(np.float32)

        def drop(g: np.random.Generator) -> F32:
            k = np.arange(int(0.015 * rate), dtype=np.float64)
            f = g.uniform(1500, 4200)
            return (np.sin(2 * math.pi * f * k / rate) * np.exp(-k / (0.003 * rate)) * 0.05).astype(
                np.float32
            )

        out += amb.rain * _events(seed, "drops", start, n, rate, 25.0, int(0.015 * rate), drop)
    if amb.water > 0:
        pad = 2 * (24 - 1)
        x = noise(seed, "water", start - pad, n + pad)
        band = _fir(x, 6)[-n:] - _fir(x, 24)[-n:]
        g = _gen(seed, "water")
        p1, p2 = g.uniform(0, 2 * math.pi, 2)
        babble = 0.6 + 0.4 * np.sin(2 * math.pi * 0.37 * t + p1) * np.sin(2 * math.pi * 1.3 * t + p2)
        out += (amb.water * 0.25 * band * babble).astype(np.float32)

        def bubble(g: np.random.Generator) -> F32:
            dur = g.uniform(0.03, 0.06)
            f = g.uniform(400, 1000)
            return _chirp(f, f * 1.6, dur, rate, shape=1.0) * 0.05

        out += amb.water * _events(seed, "bubbles", start, n, rate, 6.0, int(0.06 * rate), bubble)
    return out


def reaction(kind: str, seed: int, pitch: float, offset: int, n: int, rate: int) -> F32:
    """Samples ``[offset, offset + n)`` of a reaction sound that starts at sample 0.

    Args:
        kind: one of :data:`REACTIONS` (others are silent).
        seed: session seed (for the noisy parts).
        pitch: voice pitch factor (about 0.8..1.25; a character's own).
        offset: first sample wanted, counted from the reaction's start.
        n: samples wanted.
        rate: Hz.
    """
    t = (offset + np.arange(n, dtype=np.float64)) / rate
    if kind not in REACTIONS or n <= 0:
        return np.zeros(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float64)
    if kind == "leap":  # rising happy chirps
        for j in range(3):
            t0, dur = 0.13 * j, 0.11
            u = t - t0
            on = (u >= 0) & (u < dur)
            f0 = 700.0 * pitch * (1 + 0.25 * j)
            phase = 2 * math.pi * f0 * (u + 0.3 * u * u / dur)
            env = np.where(on, np.sin(math.pi * np.clip(u, 0, dur) / dur) ** 2, 0.0)
            out += 0.35 * env * (np.sin(phase) + 0.3 * np.sin(2 * phase))
    elif kind == "recoil":  # low falling growl
        dur = 0.7
        on = t < dur
        phase = 2 * math.pi * 160.0 * pitch * (t - 0.45 * t * t / (2 * dur))
        saw = sum(np.sin(k * phase) / k for k in range(1, 7))
        tremolo = 0.7 + 0.3 * np.sin(2 * math.pi * 28 * t)
        rasp = lowpassed(seed, "recoil", offset, n, 6)
        env = np.where(on, np.minimum(1.0, t / 0.03) * np.clip(1 - t / dur, 0, 1) ** 1.5, 0.0)
        out += 0.3 * env * (saw * tremolo + 0.3 * rasp)
    elif kind == "nuzzle":  # soft purr
        dur = 1.2
        gate = (0.5 + 0.5 * np.sin(2 * math.pi * 24 * t)) ** 2
        tone = np.sin(2 * math.pi * 95 * pitch * t) + 0.4 * np.sin(2 * math.pi * 190 * pitch * t)
        hum = lowpassed(seed, "nuzzle", offset, n, 30)
        env = np.where(t < dur, np.sin(math.pi * np.clip(t, 0, dur) / dur), 0.0)
        out += 0.3 * env * gate * (0.6 * tone + 0.5 * hum)
    elif kind == "tilt":  # curious two notes, the second rising
        for t0, dur, f0, f1 in ((0.0, 0.16, 520.0, 540.0), (0.2, 0.22, 620.0, 830.0)):
            u = t - t0
            on = (u >= 0) & (u < dur)
            phase = 2 * math.pi * pitch * (f0 * u + (f1 - f0) * u * u / (2 * dur))
            env = np.where(on, np.sin(math.pi * np.clip(u, 0, dur) / dur), 0.0)
            out += 0.3 * env * (np.sin(phase) + 0.2 * np.sin(2 * phase))
    elif kind == "sleep":  # slow breath with a low snore
        dur = 1.6
        env = np.where(t < dur, np.sin(math.pi * np.clip(t, 0, dur) / dur) ** 2, 0.0)
        breath = lowpassed(seed, "sleep", offset, n, 12)
        out += env * (0.12 * breath + 0.08 * np.sin(2 * math.pi * 70 * pitch * t))
    else:  # flee: a squeak then scurrying patter
        squeak = np.where(t < 0.12, np.sin(math.pi * np.clip(t, 0, 0.12) / 0.12), 0.0)
        out += 0.25 * squeak * np.sin(2 * math.pi * pitch * (1200 * t + 1700 * t * t))
        step = (t * 14.0) % 1.0
        click = np.where((t > 0.1) & (t < 0.9), np.exp(-step * 40.0), 0.0)
        out += 0.3 * click * noise(seed, "flee", offset, n)
    return out.astype(np.float32)


def mix(*tracks: F32) -> F32:
    """Sum equal-length tracks and soft-clip into [-1, 1] (float32)."""
    total = np.sum(np.stack(tracks), axis=0) if tracks else np.zeros(0, dtype=np.float32)
    out: F32 = np.clip(np.tanh(total), -1.0, 1.0).astype(np.float32)
    return out
