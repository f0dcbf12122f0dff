"""The pygame window (game.app), driven headless one event and one tick at a time.

Frames come from a tiny backend defined here: noise frames that are a function
of their index on the frame clock, so a test can rebuild the frame that should be
on screen and compare pixels.
"""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import time  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402

from game.app import paint  # noqa: E402
from game.app.app import App  # noqa: E402
from game.app.fonts import Typeface  # noqa: E402
from game.app.frames import FrameClock, FrameFeed  # noqa: E402
from game.app.layout import character_boxes, make_layout  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.state import Wait  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.protocol import (  # noqa: E402
    Capabilities,
    FrameChunk,
    MemoryOp,
    MemoryResult,
    SessionStart,
    WorldRequest,
)

WINDOW = (640, 360)


class PatternBackend:
    """Frames of seeded noise (or one flat colour), a function of the frame index."""

    def __init__(self, width: int = 64, height: int = 36, flat: bool = False,
                 frames_per_block: int = 6) -> None:
        self.caps = Capabilities(backend="pattern", frames_per_block=frames_per_block, fps=24.0,
                                 width=width, height=height, actions=("w", "a", "s", "d"))
        self.flat = flat
        self.frame = 0
        self.requests: list[WorldRequest] = []

    def capabilities(self) -> Capabilities:
        return self.caps

    def start(self, start: SessionStart) -> None:
        self.frame = 0

    def image(self, index: int) -> np.ndarray:
        """The frame at ``index``: ``(H, W, 3)`` uint8 RGB."""
        shape = (self.caps.height, self.caps.width, 3)
        if self.flat:
            return np.full(shape, (40, 90, 160), np.uint8)
        return np.random.default_rng(index).integers(0, 256, shape, dtype=np.uint8)

    def generate(self, request: WorldRequest) -> Iterator[FrameChunk]:
        self.requests.append(request)
        n = self.caps.round_up(request.min_frames)
        t = self.caps.frames_per_block
        blocks = n // t
        for b in range(blocks):
            frames = np.stack([self.image(self.frame + i) for i in range(t)])
            chunk = FrameChunk(seq=request.seq, block=b, last=b == blocks - 1,
                               first_frame=self.frame, frames=frames, fps=self.caps.fps)
            self.frame += t
            yield chunk

    def memory(self, op: MemoryOp) -> MemoryResult:
        return MemoryResult(True)

    def close(self) -> None:
        pass


def make_app(mini_path: Path, tmp_path: Path, flat: bool = False) -> tuple[App, Session, PatternBackend]:
    backend = PatternBackend(flat=flat)
    session = Session(load_story(mini_path), backend, save_dir=tmp_path / "saves")
    # free text by character trigrams (no model to load); the input worker runs inline
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, WINDOW, threaded=False, audio=False, channels=channels)
    app.start()
    app.step()
    return app, session, backend


def key(k: int, unicode: str = "", down: bool = True) -> pygame.event.Event:
    return pygame.event.Event(pygame.KEYDOWN if down else pygame.KEYUP, key=k, mod=0,
                              unicode=unicode, scancode=0)


def typed(text: str) -> pygame.event.Event:
    return pygame.event.Event(pygame.TEXTINPUT, text=text)


def mouse(kind: int, pos: tuple[int, int]) -> pygame.event.Event:
    if kind == pygame.MOUSEMOTION:
        return pygame.event.Event(kind, pos=pos, rel=(0, 0), buttons=(1, 0, 0))
    return pygame.event.Event(kind, pos=pos, button=1)


def region(surface: pygame.Surface, rect: pygame.Rect) -> bytes:
    return pygame.image.tobytes(surface.subsurface(rect), "RGB")


def moves(session: Session) -> int:
    return sum(1 for e in session.log.since(0) if e.kind == "move")


