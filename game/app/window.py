"""`worldloom play STORY`: open the window and run the main loop.

The loop only pumps pygame events into :class:`~game.app.app.App`, lets wall
time pass with :meth:`App.tick` and draws at about 60 Hz (a whole multiple of
the world's frame rate, so every frame stays up equally long); the world itself is
shown at the backend's frame rate on the app's own clock, and frames are made
on the app's worker thread. Runs under ``SDL_VIDEODRIVER=dummy`` and
``SDL_AUDIODRIVER=dummy`` too (sound is simply off if the mixer will not start).
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import pygame

from game.app.app import App
from game.app.fonts import Fonts
from game.app.loading import Loading, LoadProgress
from game.session import Game, open_game
from game.story.story import Story

#: Window size when none is given.
DEFAULT_WINDOW = (1280, 720)
#: About how often the window draws, Hz (rounded to a multiple of the world's rate).
DRAW_HZ = 60
#: With ``max_frames``, give up after this many seconds of this process's CPU without a new
#: frame (the work stopped getting anywhere), whatever the machine's load...
STALL_GIVE_UP = 60.0
#: ...or after this many seconds of wall time (a backend that waits forever uses no CPU).
STALL_GIVE_UP_WALL = 600.0
#: How often the loading screen draws, Hz.
LOADING_HZ = 30


def _show_loading(loading: Loading[Game], title: str, window_size: tuple[int, int], fullscreen: bool) -> bool:
    """Open the window at once and draw the loading screen until the game is built, pumping
    events (typed lines are kept in ``loading``); ``False``: the player closed the window."""
    pygame.display.set_caption(f"worldloom — {title}")
    if fullscreen:
        surface = pygame.display.set_mode((0, 0), pygame.FULLSCREEN)
    else:
        surface = pygame.display.set_mode(window_size, pygame.RESIZABLE)
    with contextlib.suppress(pygame.error):
        pygame.key.start_text_input()  # what is typed while it loads arrives as text
    fonts: dict[float, Fonts] = {}
    clock = pygame.time.Clock()
    while True:
        for event in pygame.event.get():
            loading.handle(event)
        if loading.quit:
            return False
        surface = pygame.display.get_surface() or surface  # a resize gives a new surface
        scale = round(min(surface.get_width() / 1280, surface.get_height() / 720), 2)
        if scale not in fonts:
            fonts[scale] = Fonts(scale)
        draw_loading(loading, surface, fonts[scale])
        pygame.display.flip()
        if loading.done:
            return True
        clock.tick(LOADING_HZ)


def draw_loading(loading: Loading[Game], surface: pygame.Surface, fonts: Fonts) -> None:
    """Draw one frame of the loading screen (a seam for tests: see ``Loading.draw``)."""
    loading.draw(surface, fonts)


def run_window(story_path: str | Path, backend: str = "procedural", seed: int = 0,
               save_dir: str | Path | None = None, size: tuple[int, int] | None = None,
               fullscreen: bool = False, screenshot: str | Path | None = None,
               max_frames: int = 0, window_size: tuple[int, int] = DEFAULT_WINDOW,
               threaded: bool = True, backend_options: dict[str, Any] | None = None,
               errorbank: str | Path | None = None, watch: bool = False, dialogue: Any = "transformers",
               voice: bool = True, story: Story | None = None) -> int:
    """Play the story at ``story_path`` in a window.

    Args:
        story_path: story folder or story.yaml.
        backend: registered world backend name.
        seed: seed of every random draw.
        save_dir: where saves go (default: the session's).
        size: the world's frame size ``(width, height)`` (default: the backend's).
        fullscreen: start fullscreen.
        screenshot: after ``max_frames`` frames (or on quit), save a PNG of the window here.
        max_frames: quit after this many world frames were shown (0 = play until closed).
        window_size: window size when not fullscreen.
        threaded: make frames on a worker thread (``False`` only for debugging).
        backend_options: extra keyword arguments for the backend (``model``, ``url``).
        errorbank: error-bank database: guard the backend and record failures there.
        watch: reload the story when its files change on disk (F6 reloads by hand).
        dialogue: the dialogue model of the characters with a card (see
            :func:`game.cast.castroom.dialogue_spec`; ``None``: authored lines only). If it
            cannot load, they answer with their authored lines and the reason is printed.
        voice: characters speak their replies aloud (on the window's mixer).
        story: the story at ``story_path`` already loaded (``worldloom play`` loads it once,
            for its start lint and for play); default: loaded here.

    Returns:
        The exit code: 0, or 1 if ``max_frames`` were asked for and the world
        stopped sending frames.

    Raises:
        game.errors.WorldloomError: the story cannot be loaded or the backend
            cannot start (the CLI prints it in one line).
    """
    pygame.display.init()
    pygame.font.init()
    title = story.model.title if story is not None else Path(story_path).name

    def build(progress: LoadProgress) -> Game:
        return open_game(story_path if story is None else story, backend=backend, backend_options=backend_options,
                         size=size, seed=seed, save_dir=save_dir, errorbank=errorbank, dialogue=dialogue,
                         voice=voice, realtime=True, source=story_path, progress=progress)

    loading = Loading(build, title).start()
    if not _show_loading(loading, title, window_size, fullscreen):
        pygame.quit()  # closed while loading: the build's thread and model worker are daemons
        return 0
    try:
        game = loading.result()
    except BaseException:
        pygame.quit()
        raise
    for text in game.warnings:
        print(f"worldloom: {text}", file=sys.stderr)
    session = game.session
    code = 0
    app: App | None = None
    try:
        app = App(session, window_size, fullscreen=fullscreen, threaded=threaded, watch=watch)
        if app.audio.error and app.audio.error != "sound off":
            print(f"worldloom: {app.audio.error}", file=sys.stderr)
        app.start()
        loading.hand_over(app)  # what the player typed while it loaded
        if not max_frames:  # playing, not a screenshot run: load the free-text model meanwhile
            app.preload()
        clock = pygame.time.Clock()
        # draw at a whole multiple of the world's rate, so every frame stays up equally long
        hz = app.fps * max(1, round(DRAW_HZ / app.fps))
        last_new, last_cpu = time.monotonic(), time.process_time()
        while app.running:
            dt = clock.tick(hz) / 1000.0
            for event in pygame.event.get():
                app.handle_event(event)
            if app.tick(dt):
                last_new, last_cpu = time.monotonic(), time.process_time()
            app.draw()
            pygame.display.flip()
            if max_frames and app.frames_shown >= max_frames:
                break
            waited_cpu, waited = time.process_time() - last_cpu, time.monotonic() - last_new
            if max_frames and (waited_cpu > STALL_GIVE_UP or waited > STALL_GIVE_UP_WALL):
                print(f"worldloom: no frame for {waited:.0f} s ({waited_cpu:.0f} s of CPU); giving up",
                      file=sys.stderr)
                code = 1
                break
        if screenshot:
            app.draw()
            app.screenshot(str(screenshot))
    except KeyboardInterrupt:
        code = 130
    finally:
        if app is not None:
            app.close()
        game.close()
        pygame.quit()
    return code
