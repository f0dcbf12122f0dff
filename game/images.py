"""The one gate every image file goes through: a reference image the player drops, a
character card's PNG, an author's art.

:func:`validate_image` is called by the window on drop, the headless runner on
``image``, the world's ``add_reference`` handler before it places anything, and the
card loader before it reads a PNG card. It checks, with Pillow, without decoding
more than it must:

* the file exists, is a regular file and is at most :data:`MAX_BYTES` bytes;
* its real format (from its bytes, not its name) is PNG or JPEG;
* its header size is at least 1 x 1 and at most :data:`MAX_SIDE` pixels a side
  and :data:`MAX_PIXELS` pixels in all, checked *before* decoding; decoding then
  runs with ``PIL.Image.MAX_IMAGE_PIXELS`` lowered to :data:`MAX_PIXELS` and
  Pillow's ``DecompressionBombWarning`` raised as an error, so a small file that
  claims a huge picture (a decompression bomb) is refused without being inflated;
* it decodes completely (a truncated file is refused).

Every refusal is a :class:`game.errors.InputError` naming the file and why.
"""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from game.errors import InputError

#: Largest file accepted, bytes (20 MiB).
MAX_BYTES = 20 * 1024 * 1024
#: Largest side, pixels.
MAX_SIDE = 4096
#: Largest picture, pixels (4096 x 4096).
MAX_PIXELS = MAX_SIDE * MAX_SIDE
#: Formats accepted (Pillow's names).
FORMATS = ("PNG", "JPEG")

_LOCK = threading.Lock()


@dataclass(frozen=True)
class ImageInfo:
    """A validated reference image: absolute ``path``, ``format``, ``width`` x ``height`` px, ``bytes``, ``mode``."""

    path: str
    format: str
    width: int
    height: int
    bytes: int
    mode: str


def validate_image(path: str | Path) -> ImageInfo:
    """Check that ``path`` is a usable reference image (see the module doc).

    Args:
        path: a file path (relative paths are taken from the current folder).

    Returns:
        :class:`ImageInfo` with the absolute path.

    Raises:
        game.errors.InputError: missing, not a file, too many bytes, not PNG/JPEG,
            too large, a decompression bomb, or corrupt; ``where`` is the path.
    """
    p = Path(path).expanduser()
    where = str(p)
    try:
        p = p.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise InputError("no such image file", where=where) from exc
    if not p.is_file():
        raise InputError("not a file", where=where)
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise InputError(f"image is {size / 1e6:.1f} MB; the limit is {MAX_BYTES / 1e6:.0f} MB", where=where)
    if size == 0:
        raise InputError("image file is empty", where=where)
    with _LOCK:  # MAX_IMAGE_PIXELS is process-wide: lower it only while we decode
        old = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = MAX_PIXELS
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(p) as im:
                    fmt = str(im.format or "")
                    if fmt not in FORMATS:
                        raise InputError(f"image format {fmt or 'unknown'} is not PNG or JPEG", where=where)
                    w, h = im.size
                    if w < 1 or h < 1 or w > MAX_SIDE or h > MAX_SIDE or w * h > MAX_PIXELS:
                        raise InputError(f"image is {w}x{h} px; at most {MAX_SIDE}x{MAX_SIDE} is accepted",
                                         where=where, hint="a decompression bomb or a very large picture")
                    im.load()
                    mode = str(im.mode)
        except InputError:
            raise
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise InputError(f"image refused as a decompression bomb: {exc}", where=where) from exc
        except UnidentifiedImageError as exc:
            raise InputError("not an image Pillow can read (PNG or JPEG expected)", where=where) from exc
        except (OSError, ValueError, SyntaxError) as exc:
            raise InputError(f"image is corrupt: {exc}", where=where) from exc
        finally:
            Image.MAX_IMAGE_PIXELS = old
    return ImageInfo(str(p), fmt, w, h, size, mode)


#: Caption fields a picture may carry: PNG text chunks (and JPEG comment) and EXIF tags
#: (270 ImageDescription, 40091 XPTitle, 40092 XPComment are Windows' UTF-16 titles).
CAPTION_KEYS = ("Title", "Description", "Caption", "Comment", "comment")
_EXIF_CAPTION = (270,)
#: File-name words that name no subject (camera, screenshot and temporary-file names, drop tests).
NAMELESS_WORDS = frozenset({
    "img", "image", "images", "pic", "picture", "photo", "pxl", "dsc", "dscn", "dcim", "screenshot", "screen",
    "shot", "scan", "untitled", "unnamed", "new", "copy", "tmp", "temp", "test", "drop", "file", "download",
    "square", "swatch", "colour", "color", "solid", "plain", "fill", "small", "big", "large", "tiny",
})
#: Most characters of a caption kept in narration.
MAX_CAPTION = 60


def picture_caption(path: str | Path) -> str:
    """The caption a PNG/JPEG carries in its metadata (PNG ``Title``/``Description``/``Comment``
    text, EXIF ImageDescription), one line, at most :data:`MAX_CAPTION` characters; ``""`` if none
    or the file cannot be read (its image was validated before: see :func:`validate_image`)."""
    try:
        with Image.open(path) as im:
            found = [str(im.info.get(k, "")) for k in CAPTION_KEYS]
            exif = im.getexif()
            found += [str(exif.get(tag, "")) for tag in _EXIF_CAPTION]
    except (OSError, ValueError, SyntaxError, UnidentifiedImageError):
        return ""
    text = " ".join(next((t for t in found if t.strip()), "").split()).strip(" .")
    text = "".join(ch for ch in text if ch.isprintable())
    if len(text) > MAX_CAPTION:
        text = text[:MAX_CAPTION].rsplit(" ", 1)[0] + "…"
    return text


def picture_subject(path: str | Path, nameless: frozenset[str] = frozenset()) -> str:
    """What a picture's file name says it shows: its stem's words (``my_dog-Rex.png`` ->
    ``"my dog Rex"``), or ``""`` when the name says nothing of a subject: only digits, hex
    or camera/temporary-file words (:data:`NAMELESS_WORDS`), or only words in ``nameless``
    (the caller passes colour words: ``red.png`` names the colour a test square was filled
    with, not what it shows)."""
    stem = Path(path).stem
    words = [w for w in re.split(r"[\s_\-.+]+", stem) if w]
    if not words:
        return ""

    def says_nothing(w: str) -> bool:
        low = w.lower()
        return (low in NAMELESS_WORDS or low in nameless or bool(re.fullmatch(r"[0-9a-f]{6,}|\d+|x?\d+x\d+", low))
                or bool(re.fullmatch(r"(img|dsc|pxl|tmp)\w*", low)))
    if all(says_nothing(w) for w in words):
        return ""
    return " ".join(words)