# -- the world view -------------------------------------------------------------------------
def test_world_region_is_this_ticks_frame(mini_path: Path, tmp_path: Path) -> None:
    app, session, backend = make_app(mini_path, tmp_path)
    for _ in range(3):
        assert app.step() == 1
        frame = backend.image(app.frame_index)
        assert app.frame is not None and np.array_equal(app.frame, frame)
        lay = app.layout
        expected = paint.world_surface(frame, lay.world.size)
        clear = lay.clear.move(-lay.world.x, -lay.world.y)
        assert region(app.screen, lay.clear) == region(expected, clear)
        # and the whole world rect is the frame scaled the plain pygame way
        manual = pygame.transform.smoothscale(
            pygame.image.frombuffer(frame.tobytes(), frame.shape[1::-1], "RGB"), lay.world.size)
        assert region(manual, clear) == region(app.screen, lay.clear)
    app.close()


def test_frames_show_at_a_steady_rate_and_hold_on_stall(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    shown = app.frames_shown
    assert app.tick(0.5 / 24) == 0  # half a frame period: nothing due yet
    assert app.tick(0.5 / 24) == 1
    assert app.tick(3 / 24) == 3
    assert app.frames_shown == shown + 4
    clock = FrameClock(24.0, max_catch_up=3)
    assert clock.advance(10.0) == 3  # a long pause is dropped, not fast-forwarded
    # a threaded feed that has not produced anything yet: the window holds and counts stalls
    app.feed = FrameFeed(session, threaded=True)
    before, frame = app.stalls, app.frame
    app.tick(2 / 24)
    assert app.stalls == before + 2 and app.frame is frame
    app.close()


def test_new_input_flushes_queued_frames_of_the_old_request(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    session.submit(Wait(seconds=4.0))
    app.feed.pump()
    old = app.feed.queued()
    assert old >= 48
    app.handle_event(key(pygame.K_1, "1"))  # a choice: a newer request is pending
    assert app.feed.queued() == 0
    app.step()
    assert session.state.scene == "after"
    app.close()


def test_worker_thread_streams_idle_blocks_and_stops(mini_path: Path, tmp_path: Path) -> None:
    backend = PatternBackend()
    session = Session(load_story(mini_path), backend, save_dir=tmp_path)
    session.start()
    feed = FrameFeed(session, buffer_frames=12, threaded=True)
    feed.start()
    deadline = time.monotonic() + 5.0
    while feed.queued() < 12 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert feed.alive and feed.queued() >= 12
    for _ in range(120):  # keep eating: idle blocks keep coming, the world keeps living
        while feed.pop() is None and time.monotonic() < deadline:
            time.sleep(0.002)
    assert any(r.event == "idle" for r in backend.requests)
    assert feed.queued() <= 12 + backend.caps.frames_per_block
    feed.stop()
    assert not feed.alive


# -- the text panel ---------------------------------------------------------------------------
def test_text_panel_changes_when_the_line_changes(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path, flat=True)
    for _ in range(24):
        app.step()
    assert app.reader.current == ("", "Hello Ada.") and app.reader.complete
    before = region(app.screen, app.layout.text)
    app.step([key(pygame.K_1, "1")])
    for _ in range(24):
        app.step()
    assert app.reader.current is not None and app.reader.current[1] != "Hello Ada."
    assert region(app.screen, app.layout.text) != before
    app.close()


def test_typewriter_advance_and_auto_advance(mini_path: Path, tmp_path: Path) -> None:
    app, _, _ = make_app(mini_path, tmp_path)
    app.choose(1)  # "Kyaa!" then "Afterwards."
    assert app.reader.current == ("the creature", "Kyaa!") and app.reader.more
    assert not app.reader.complete
    app.handle_event(key(pygame.K_SPACE, " "))
    assert app.reader.complete
    app.handle_event(key(pygame.K_SPACE, " "))
    assert app.reader.current == ("", "Afterwards.")
    app.settings.auto_advance = True
    app.reader.push([("A", "one"), ("B", "two")])
    for _ in range(24 * 4):
        app.tick()
    assert app.reader.current == ("B", "two")
    app.close()


# -- keys -------------------------------------------------------------------------------------
def test_typing_wasd_in_the_text_line_does_not_move(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    camera, n = session.state.camera_x, moves(session)
    app.step([key(pygame.K_t, "t"), typed("t")])  # T focuses; its own "t" is not typed
    assert app.entry_focus and app.entry_text == ""
    app.step([key(pygame.K_w, "w"), typed("w"), key(pygame.K_w, "w", down=False),
              key(pygame.K_a, "a"), typed("a"), key(pygame.K_a, "a", down=False)])
    for _ in range(24):
        app.step()
    assert app.entry_text == "wa"
    assert moves(session) == n and session.state.camera_x == camera
    app.step([key(pygame.K_BACKSPACE)])  # deletes a letter, does not roll back
    assert app.entry_text == "w"
    app.step([key(pygame.K_ESCAPE)])
    assert not app.entry_focus
    app.step([key(pygame.K_w, "w"), typed("w")])
    assert moves(session) == n + 1 and app.entry_text == "w"
    app.step([key(pygame.K_a, "a")])
    assert session.state.camera_x < camera
    for _ in range(12):  # both held for half a second more: one more Move each
        app.step()
    assert moves(session) == n + 4
    app.step([key(pygame.K_w, down=False), key(pygame.K_a, down=False)])
    for _ in range(24):
        app.step()
    assert moves(session) == n + 4
    app.close()


def test_typed_line_resolves_and_submits(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_RETURN), *[typed(c) for c in "sing a song"], key(pygame.K_RETURN)])
    assert not app.entry_focus and app.entry_text == ""
    assert any(e.kind == "action" for e in session.log.since(0))
    app.step([key(pygame.K_t, "t"), *[typed(c) for c in "xyzzy"], key(pygame.K_RETURN)])
    assert app.notice == "Nothing seems to come of that."
    app.close()


def test_number_key_chooses(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    assert [c.text for c in session.choices()][:2] == ["Offer the kite", "Offer the leaf"]
    app.step([key(pygame.K_2, "2")])
    assert session.state.scene == "after" and "leaf" not in session.state.inventory
    app.step([key(pygame.K_9, "9")])
    assert "no choice 9" in app.notice
    app.close()


def test_click_on_a_choice_chooses(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    hit = next(h for h in app.choice_hits if h.key == "offer_kite")
    app.step([mouse(pygame.MOUSEBUTTONDOWN, hit.rect.center), mouse(pygame.MOUSEBUTTONUP, hit.rect.center)])
    assert session.state.holders.get("kite") == "creature"
    app.close()


def test_f5_saves_and_f9_loads(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_F5)])
    saves = dict(session.saves())
    assert "quick" in saves and saves["quick"].with_suffix(".png").is_file()
    app.step([key(pygame.K_1, "1")])
    assert session.state.scene == "after" and "kite" not in session.state.inventory
    app.step([key(pygame.K_F9)])
    assert session.state.scene == "meadow" and "kite" in session.state.inventory
    assert app.reader.current == ("", "Hello Ada.")
    app.close()


def test_corrupt_save_is_a_notice_and_the_previous_copy_loads(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_F5)])
    app.step([key(pygame.K_1, "1")])
    app.step([key(pygame.K_F5)])  # the meadow save is now the previous copy
    saves = dict(session.saves())
    saves["quick"].write_text("{ not json")
    app.step([key(pygame.K_F9)])
    assert "corrupt" in app.notice and "previous copy is still there" in app.notice
    assert session.state.scene == "after"  # the game goes on as it was
    app.step([key(pygame.K_F9)])
    assert session.state.scene == "meadow"
    app.close()


