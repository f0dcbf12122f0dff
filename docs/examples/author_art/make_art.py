"""Draw the author-art example of docs/story-format.md with Pillow, deterministically.

Run from anywhere::

    python docs/examples/author_art/make_art.py

It (re)writes, next to this script: ``lane.png`` (480x270 background plate: a lane at
dusk with a cottage), ``hedge.png`` (480x270 parallax layer, transparent but for a hedge
along the bottom) and ``fox.png`` with its index ``fox.yaml`` (a sprite sheet of 96x96
cells: the six expressions in the first row, ``sit`` and ``walk`` in the second).
Original work, made for this example.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
CELL = 96
FACES = ("neutral", "smile", "frown", "surprised", "sad", "sleeping")


def lane() -> None:
    im = Image.new("RGB", (480, 270))
    d = ImageDraw.Draw(im)
    for y in range(270):  # dusk sky to a lane
        t = y / 160
        c = (int(60 + 180 * t), int(50 + 90 * t), int(110 + 20 * t)) if y < 160 else (84, 110, 70)
        d.line((0, y, 480, y), fill=c)
    d.ellipse((330, 60, 370, 100), fill=(255, 222, 160))
    d.polygon(((0, 170), (140, 150), (300, 165), (480, 145), (480, 270), (0, 270)), fill=(70, 96, 66))
    d.polygon(((200, 270), (240, 165), (260, 165), (330, 270)), fill=(150, 128, 96))  # the lane
    d.rectangle((60, 110, 150, 170), fill=(214, 200, 170))  # the cottage
    d.polygon(((50, 112), (105, 70), (160, 112)), fill=(120, 60, 50))
    d.rectangle((95, 140, 115, 170), fill=(90, 60, 40))
    d.rectangle((70, 125, 88, 140), fill=(255, 220, 130))
    im.save(HERE / "lane.png")


def hedge() -> None:
    im = Image.new("RGBA", (480, 270), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    for k in range(16):
        x = k * 34 - 10
        d.ellipse((x, 232, x + 52, 290), fill=(40, 70, 44, 255))
        d.ellipse((x + 8, 240, x + 30, 262), fill=(58, 92, 56, 255))
    im.save(HERE / "hedge.png")


def fox(d: ImageDraw.ImageDraw, x0: int, y0: int, face: str, pose: str) -> None:
    orange, white, ink = (222, 120, 50, 255), (246, 238, 226, 255), (40, 30, 30, 255)
    low = 18 if pose == "sit" else 0
    d.ellipse((x0 + 8, y0 + 50 + low, x0 + 36, y0 + 70 + low), fill=orange)  # tail
    d.ellipse((x0 + 10, y0 + 62 + low, x0 + 22, y0 + 70 + low), fill=white)
    d.ellipse((x0 + 24, y0 + 44 + low, x0 + 70, y0 + 80 + low // 2), fill=orange)  # body
    if pose != "sit":
        spread = 8 if pose == "walk" else 0
        for lx in (32 - spread, 44, 54 + spread, 64):
            d.rectangle((x0 + lx, y0 + 76, x0 + lx + 5, y0 + 93), fill=(60, 40, 30, 255))
    hy = y0 + 22 + low
    d.polygon(((x0 + 56, hy + 6), (x0 + 60, hy - 12), (x0 + 68, hy + 2)), fill=orange)  # ears
    d.polygon(((x0 + 74, hy + 2), (x0 + 82, hy - 12), (x0 + 86, hy + 6)), fill=orange)
    d.ellipse((x0 + 54, hy, x0 + 88, hy + 30), fill=orange)  # head
    d.polygon(((x0 + 70, hy + 16), (x0 + 94, hy + 22), (x0 + 72, hy + 28)), fill=white)  # muzzle
    d.ellipse((x0 + 91, hy + 19, x0 + 95, hy + 23), fill=ink)
    for ex in (x0 + 66, x0 + 77):
        if face == "sleeping":
            d.arc((ex - 3, hy + 10, ex + 3, hy + 15), 20, 160, fill=ink, width=2)
        elif face == "surprised":
            d.ellipse((ex - 4, hy + 8, ex + 4, hy + 16), fill=white, outline=ink)
            d.ellipse((ex - 1, hy + 11, ex + 2, hy + 14), fill=ink)
        else:
            d.ellipse((ex - 2, hy + 10, ex + 2, hy + 14), fill=ink)
        if face == "frown":
            d.line((ex - 4, hy + 6, ex + 3, hy + 8), fill=ink, width=2)
        if face == "sad":
            d.line((ex - 4, hy + 8, ex + 3, hy + 6), fill=ink, width=2)
    mx, my = x0 + 80, hy + 26
    if face == "smile":
        d.arc((mx - 7, my - 6, mx + 5, my + 2), 20, 160, fill=ink, width=2)
    elif face in ("frown", "sad"):
        d.arc((mx - 6, my - 1, mx + 4, my + 5), 200, 340, fill=ink, width=2)
    elif face == "surprised":
        d.ellipse((mx - 3, my - 3, mx + 2, my + 3), fill=ink)


def sheet() -> None:
    im = Image.new("RGBA", (CELL * len(FACES), CELL * 2), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    for k, face in enumerate(FACES):
        fox(d, k * CELL, 0, face, "stand")
    fox(d, 0, CELL, "sleeping", "sit")
    fox(d, CELL, CELL, "neutral", "walk")
    im.save(HERE / "fox.png")
    cells = "\n".join(f"  {face}: [{k}, 0]" for k, face in enumerate(FACES))
    (HERE / "fox.yaml").write_text(f"image: fox.png\nframe: [{CELL}, {CELL}]\ncells:\n{cells}\n"
                                   "  sit: [0, 1]\n  walk: [1, 1]\n")


def main() -> None:
    lane()
    hedge()
    sheet()


if __name__ == "__main__":
    main()
