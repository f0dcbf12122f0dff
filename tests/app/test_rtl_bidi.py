"""Mixed right-to-left and left-to-right lines (#17): the Unicode bidi algorithm puts a Latin word
inside a Hebrew line back left to right (and a Hebrew phrase inside an English line right to left),
and a right-to-left paragraph is right-aligned in the dialogue panel and the history."""

from __future__ import annotations

import os

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import panels  # noqa: E402
from game.app.fonts import Fonts, Typeface, right_to_left, visual_runs  # noqa: E402
from game.app.layout import make_layout  # noqa: E402

HEBREW = "אבגדה"


@pytest.fixture(scope="module")
def face() -> Typeface:
    pygame.init()
    f = Typeface(40)
    if not all(f.has_glyph(ch) for ch in HEBREW):
        pytest.skip("no font here has Hebrew letters")
    return f


def ink(face: Typeface, text: str) -> np.ndarray:
    """Where ``text`` puts ink: ``(width, height)`` booleans, trimmed to the inked columns."""
    alpha = pygame.surfarray.array_alpha(face.render(text, (255, 255, 255))) > 0
    cols = np.nonzero(alpha.any(axis=1))[0]
    return alpha[cols[0]:cols[-1] + 1]


def starts_with(whole: np.ndarray, part: np.ndarray) -> bool:
    return whole.shape[0] >= part.shape[0] and bool((whole[:part.shape[0]] == part).all())


def ends_with(whole: np.ndarray, part: np.ndarray) -> bool:
    return whole.shape[0] >= part.shape[0] and bool((whole[-part.shape[0]:] == part).all())


def test_runs_come_in_visual_order() -> None:
    assert visual_runs(f"{HEBREW} Wake 42") == [("Wake 42 ", False), (HEBREW, True)]
    assert visual_runs(f"Wake {HEBREW} now") == [("Wake ", False), (HEBREW, True), (" now", False)]
    assert visual_runs("Wake") == [("Wake", False)]
    assert right_to_left(f"{HEBREW} Wake") and not right_to_left(f"Wake {HEBREW}") and not right_to_left("Wake")


def test_a_latin_word_in_a_hebrew_line_reads_left_to_right(face: Typeface) -> None:
    """Read from the right: the Hebrew first (rightmost), then "Wake" to its left, not "ekaW"."""
    whole, latin, hebrew = ink(face, f"{HEBREW} Wake"), ink(face, "Wake"), ink(face, HEBREW)
    assert starts_with(whole, latin) and ends_with(whole, hebrew)
    assert not starts_with(whole, ink(face, "ekaW"))


def test_a_hebrew_phrase_in_an_english_line_reads_right_to_left(face: Typeface) -> None:
    whole = ink(face, f"Wake {HEBREW} now")
    assert starts_with(whole, ink(face, "Wake")) and ends_with(whole, ink(face, "now"))
    # the Hebrew word sits between, drawn as it is alone (its first letter rightmost)
    hebrew = ink(face, HEBREW)
    left = ink(face, "Wake ").shape[0]
    found = any((whole[x:x + hebrew.shape[0]] == hebrew).all() for x in range(left - 4, left + 20))
    assert found


def test_a_right_to_left_line_is_right_aligned_in_the_panel() -> None:
    pygame.init()
    layout = make_layout((1280, 720), (960, 540))
    fonts = Fonts(1.0)
    if not all(fonts.body.has_glyph(ch) for ch in HEBREW):
        pytest.skip("no font here has Hebrew letters")
    area = layout.text

    def inked(line: str) -> tuple[int, int]:
        surf = pygame.Surface((1280, 720), pygame.SRCALPHA)
        panels.dialogue(surf, layout, fonts, "", line, line, False, True, False)
        alpha = pygame.surfarray.array_alpha(surf)[area.x:area.right] > 0
        cols = np.nonzero(alpha.any(axis=1))[0]
        return area.x + int(cols[0]), area.x + int(cols[-1])

    left, right = inked(f"{HEBREW} Wake")
    assert right >= area.right - 6 and left > area.x + area.width // 2
    left, right = inked("Wake and listen")
    assert left <= area.x + 6 and right < area.x + area.width // 2


def _inked_columns(surf: pygame.Surface, rect: pygame.Rect) -> tuple[int, int]:
    alpha = pygame.surfarray.array_alpha(surf)[rect.x:rect.right, rect.y:rect.bottom] > 0
    cols = np.nonzero(alpha.any(axis=1))[0]
    return rect.x + int(cols[0]), rect.x + int(cols[-1])


def test_the_speakers_name_of_a_right_to_left_line_is_at_the_right() -> None:
    pygame.init()
    layout = make_layout((1280, 720), (960, 540))
    fonts = Fonts(1.0)
    if not all(fonts.name.has_glyph(ch) for ch in HEBREW):
        pytest.skip("no font here has Hebrew letters")
    row = pygame.Rect(layout.text.x, layout.speaker.y, layout.text.width, layout.speaker.height)

    def name_ink(speaker: str, line: str) -> tuple[int, int]:
        surf = pygame.Surface((1280, 720), pygame.SRCALPHA)
        panels.dialogue(surf, layout, fonts, speaker, line, "", False, False, False)  # nothing of the line shown
        return _inked_columns(surf, row)

    left, right = name_ink(HEBREW, f"{HEBREW} Wake")
    assert right >= row.right - 6 and left > row.x + row.width // 2
    left, right = name_ink("Eve", "Wake and listen")
    assert left <= row.x + 6 and right < row.x + row.width // 2


def test_a_right_to_left_choice_is_mirrored_in_its_pill() -> None:
    """Its number badge at the pill's right end and its text against it; a left-to-right one as before."""
    pygame.init()
    layout = make_layout((1280, 720), (960, 540))
    fonts = Fonts(1.0)
    if not all(fonts.choice.has_glyph(ch) for ch in HEBREW):
        pytest.skip("no font here has Hebrew letters")

    def pill(label: str) -> tuple[pygame.Rect, tuple[int, int], tuple[int, int]]:
        surf = pygame.Surface((1280, 720), pygame.SRCALPHA)
        hit = panels.choices(surf, layout, fonts, [(1, "c", label)], None)[0]
        rect, base = hit.rect, layout.choice_height(1)
        # text ink only: the pill's middle, away from both badge ends and the rounded border
        inner = pygame.Rect(rect.x + base, rect.y + rect.height // 3, rect.width - 2 * base, rect.height // 3)
        glyphs = pygame.surfarray.array_alpha(surf)[inner.x:inner.right, inner.y:inner.bottom] > 200
        cols = np.nonzero(glyphs.any(axis=1))[0]
        # the badge: the disc of its fill colour, in the left or the right end
        rgb = pygame.surfarray.array3d(surf)[rect.x:rect.right, rect.centery].astype(int)
        bright = np.nonzero(np.abs(rgb - (232, 226, 214)).max(axis=1) <= 3)[0]
        return rect, (inner.x + int(cols[0]), inner.x + int(cols[-1])), (rect.x + int(bright[0]),
                                                                           rect.x + int(bright[-1]))

    rect, (tl, tr), (bl, br) = pill(f"{HEBREW} {HEBREW}")
    assert bl > rect.centerx and tr > rect.centerx and tl > rect.x + rect.width // 3  # badge and text at the right
    rect, (tl, tr), (bl, br) = pill("Wake and listen")
    assert br < rect.centerx and tl < rect.x + rect.width // 3
