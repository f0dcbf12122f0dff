"""Right-to-left lines in the window (#17): Hebrew and Arabic are shaped by pygame-ce's font with
script and direction set, and read from the right (the first letter is drawn rightmost)."""

from __future__ import annotations

import numpy as np
import pygame
import pytest

from game.app.fonts import Typeface, rtl_script


@pytest.fixture(scope="module")
def face() -> Typeface:
    pygame.init()
    return Typeface(40)


def ink(face: Typeface, text: str) -> np.ndarray:
    """Where ``text`` puts ink: ``(width, height)`` booleans, trimmed to the inked columns."""
    alpha = pygame.surfarray.array_alpha(face.render(text, (255, 255, 255))) > 0
    cols = np.nonzero(alpha.any(axis=1))[0]
    return alpha[cols[0]:cols[-1] + 1]


def at_ends(face: Typeface, line: str) -> tuple[float, float]:
    """How well the line's first letter, drawn alone, matches the line's (right end, left end)."""
    first, whole = ink(face, line[0]), ink(face, line)
    w = first.shape[0]
    return float((whole[-w:] == first).mean()), float((whole[:w] == first).mean())


@pytest.mark.parametrize("line, script", [("אבגדה", "Hebr"), ("اودر", "Arab")])
def test_a_right_to_left_line_starts_at_the_right(face: Typeface, line: str, script: str) -> None:
    if not all(face.has_glyph(ch) for ch in line):
        pytest.skip(f"no font here has the {script} letters")
    assert rtl_script(line) == script
    right, left = at_ends(face, line)
    assert right == 1.0 and left < 0.97, (right, left)


def test_a_latin_line_still_starts_at_the_left(face: Typeface) -> None:
    right, left = at_ends(face, "Wake")
    assert rtl_script("Wake") == "" and left == 1.0 and right < 0.97


def test_arabic_letters_join(face: Typeface) -> None:
    """Shaped, ب in the middle of a word takes its joined form: the word is not its letters side by side."""
    if not face.has_glyph("ب"):
        pytest.skip("no font here has Arabic letters")
    word, alone = ink(face, "ببب"), ink(face, "ب")
    assert word.shape[0] < 3 * alone.shape[0]  # joined forms are narrower than three isolated ones
