"""The window's channels (game.app): typed lines through Channels off the UI thread, asking back,
talking to a character, dropped pictures, push-to-talk, the error bank's notice pill, hot reload.

Headless (SDL dummy drivers); free text by the character-trigram embedder (no model to load),
the input worker inline (``threaded=False``) unless a test checks the thread itself.
"""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import shutil  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pygame  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from game.app.app import App  # noqa: E402
from game.app.inputs import NO_MICROPHONE, InputWorker, Microphone  # noqa: E402
from game.errors import InputError  # noqa: E402
from game.inputs.address import parse_address  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.session import Session  # noqa: E402
from game.state import Event, Say  # noqa: E402
from game.story.loader import load_story  # noqa: E402
from game.world.backends.null import NullBackend  # noqa: E402

WINDOW = (640, 360)


class Thinking(LexicalEmbedder):
    """The trigram embedder, recording the thread it runs on; ``gate`` holds it (a slow model)."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        self.gate.wait(10.0)
        return super().encode(texts)


def make_app(story: Path, tmp_path: Path, *, threaded: bool = False, embedder: Any = None,
             microphone: Microphone | None = None, watch: bool = False, steps: Any = (),
             extensions: Any = None) -> tuple[App, Session]:
    session = Session(load_story(story, use_cache=False), NullBackend(), save_dir=tmp_path / "saves",
                      steps=steps, extensions=extensions)
    channels = Channels(session, Resolver(session.story, embedder or LexicalEmbedder()),
                        voice_dir=tmp_path / "voice")
    app = App(session, WINDOW, threaded=False, audio=False, channels=channels, microphone=microphone,
              watch=watch)
    if threaded:
        app.worker = InputWorker(threaded=True)
    app.start()
    app.step()
    return app, session


def key(k: int, unicode: str = "", down: bool = True) -> pygame.event.Event:
    return pygame.event.Event(pygame.KEYDOWN if down else pygame.KEYUP, key=k, mod=0, unicode=unicode, scancode=0)


def line(text: str) -> list[pygame.event.Event]:
    """Focus the text line, type ``text``, send it."""
    return [key(pygame.K_RETURN), *[pygame.event.Event(pygame.TEXTINPUT, text=c) for c in text],
            key(pygame.K_RETURN)]


def motion(pos: tuple[int, int]) -> pygame.event.Event:
    return pygame.event.Event(pygame.MOUSEMOTION, pos=pos, rel=(0, 0), buttons=(0, 0, 0))


def drop(path: Path) -> pygame.event.Event:
    return pygame.event.Event(pygame.DROPFILE, file=str(path))


def copy_story(mini_path: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "story"
    shutil.copytree(mini_path, folder)
    return folder


def has_amber(surface: pygame.Surface, rect: pygame.Rect) -> bool:
    px = pygame.surfarray.array3d(surface.subsurface(rect)).astype(int)
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return bool(((r > 180) & (g > 120) & (b < 140) & (r - b > 80)).any())


# -- the input worker ---------------------------------------------------------------------------
def test_input_worker_runs_in_order_off_the_ui_thread_and_reports_failures() -> None:
    worker = InputWorker(threaded=True)
    gate = threading.Event()
    seen: list[object] = []
    worker.submit("", gate.wait, lambda _: None, seen.append, quiet=True)  # a model loading
    assert not worker.busy
    worker.submit("one", lambda: threading.current_thread().name, seen.append, seen.append)
    worker.submit("two", lambda: 1 // 0, seen.append, lambda exc: seen.append(type(exc).__name__))
    assert worker.busy and worker.label == "one"
    gate.set()
    assert worker.wait(5.0)
    assert worker.busy and seen == []  # results wait for the UI thread
    assert worker.collect() == 2 and seen == ["worldloom-inputs", "ZeroDivisionError"]
    assert not worker.busy and worker.label == ""
    worker.stop()
    inline = InputWorker(threaded=False)
    inline.submit("x", lambda: 41 + 1, seen.append, seen.append)
    assert seen[-1] == 42 and not inline.busy


# -- typed lines ------------------------------------------------------------------------------
def test_typed_line_runs_on_the_input_worker_and_becomes_a_world_edit(mini_path: Path, tmp_path: Path) -> None:
    emb = Thinking()
    app, session = make_app(mini_path, tmp_path, threaded=True, embedder=emb)
    emb.gate.clear()  # the "model" is slow now
    app.step(line("make it rain"))
    assert app.worker.busy
    status = app._entry_status()[0]
    assert status.startswith("“make it rain”") and status.endswith(".")  # the line waits, with dots
    for _ in range(3):
        app.step()  # the window keeps drawing while the line is being understood
    assert session.state.world.get("weather") != "rain"
    emb.gate.set()
    assert app.worker.wait(10.0)
    app.step()
    assert session.state.world["weather"] == "rain"
    assert emb.threads and set(emb.threads) == {"worldloom-inputs"}
    assert not app.worker.busy and app._entry_status()[0] == ""
    assert any(e.kind == "edit" for e in session.log.since(0))
    app.close()


def test_refusals_and_not_understood_lines_show_in_the_panel(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    app.step(line("xyzzy"))
    assert app.notice == "Nothing seems to come of that."
    app.step(line("don't offer the leaf"))
    assert app.notice == "You decide not to." and "leaf" in session.state.inventory
    app.close()


def test_a_close_call_asks_back_and_the_next_line_answers(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    app.step(line("offer it something"))
    assert app.clarify is not None
    question = app.clarify.question
    assert app.reader.current == ("", question) and "kite" in question.lower()
    assert [h.key for h in app.choice_hits] == [f"answer:{i + 1}" for i in range(len(app.clarify.options))]
    assert app.entry_focus  # ready for the answer
    app.step([*[pygame.event.Event(pygame.TEXTINPUT, text=c) for c in "the leaf"], key(pygame.K_RETURN)])
    assert app.clarify is None
    assert session.state.holders.get("leaf") == "creature" and session.state.scene == "after"
    app.close()


def test_a_question_asked_back_is_answered_by_number(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    app.step(line("offer it something"))
    assert app.clarify is not None and app.clarify.options[0].label == "offer the kite"
    app.step([key(pygame.K_ESCAPE), key(pygame.K_1, "1")])
    assert session.state.holders.get("kite") == "creature"
    app.close()


def test_typing_w_or_v_in_the_text_line_neither_moves_nor_records(mini_path: Path, tmp_path: Path) -> None:
    rec = FakeRecorder()
    app, session = make_app(mini_path, tmp_path, microphone=Microphone(lambda: rec))
    camera = session.state.camera_x
    app.step([key(pygame.K_t, "t"), pygame.event.Event(pygame.TEXTINPUT, text="t")])
    for k in "wv":
        app.step([key(getattr(pygame, f"K_{k}"), k), pygame.event.Event(pygame.TEXTINPUT, text=k)])
    app.step([key(pygame.K_w, down=False), key(pygame.K_v, down=False)])
    assert app.entry_text == "wv" and rec.starts == 0
    assert not any(e.kind == "move" for e in session.log.since(0)) and session.state.camera_x == camera
    app.close()


# -- talking to a character ---------------------------------------------------------------------
class EveHook:
    """Eve, scripted: answers each line said to her (or said while she is here, unaddressed)."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []

    def on_turn(self, session: Session, intent: Any, events: list[Event]) -> list[Event]:
        out = []
        for e in events:
            if e.kind == "say" and e.speaker == "player" and not e.ids.get("action"):
                self.heard.append((e.text, str(e.data.get("target", ""))))
                out.append(Event(kind="reply", turn=session.state.turn, scene=session.state.scene,
                                 speaker="eve", text=f"You said: {e.text}", data={"source": "scripted"}))
        return out