def test_backspace_rolls_back(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_BACKSPACE)])
    assert app.notice == "Nothing to roll back to."
    app.step([key(pygame.K_1, "1")])
    assert session.state.scene == "after"
    app.step([key(pygame.K_BACKSPACE)])
    assert session.state.scene == "meadow" and "kite" in session.state.inventory
    app.close()


def test_page_down_rolls_forward_after_a_rollback(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_PAGEDOWN)])
    assert app.notice == "Nothing to roll forward to."
    app.step([key(pygame.K_1, "1")])
    app.step([key(pygame.K_BACKSPACE)])
    assert session.state.scene == "meadow"
    app.step([key(pygame.K_PAGEDOWN)])
    assert session.state.scene == "after" and "kite" not in session.state.inventory
    assert session.checkpoints and not session.forward
    app.close()


def test_drag_an_item_onto_the_character_gives_it(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    chip = next(h for h in app.chip_hits if h.key == "stone")
    target = app.character_boxes()["creature"]
    assert app.layout.world.contains(target)
    app.step([mouse(pygame.MOUSEBUTTONDOWN, chip.rect.center),
              mouse(pygame.MOUSEMOTION, (chip.rect.centerx - 40, chip.rect.centery + 20))])
    assert app.dragging == "stone"
    app.step([mouse(pygame.MOUSEMOTION, target.center)])
    app.step([mouse(pygame.MOUSEBUTTONUP, target.center)])
    assert not app.dragging
    gives = [e for e in session.log.since(0) if e.kind == "give"]
    assert gives and gives[-1].ids == {"item": "stone", "to": "creature"}
    # a drop anywhere else on the world goes to the nearest character
    chip = next(h for h in app.chip_hits if h.key == "kite")
    far = (app.layout.world.x + 5, app.layout.world.y + 5)
    app.step([mouse(pygame.MOUSEBUTTONDOWN, chip.rect.center), mouse(pygame.MOUSEMOTION, far),
              mouse(pygame.MOUSEBUTTONUP, far)])
    assert session.state.holders.get("kite") == "creature"
    app.close()


def test_character_boxes_follow_the_camera() -> None:
    world = pygame.Rect(0, 0, 960, 540)
    at0 = character_boxes({"c": 0.6}, 0.0, world)["c"]
    assert at0.centerx == 576
    panned = character_boxes({"c": 0.6}, 0.25, world)["c"]
    assert panned.centerx == 336
    assert character_boxes({"c": 0.6}, 1.5, world) == {}


def test_history_overlay_and_settings_keys(mini_path: Path, tmp_path: Path) -> None:
    app, _, _ = make_app(mini_path, tmp_path)
    app.step([pygame.event.Event(pygame.MOUSEWHEEL, x=0, y=1, flipped=False)])
    assert app.history.open
    app.step([key(pygame.K_w, "w")])  # overlay open: keys do not reach the game
    app.step([key(pygame.K_ESCAPE)])
    assert not app.history.open
    app.step([key(pygame.K_h, "h")])
    assert app.history.open
    app.step([key(pygame.K_h, "h")])
    s = app.settings
    subs, auto, skip, vol, speed = s.subtitles, s.auto_advance, s.skip_seen, s.volume, s.text_speed
    app.step([key(pygame.K_F3), key(pygame.K_F4), key(pygame.K_F7), key(pygame.K_MINUS, "-"),
              key(pygame.K_F8)])
    assert (s.subtitles, s.auto_advance, s.skip_seen) == (not subs, not auto, not skip)
    assert s.volume == pytest.approx(vol - 0.1) and s.text_speed != speed
    app.step([key(pygame.K_F1)])
    assert app.help_open
    app.step([key(pygame.K_ESCAPE)])
    app.step([key(pygame.K_F11)])
    assert s.fullscreen
    app.step([key(pygame.K_F11)])
    assert not s.fullscreen and app.screen.get_size() == WINDOW
    app.close()


def test_save_screen_saves_and_loads_by_click(mini_path: Path, tmp_path: Path) -> None:
    app, session, _ = make_app(mini_path, tmp_path)
    app.step([key(pygame.K_F2)])
    assert app.save_screen.open
    new = next(h for h in app.save_hits if h.key == "new")
    app.step([mouse(pygame.MOUSEBUTTONDOWN, new.rect.center)])
    assert len(session.saves()) == 1
    app.step([key(pygame.K_ESCAPE), key(pygame.K_1, "1")])
    assert session.state.scene == "after"
    app.step([key(pygame.K_F2)])
    card = next(h for h in app.save_hits if h.key.startswith("load:"))
    app.step([mouse(pygame.MOUSEBUTTONDOWN, card.rect.center)])
    assert session.state.scene == "meadow" and not app.save_screen.open
    app.close()


# -- fonts, layout, the real loop ---------------------------------------------------------------
def test_font_shows_latin_and_cjk() -> None:
    pygame.init()
    face = Typeface(24)
    surf = face.render("æøå 世界", (255, 255, 255))
    assert surf.get_width() > 0
    assert pygame.mask.from_surface(surf).count() > 0
    assert all(face.has_glyph(c) for c in "æøå世界")

    def ink(text: str) -> bytes:
        return pygame.image.tobytes(face.render(text, (255, 255, 255)), "RGBA")

    assert ink("世") != ink("界")  # two CJK characters are two different glyphs
    assert ink("世") != ink("\ue000")  # and not the missing-glyph box
    assert ink("æ") != ink("ø")
    assert face.wrap("世界世界世界世界", face.width("世界世") + 1) == ["世界世", "界世界", "世界"]


def test_layout_scales_and_keeps_the_world_aspect() -> None:
    for size in ((1280, 720), (1920, 1080), (1024, 768), (640, 360)):
        lay = make_layout(size, (960, 540))
        assert abs(lay.world.width / lay.world.height - 16 / 9) < 0.01
        assert lay.world.bottom <= lay.panel.top and lay.world.contains(lay.clear)
        assert not lay.clear.colliderect(lay.text) and not lay.clear.colliderect(lay.choices)
    assert make_layout((1280, 720), (960, 540)).world == pygame.Rect(160, 0, 960, 540)


def test_run_window_writes_a_screenshot(mini_path: Path, tmp_path: Path) -> None:
    from game.app.window import run_window

    shot = tmp_path / "shot.png"
    code = run_window(mini_path, backend="procedural", size=(192, 108), save_dir=tmp_path / "s",
                      screenshot=shot, max_frames=6, window_size=WINDOW)
    assert code == 0 and shot.is_file()
    img = pygame.image.load(str(shot))
    assert img.get_size() == WINDOW


def test_audio_converts_chunk_sound_for_the_mixer() -> None:
    from game.app.audio import AudioOut

    out = AudioOut(enabled=False)
    assert not out.on
    out.play(np.zeros(10, np.float32), 22050)  # sound off: nothing happens, nothing breaks
    out._freq, out._channels = 44100, 2
    pcm = out.to_samples(np.linspace(-1.0, 1.0, 100, dtype=np.float32), 22050)
    assert pcm.shape == (200, 2) and pcm.dtype == np.int16
    assert pcm[0, 0] == -32767 and pcm[-1, 1] == 32767


def test_skip_seen_lines(mini_path: Path, tmp_path: Path) -> None:
    app, _, _ = make_app(mini_path, tmp_path)
    app.settings.skip_seen = True
    app.reader.push([("A", "first line"), ("B", "second line")])
    for _ in range(48):
        app.tick()
    assert app.reader.current == ("A", "first line")  # unseen: it waits for the player
    app.reader.advance()
    app.reader.advance()
    app.reader.push([("A", "first line"), ("B", "second line"), ("C", "new")])
    for _ in range(24):
        app.tick()
    assert app.reader.current == ("C", "new")  # the seen ones went by on their own
    app.close()
