"""Image metrics of the error bank: SSIM, colour-histogram distance, the drift score, thumbnails.

Every function takes ``uint8`` RGB images, ``(H, W, 3)`` (one frame) or
``(T, H, W, 3)`` (a block), and works on a small copy: frames are first reduced
to :data:`WORK_SIZE` (96 x 54 pixels) by area averaging, so a check costs the
same at any resolution; SSIM then works at :data:`SSIM_SIZE` (48 x 27), as Wang et
al. advise downsampling to the scale at which the images are meant to agree.

Formulas and sources:

* **SSIM** (on grey 48 x 27, Wang, Bovik, Sheikh, Simoncelli, "Image quality assessment: from error
  visibility to structural similarity", IEEE TIP 13(4):600-612, 2004, eq. 13 and
  section III-C): local means, variances and covariance under an 11 x 11 circular
  Gaussian window with sigma 1.5, ``C1 = (0.01 L)^2``, ``C2 = (0.03 L)^2`` with
  ``L = 255``; the mean over all valid window positions (MSSIM). Computed on grey
  images (ITU-R BT.601 luma, ``Y = 0.299 R + 0.587 G + 0.114 B``), as the paper does.
* **Colour-histogram distance**: per RGB channel a 16-bin normalised histogram;
  the Bhattacharyya distance in the Hellinger form OpenCV's ``compareHist``
  (``HISTCMP_BHATTACHARYYA``) uses, ``d = sqrt(1 - sum_i sqrt(p_i q_i))``, in
  [0, 1]; the mean of the three channels (A. Bhattacharyya, "On a measure of
  divergence between two statistical populations", 1943; OpenCV docs,
  "Histogram Comparison").
* **Drift score**: ``min(1, max(w_ssim * (1 - SSIM), w_hist * d_hist))`` with
  ``w_ssim = 1`` and ``w_hist = 2``, in [0, 1] (0 = identical). SSIM sees structure
  (blur, warp, melted shapes) and is nearly blind to a uniform colour cast; the
  histogram sees the cast and is blind to where things are. Either failure alone is
  drift, so the score takes the larger term rather than a mean (a mean would halve a
  pure colour cast). The weights put both terms on one scale: on good procedural
  chunks rendered at 192 x 108 .. 960 x 540 against the 96 x 54 reference, the
  largest ``1 - SSIM`` is about 0.22 and the largest ``2 * d_hist`` about 0.21.
* **Mean CIE76 colour difference** (:func:`delta_e`): mean Euclidean distance in
  CIELAB (D65, sRGB transfer curve per IEC 61966-2-1). No monitor uses it; the
  drift benchmark scores with it so that it does not grade the monitors with their
  own ruler.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image

U8 = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]

#: Working size of the colour histogram, ``(width, height)`` in pixels.
WORK_SIZE = (96, 54)
#: Working size of SSIM: half the reference's resolution, the finest scale at which a
#: 96 x 54 render and a downsampled full-size frame of the same scene agree.
SSIM_SIZE = (48, 27)
#: Thumbnail size stored with each case, ``(width, height)``.
THUMB_SIZE = (96, 54)
#: SSIM constants (Wang et al. 2004, section III-C).
SSIM_K1 = 0.01
SSIM_K2 = 0.03
SSIM_L = 255.0
SSIM_WINDOW = 11
SSIM_SIGMA = 1.5
#: Bins per channel of the colour histogram.
HIST_BINS = 16


def reduce(frame: U8, size: tuple[int, int] = WORK_SIZE) -> U8:
    """Area-average ``frame`` ``(H, W, 3)`` uint8 down (or resample up) to ``size`` = ``(w, h)``.

    Returns the frame itself when it already has that size.
    """
    if frame.shape[1] == size[0] and frame.shape[0] == size[1]:
        return frame
    img = Image.fromarray(np.ascontiguousarray(frame))
    return np.asarray(img.resize(size, Image.Resampling.BOX), dtype=np.uint8)


def grey(frame: U8) -> F64:
    """ITU-R BT.601 luma of ``(H, W, 3)`` uint8 RGB, as ``(H, W)`` float64 in 0..255."""
    f = frame.astype(np.float64)
    out: F64 = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    return out


def _gaussian(size: int = SSIM_WINDOW, sigma: float = SSIM_SIGMA) -> F64:
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    g: F64 = np.exp(-(x * x) / (2.0 * sigma * sigma))
    out: F64 = g / g.sum()
    return out


_WINDOW = _gaussian()


def _filter(img: F64, w: F64) -> F64:
    """Separable 'valid' correlation of ``(..., H, W)`` with the 1-D kernel ``w`` on both axes."""
    k = len(w)
    h, wd = img.shape[-2], img.shape[-1]
    rows = sum(w[i] * img[..., i:h - k + 1 + i, :] for i in range(k))
    out: F64 = sum(w[i] * rows[..., :, i:wd - k + 1 + i] for i in range(k))
    return out


def ssim(a: F64, b: F64) -> float:
    """Mean SSIM of two grey images ``(H, W)`` (or stacks ``(N, H, W)``, averaged), in [-1, 1].

    Wang et al. 2004, eq. 13 with the 11 x 11 Gaussian window (sigma 1.5). Images
    smaller than the window in either axis use a window of their smaller side.

    Raises:
        ValueError: the shapes differ.
    """
    if a.shape != b.shape:
        raise ValueError(f"ssim: shapes differ: {a.shape} vs {b.shape}")
    side = min(a.shape[-2], a.shape[-1])
    w = _WINDOW if side >= SSIM_WINDOW else _gaussian(max(1, side), SSIM_SIGMA)
    c1 = (SSIM_K1 * SSIM_L) ** 2
    c2 = (SSIM_K2 * SSIM_L) ** 2
    mu_a = _filter(a, w)
    mu_b = _filter(b, w)
    aa = _filter(a * a, w) - mu_a * mu_a
    bb = _filter(b * b, w) - mu_b * mu_b
    ab = _filter(a * b, w) - mu_a * mu_b
    num = (2.0 * mu_a * mu_b + c1) * (2.0 * ab + c2)
    den = (mu_a * mu_a + mu_b * mu_b + c1) * (aa + bb + c2)
    return float(np.mean(num / den))


def histograms(frame: U8, bins: int = HIST_BINS) -> F64:
    """Per-channel normalised histograms of ``(H, W, 3)`` uint8 RGB: ``(3, bins)`` float64, rows sum to 1."""
    idx = (frame.reshape(-1, 3).astype(np.int64) * bins) // 256
    out = np.empty((3, bins), np.float64)
    for c in range(3):
        counts = np.bincount(idx[:, c], minlength=bins).astype(np.float64)
        out[c] = counts / max(1.0, counts.sum())
    return out


def hist_distance(a: U8, b: U8, bins: int = HIST_BINS) -> float:
    """Mean over R, G, B of the Bhattacharyya (Hellinger) distance of the two frames'
    ``bins``-bin histograms, in [0, 1] (0 = same distribution)."""
    ha, hb = histograms(a, bins), histograms(b, bins)
    bc = np.sqrt(ha * hb).sum(axis=1)
    return float(np.mean(np.sqrt(np.clip(1.0 - bc, 0.0, 1.0))))


@dataclass(frozen=True)
class DriftScore:
    """The visual drift of a block against its reference.

    Attributes:
        score: combined score in [0, 1] (0 = identical): the larger of ``1 - SSIM`` and
            twice the histogram distance, see the module docstring.
        ssim: mean SSIM of the sampled frames, [-1, 1].
        hist: mean histogram distance of the sampled frames, [0, 1].
        frames: how many frames were compared.
    """

    score: float
    ssim: float
    hist: float
    frames: int


def sample_indices(n: int, k: int = 3) -> list[int]:
    """Up to ``k`` frame indices spread over ``0..n-1`` (first, middle, last for ``k = 3``)."""
    if n <= 0:
        return []
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def drift_score(frames: U8, reference: U8, *, w_ssim: float = 1.0, w_hist: float = 2.0,
                samples: int = 3) -> DriftScore:
    """Drift of a block ``frames`` ``(T, H, W, 3)`` against ``reference`` ``(T', H', W', 3)``.

    Up to ``samples`` frames spread over the block are compared with the reference
    frame at the same relative position; both are reduced to :data:`WORK_SIZE`
    (histograms) and :data:`SSIM_SIZE` (SSIM) first, so the two blocks may differ in
    size and length.

    Raises:
        ValueError: either block is empty or not ``(T, H, W, 3)``.
    """
    if frames.ndim != 4 or reference.ndim != 4 or not len(frames) or not len(reference):
        raise ValueError("drift_score: need two non-empty (T, H, W, 3) blocks")
    idx = sample_indices(len(frames), samples)
    mine = [reduce(frames[i]) for i in idx]
    ref = [reduce(reference[round(i * (len(reference) - 1) / max(1, len(frames) - 1))]) for i in idx]
    s = ssim(np.stack([grey(reduce(m, SSIM_SIZE)) for m in mine]), np.stack([grey(reduce(r, SSIM_SIZE)) for r in ref]))
    h = float(np.mean([hist_distance(m, r) for m, r in zip(mine, ref, strict=True)]))
    score = min(1.0, max(w_ssim * (1.0 - min(1.0, max(0.0, s))), w_hist * h))
    return DriftScore(score=float(score), ssim=s, hist=h, frames=len(idx))


def subsample(frames: U8, rows: int = 108) -> U8:
    """Every ``k``-th row and column of ``(..., H, W, 3)`` with ``k = H // rows`` (at least 1): a cheap
    view for pixel statistics, never for structure."""
    k = max(1, frames.shape[-3] // rows)
    out: U8 = frames[..., ::k, ::k, :]
    return out


def bright_fraction(frames: U8, level: int = 12) -> float:
    """Fraction of pixels of ``(T, H, W, 3)`` (or ``(H, W, 3)``) whose brightest channel exceeds
    ``level`` (on a :func:`subsample` of up to 3 frames)."""
    if frames.size == 0:
        return 0.0
    small = frames if frames.ndim == 3 else frames[:: max(1, len(frames) // 3)]
    return float(np.mean(subsample(small).max(axis=-1) > level))


def motion(frames: U8) -> float:
    """Largest mean absolute difference (0..255) between any frame of the block ``(T, H, W, 3)``
    and its first frame, on a :func:`subsample`; 0 for a frozen block."""
    if len(frames) < 2:
        return 0.0
    small = subsample(frames).astype(np.int16)
    return float(np.abs(small[1:] - small[:1]).mean(axis=(1, 2, 3)).max())


def thumbnail(frame: U8, size: tuple[int, int] = THUMB_SIZE) -> bytes:
    """PNG bytes of ``frame`` ``(H, W, 3)`` uint8 RGB reduced to ``size`` = ``(w, h)``."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(reduce(frame, size))).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def srgb_to_lab(frame: U8) -> F64:
    """CIELAB (D65) of ``(..., 3)`` uint8 sRGB: ``(..., 3)`` float64 with L in 0..100.

    sRGB decoding per IEC 61966-2-1; XYZ -> Lab per CIE 15:2004.
    """
    c = frame.astype(np.float64) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    eps, kappa = 216 / 24389, 24389 / 27
    f = np.where(xyz > eps, np.cbrt(xyz), (kappa * xyz + 16) / 116)
    out: F64 = np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])],
                        axis=-1)
    return out


def delta_e(a: U8, b: U8) -> float:
    """Mean CIE76 colour difference (Euclidean distance in CIELAB) of two same-shaped
    uint8 RGB images or blocks; 0 = identical, ~2.3 = just noticeable.

    Raises:
        ValueError: the shapes differ.
    """
    if a.shape != b.shape:
        raise ValueError(f"delta_e: shapes differ: {a.shape} vs {b.shape}")
    d = srgb_to_lab(a) - srgb_to_lab(b)
    return float(np.sqrt((d * d).sum(axis=-1)).mean())