def eve_story(mini_path: Path, tmp_path: Path, card: str = "eve.yaml") -> Path:
    folder = copy_story(mini_path, tmp_path)
    p = folder / "story.yaml"
    text = p.read_text()
    text = text.replace('  creature: {name: the creature, look: "a small horned creature"}\n',
                        '  creature: {name: the creature, look: "a small horned creature"}\n'
                        f'  eve: {{name: Eve, look: "a woman in a green coat", card: "{card}"}}\n')
    text = text.replace("    present: {creature: 0.6}\n", "    present: {creature: 0.6, eve: 0.25}\n", 1)
    p.write_text(text)
    return folder


def test_parse_address() -> None:
    names = {"eve": "Eve", "creature": "the creature"}
    assert parse_address("@eve hello there", names) == ("eve", "hello there")
    assert parse_address("@Eve: where do you live?", names) == ("eve", "where do you live?")
    assert parse_address("ask eve where she lives", names) == ("eve", "where she lives")
    assert parse_address("Eve, do you like kites?", names) == ("eve", "do you like kites?")
    assert parse_address("tell the creature a story", names) == ("creature", "a story")
    assert parse_address("evening falls", names) == ("", "evening falls")
    assert parse_address("give eve the kite", names) == ("", "give eve the kite")
    assert parse_address("@evelyn hi", names) == ("", "@evelyn hi")


def test_talk_to_a_character_with_a_card(mini_path: Path, tmp_path: Path) -> None:
    eve = EveHook()
    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, steps=[eve])
    app.step(line("@eve hello there"))
    assert eve.heard[-1] == ("hello there", "eve")
    assert app.reader.current == ("You", "hello there")
    app.step([key(pygame.K_SPACE)] * 2)
    assert app.reader.current == ("Eve", "You said: hello there")
    assert ("Eve", "You said: hello there") in session.history()
    # not addressed, not understood otherwise: she answers, since she is here and has a card
    app.step(line("where do you live?"))
    assert eve.heard[-1] == ("where do you live?", "eve")
    # understood otherwise: it is done (a world edit), not said to her
    app.step(line("make it rain"))
    assert session.state.world["weather"] == "rain"
    assert not any(e.kind == "say" and e.data.get("target") and e.text == "make it rain"
                   for e in session.log.since(0))
    # someone in the story who is not in this scene
    app.step([key(pygame.K_1, "1")])  # to the next scene: she stayed in the meadow
    n = len(eve.heard)
    app.step(line("@eve are you there?"))
    assert app.notice == "Eve is not here." and len(eve.heard) == n
    app.close()


def test_click_a_character_then_type(mini_path: Path, tmp_path: Path) -> None:
    eve = EveHook()
    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, steps=[eve])
    box = app.character_boxes()["eve"]
    app.step([pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=box.center, button=1),
              pygame.event.Event(pygame.MOUSEBUTTONUP, pos=box.center, button=1)])
    assert app.addressee == "eve" and app.entry_focus
    app.step([*[pygame.event.Event(pygame.TEXTINPUT, text=c) for c in "make it rain"], key(pygame.K_RETURN)])
    assert eve.heard[-1] == ("make it rain", "eve")  # said to her, not done to the world
    assert session.state.world.get("weather") != "rain"
    app.step([key(pygame.K_ESCAPE)])  # Esc (text line not focused) stops speaking to her
    assert app.addressee == ""
    app.close()


def test_a_reply_streams_in_while_the_window_draws(mini_path: Path, tmp_path: Path) -> None:
    gate = threading.Event()

    class SlowEve(EveHook):
        def on_turn(self, session: Any, intent: Any, events: list[Event]) -> list[Event]:
            gate.wait(10.0)
            return super().on_turn(session, intent, events)

    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, threaded=True, steps=[SlowEve()])
    app.step(line("@eve how are you"))
    for _ in range(3):
        app.step()  # she is thinking under the session's lock; the window draws from its last view
    assert "Eve is thinking" in app._entry_status()[0]
    gate.set()
    assert app.worker.wait(10.0)
    for _ in range(3):
        app.step([key(pygame.K_SPACE)])
    assert app.reader.current == ("Eve", "You said: how are you")
    app.close()


class StreamingRoom:
    """A cast room (the ``cast`` session extension) that writes Eve's reply ahead, off the
    session's lock, a sentence at a time (``step`` lets each one through), as
    :meth:`game.cast.castroom.Castroom.prepare` does; its hook then takes the reply at once."""

    SENTENCES = ("The light is mine to keep.", "It has been, for eleven winters.")

    def __init__(self) -> None:
        self.step = threading.Semaphore(0)
        self.prepared: tuple[str, str] | None = None

    def save_extra(self) -> dict[str, Any]:
        return {}

    def restore_extra(self, data: dict[str, Any] | None) -> Any:
        return lambda: None

    def prepares(self, intent: Any) -> bool:
        return isinstance(intent, Say)

    def prepare(self, host: Any, intent: Any, events: list[Event]) -> None:
        for sentence in self.SENTENCES:
            assert self.step.acquire(timeout=10.0)
            if host.progress is not None:
                host.progress("sentence", "eve", sentence)
        self.prepared = (intent.text, " ".join(self.SENTENCES))

    def on_turn(self, session: Any, intent: Any, events: list[Event]) -> list[Event]:
        out = []
        for e in events:
            if e.kind == "say" and e.data.get("target") == "eve" and self.prepared and self.prepared[0] == e.text:
                out.append(Event(kind="reply", turn=session.state.turn, scene=session.state.scene, speaker="eve",
                                 text=self.prepared[1], data={"source": "model"}))
                self.prepared = None
        return out


def test_her_reply_shows_sentence_by_sentence_then_whole_once(mini_path: Path, tmp_path: Path) -> None:
    room = StreamingRoom()
    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, threaded=True, steps=[room],
                            extensions={"cast": room})
    app.settings.text_speed = 0.0  # lines show whole at once

    def settle(until: Any) -> None:
        for _ in range(500):
            app.step()
            if until():
                return
            time.sleep(0.005)
        raise AssertionError("timed out")

    app.step(line("@eve how long have you kept the light?"))
    settle(lambda: app.reader.current == ("You", "how long have you kept the light?"))
    room.step.release()  # her first sentence: shown before the turn is in the session
    settle(lambda: list(app.reader.queue) == [("Eve", room.SENTENCES[0])])
    assert not any(e.kind == "reply" for e in session.log.since(0))
    room.step.release()
    settle(lambda: not app.worker.busy)
    whole = ("Eve", " ".join(room.SENTENCES))
    assert list(app.reader.queue) == [whole]  # grown in place, not shown twice
    app.step([key(pygame.K_SPACE)])
    assert app.reader.current == whole and not app.reader.queue
    assert session.history(2) == [("You", "how long have you kept the light?"), whole]
    app.close()


# -- dropped pictures --------------------------------------------------------------------------
def test_a_dropped_png_becomes_an_entity_with_that_reference(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    png = tmp_path / "red_ball.png"
    Image.new("RGB", (64, 48), (200, 40, 40)).save(png)
    app.step([motion((app.layout.world.x + 4, app.layout.world.bottom - 4)), drop(png)])  # nobody there
    refs = [o for o in session.state.objects.values() if o.get("image") == str(png.resolve())]
    assert len(refs) == 1 and refs[0]["kind"] == "picture" and not refs[0]["on"]
    assert app.reader.current is not None and "red ball" in app.reader.current[1]
    # dropped on the creature: it is handed to her
    blue = tmp_path / "blue.jpg"
    Image.new("RGB", (32, 32), (20, 40, 200)).save(blue, "JPEG")
    app.step([motion(app.character_boxes()["creature"].center), drop(blue)])
    given = [k for k, o in session.state.objects.items() if o.get("image") == str(blue.resolve())]
    assert len(given) == 1 and session.state.objects[given[0]]["on"] == "creature"
    gives = [e for e in session.log.since(0) if e.kind == "give"]
    assert gives and gives[-1].ids == {"item": given[0], "to": "creature"}
    app.close()


def test_bad_dropped_files_are_notices(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    before = dict(session.state.objects)
    fake = tmp_path / "fake.png"
    fake.write_text("not a picture")
    app.step([drop(fake)])
    assert app.notice.startswith("fake.png: ") and "PNG" in app.notice
    big = tmp_path / "huge.png"
    Image.new("L", (5000, 10), 0).save(big)
    app.step([drop(big)])
    assert app.notice.startswith("huge.png: ") and "4096" in app.notice
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    app.step([drop(notes)])
    assert app.notice.startswith("notes.txt: ")
    assert session.state.objects == before
    app.step([key(pygame.K_1, "1")])  # and the game goes on
    assert session.state.scene == "after"
    app.close()


# -- push-to-talk ----------------------------------------------------------------------------
class FakeRecorder:
    """A microphone that hands back ``clip`` (or fails to open with ``fail``)."""

    def __init__(self, clip: np.ndarray | None = None, rate: int = 16000, fail: Exception | None = None) -> None:
        self.clip = clip if clip is not None else np.zeros(0, np.float32)
        self.rate = rate
        self.fail = fail
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        if self.fail is not None:
            raise self.fail

    def stop(self) -> tuple[np.ndarray, int]:
        return self.clip, self.rate


@pytest.mark.parametrize("fail", [InputError("no audio input: sounddevice is not available"),
                                  OSError("PortAudio library not found"), None])
def test_v_without_a_microphone_is_a_notice(mini_path: Path, tmp_path: Path, fail: Exception | None) -> None:
    if fail is None:  # the real PushToTalk: on a machine with a microphone there is nothing to test
        try:
            import sounddevice

            if sounddevice.query_devices(kind="input"):
                pytest.skip("this machine has a microphone")
        except Exception:
            pass
        mic = Microphone()
    else:
        rec = FakeRecorder(fail=fail)
        mic = Microphone(lambda: rec)
    app, session = make_app(mini_path, tmp_path, microphone=mic)
    turn = session.state.turn
    app.step([key(pygame.K_v, "v")])
    assert app.notice == NO_MICROPHONE and not app.mic.recording
    app.step([key(pygame.K_v, "v", down=False), key(pygame.K_v, "v"), key(pygame.K_v, "v", down=False)])
    assert app.notice == NO_MICROPHONE and session.state.turn == turn
    app.step([key(pygame.K_1, "1")])
    assert session.state.scene == "after"
    app.close()


def spoken(tmp_path: Path, text: str) -> FakeRecorder:
    """A microphone recorder that will hand back ``text`` spoken by espeak-ng."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng is not installed")
    pytest.importorskip("pocketsphinx")
    from game.inputs.voice import read_wav

    wav = tmp_path / "spoken.wav"
    subprocess.run([exe, "-w", str(wav), text], check=True, capture_output=True, timeout=30)
    return FakeRecorder(*read_wav(wav))


def test_push_to_talk_hears_and_acts(mini_path: Path, tmp_path: Path) -> None:
    rec = spoken(tmp_path, "make it rain")
    app, session = make_app(mini_path, tmp_path, microphone=Microphone(lambda: rec))
    app.step([key(pygame.K_v, "v")])
    assert app.mic.recording and "listening" in app._entry_status()[0]
    app.step([key(pygame.K_v, "v", down=False)])
    assert not app.mic.recording
    assert session.state.world["weather"] == "rain"
    rec.clip = np.zeros(100, np.float32)  # a tap of V is not speech
    app.step([key(pygame.K_v, "v"), key(pygame.K_v, "v", down=False)])
    assert app.notice == "Hold V while you speak."
    app.close()


def test_push_to_talk_to_the_character_clicked(mini_path: Path, tmp_path: Path) -> None:
    rec = spoken(tmp_path, "make it rain")
    eve = EveHook()
    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, microphone=Microphone(lambda: rec), steps=[eve])
    app.address("eve")
    at = app.layout.text.center  # a click on the panel leaves the text line; she is still the one spoken to
    app.step([pygame.event.Event(pygame.MOUSEBUTTONDOWN, pos=at, button=1),
              pygame.event.Event(pygame.MOUSEBUTTONUP, pos=at, button=1)])
    assert app.addressee == "eve" and not app.entry_focus
    app.step([key(pygame.K_v, "v"), key(pygame.K_v, "v", down=False)])
    assert eve.heard[-1] == ("make it rain", "eve") and session.state.world.get("weather") != "rain"
    assert app.reader.current == ("You", "make it rain")
    app.close()


# -- the error bank's notice -----------------------------------------------------------------
def test_the_notice_pill_shows_while_the_notice_is_set(mini_path: Path, tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    lay = app.layout
    top = pygame.Rect(lay.world.x + lay.world.width // 4, lay.world.y, lay.world.width // 2, lay.px(40))
    app.step()
    assert not has_amber(app.screen, top)
    session.notice = "world model unreachable — showing the procedural world"
    app.step()
    assert app.session.view().notice and has_amber(app.screen, top)
    assert not has_amber(app.screen, lay.clear)  # unobtrusive: the middle of the world stays clear
    session.notice = ""
    app.step()
    assert not has_amber(app.screen, top)
    app.close()


# -- hot reload ----------------------------------------------------------------------------------
needs_reload = pytest.mark.skipif(not hasattr(Session, "reload"), reason="Session.reload is not there yet")


@needs_reload
def test_f6_reloads_an_edited_story_keeping_the_state(mini_path: Path, tmp_path: Path) -> None:
    folder = copy_story(mini_path, tmp_path)
    app, session = make_app(folder, tmp_path)
    app.step([key(pygame.K_3, "3")])  # wave: a once-only choice, still in the meadow
    state = session.state
    chosen, inventory, turn = dict(state.chosen), list(state.inventory), state.turn
    assert state.scene == "meadow"
    p = folder / "story.yaml"
    good = p.read_text()
    p.write_text(good.replace('"Hello {name}."', '"Hello again, {name}."'))
    app.step([key(pygame.K_F6)])
    assert not app.reload_error
    s = session.state
    assert s.scene == "meadow" and s.chosen == chosen and s.inventory == inventory and s.turn >= turn
    for _ in range(48):
        app.step()
    assert app.reader.current == ("", "Hello again, Ada.")
    assert [c.id for c in session.choices()] == ["offer_kite", "offer_leaf"]  # wave stays used
    p.write_text(good)
    app.step([key(pygame.K_F6)])
    assert app.reader.current == ("", "Hello Ada.")
    app.step([key(pygame.K_1, "1")])
    assert session.state.scene == "after"
    app.close()


@needs_reload
def test_f6_with_a_broken_file_shows_a_diagnostic_and_plays_on(mini_path: Path, tmp_path: Path) -> None:
    folder = copy_story(mini_path, tmp_path)
    app, session = make_app(folder, tmp_path)
    p = folder / "story.yaml"
    good = p.read_text()
    p.write_text(good.replace("goto: after\n", "goto: nowhere_at_all\n", 1))
    app.step([key(pygame.K_F6)])
    assert app.reload_error and "WL0" in app.reload_error and "story.yaml:" in app.reload_error
    banner = app._banner_rect
    assert banner.width > 0
    app.step([key(pygame.K_1, "1")])  # the old story plays on
    assert session.state.scene == "after"
    p.write_text(good)
    app.step([key(pygame.K_F6)])
    assert not app.reload_error and app._banner_rect.width == 0
    app.close()


@needs_reload
def test_watch_reloads_by_itself(mini_path: Path, tmp_path: Path) -> None:
    folder = copy_story(mini_path, tmp_path)
    app, session = make_app(folder, tmp_path, watch=True)
    for _ in range(24):
        app.step()
    p = folder / "story.yaml"
    p.write_text(p.read_text().replace('"Hello {name}."', '"Hello from disk, {name}."'))
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    for _ in range(48):
        app.step()
    assert app.reader.current == ("", "Hello from disk, Ada.")
    app.close()


def test_a_number_answers_the_question_asked_back_while_the_text_line_has_focus(mini_path: Path,
                                                                                tmp_path: Path) -> None:
    app, session = make_app(mini_path, tmp_path)
    app.step(line("offer it something"))
    assert app.clarify is not None and app.entry_focus and app.clarify.options[0].label == "offer the kite"
    app.step([key(pygame.K_1, "1"), pygame.event.Event(pygame.TEXTINPUT, text="1")])
    assert session.state.holders.get("kite") == "creature" and app.entry_text == ""
    app.close()


def test_a_choice_pressed_while_a_turn_is_in_flight_is_taken_on_the_menu_it_was_pressed_on(
        mini_path: Path, tmp_path: Path) -> None:
    gate = threading.Event()

    class SlowEve(EveHook):
        def on_turn(self, session: Any, intent: Any, events: list[Event]) -> list[Event]:
            if isinstance(intent, Say):
                gate.wait(10.0)
            return super().on_turn(session, intent, events)

    app, session = make_app(eve_story(mini_path, tmp_path), tmp_path, threaded=True, steps=[SlowEve()])
    app.step(line("@eve how are you"))  # she is thinking: the input worker is busy
    assert [c.id for c in session.choices()][0] == "offer_kite"
    app.step([key(pygame.K_1, "1")])  # offer the kite, on this menu
    app.step([key(pygame.K_1, "1")])  # pressed again on the same menu, before the first was taken
    gate.set()
    assert app.worker.wait(10.0)
    app.step()
    assert session.state.scene == "after" and session.state.holders.get("kite") == "creature"
    # the second press was for a menu that is gone: dropped with a notice, not applied to the new one
    assert "choices changed" in app.notice and not any(e.kind == "choice" and e.ids.get("scene") == "after"
                                                       for e in session.log.since(0))
    app.close()
