"""Every channel into a session: keys, choices, typed words, voice (espeak-ng -> pocketsphinx),
dropped images (validated), and the playthrough-script verbs say / image / voice."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from game import images
from game.errors import InputError
from game.headless import play_headless
from game.inputs.channels import Channels
from game.inputs.meaning import Resolver
from game.inputs.script import parse_script
from game.inputs.voice import read_wav, transcribe
from game.replay import replay
from game.session import Session
from game.state import Choose, Give, Move
from game.story import load_story
from game.world.backends.null import NullBackend

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session(load_story(DATA / "mini"), NullBackend(), seed=1, save_dir=tmp_path)
    s.start()
    return s


@pytest.fixture
def channels(session: Session, embedder: Any) -> Channels:
    return Channels(session, Resolver(session.story, embedder), voice_dir=session.save_dir / "voice")


def speak(text: str, path: Path) -> Path:
    """A WAV of ``text`` said by espeak-ng (skips the test without it)."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng is not installed")
    subprocess.run([exe, "-w", str(path), text], check=True, capture_output=True, timeout=30)
    return path


def png(path: Path, size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (200, 40, 40)) -> Path:
    Image.new("RGB", size, colour).save(path)
    return path


def test_keys_send_one_action_per_frame_aligned_to_blocks(session: Session) -> None:
    tap = session.submit(Move(direction="w", seconds=0.1)).request  # a tap: one block
    assert tap is not None and len(tap.actions) == 12 and set(tap.actions) == {"w"}
    held = session.submit(Move(direction="a", seconds=1.3)).request
    assert held is not None and held.min_frames == 32 and len(held.actions) == 36  # 1.3 s at 24 fps -> 3 blocks
    chunks = list(session.stream())
    assert [c.n_frames for c in chunks] == [12, 12, 12]
    assert held.camera_dx < 0  # the camera pans left across the chunk


def test_choices_by_number_words_and_drag(session: Session, channels: Channels) -> None:
    assert [c.number for c in session.choices()] == [1, 2, 3]
    reply = channels.say("offer the kite")
    assert [e.ids.get("choice") for e in reply.events if e.kind == "choice"] == ["offer_kite"]
    session.rollback()
    session.submit(Choose(choice_id=session.choices()[1].id))  # by number (2 = offer the leaf)
    assert session.state.holders["leaf"] == "creature"
    session.rollback()
    events = session.submit(Give(item_id="stone", character_id="creature")).events  # dragged onto it
    assert any(e.kind == "reaction" and e.data["reaction"] == "tilt" for e in events)


def test_nonsense_is_not_understood_and_nothing_changes(session: Session, channels: Channels) -> None:
    before = session.state.to_json()
    pending = session.pending
    for text in ("purple monkey dishwasher", "what is the capital of France", "don't offer the leaf"):
        reply = channels.say(text)
        assert not reply.acted and reply.line and reply.result is None
    assert session.state.to_json() == before and session.pending is pending


def test_typed_edits_undo_and_clarify(session: Session, channels: Channels) -> None:
    channels.say("make it rain")
    assert session.state.world["weather"] == "rain"
    reply = channels.say("undo")
    assert reply.acted and "weather" not in session.state.world
    ask = channels.say("the kite or the leaf")
    assert ask.line == "The red kite or the green leaf?" and not ask.acted
    answer = channels.say("the kite")
    assert any(e.ids.get("choice") == "offer_kite" for e in answer.events)


def test_voice_clip_becomes_the_intended_choice(session: Session, channels: Channels, tmp_path: Path) -> None:
    pytest.importorskip("pocketsphinx")
    wav = speak("offer the kite", tmp_path / "kite.wav")
    reply = channels.voice(wav)
    assert reply.heard is not None and reply.heard.text == "offer the kite" and reply.heard.mode == "grammar"
    assert [e.ids.get("choice") for e in reply.events if e.kind == "choice"] == ["offer_kite"]
    assert reply.result is not None and reply.result.request.audio == str(wav.resolve())  # the audio cue
    samples, rate = read_wav(wav)  # the same clip as samples (push-to-talk gives arrays)
    assert transcribe(samples, rate, ["offer the kite", "offer the leaf"]) == "offer the kite"


def test_voice_nonsense_is_not_understood(session: Session, channels: Channels, tmp_path: Path) -> None:
    pytest.importorskip("pocketsphinx")
    before = session.state.to_json()
    reply = channels.voice(speak("purple monkey dishwasher elephant", tmp_path / "n.wav"))
    assert reply.heard is not None and reply.heard.mode != "grammar"
    assert not reply.acted and session.state.to_json() == before
    silence = channels.voice(np.zeros(16000, np.float32), 16000)
    assert not silence.acted


def test_a_dropped_image_becomes_an_entity_with_its_reference(session: Session, tmp_path: Path) -> None:
    ch = Channels(session, Resolver(session.story))
    path = png(tmp_path / "photo.png")
    reply = ch.image(path)
    assert reply.acted and "picture" in session.state.objects
    req = reply.result.request
    assert req.references == (str(path.resolve()),)
    ent = {e.id: e for e in req.scene.entities}
    assert ent["picture"].image == str(path.resolve()) and ent["picture"].kind == "object"
    assert any(a.id == "object.picture" and a.tier == "sink_current" for a in req.anchors)
    assert not any("references" in i for c in session.stream() for i in c.ignored)  # null takes references
    blind = NullBackend()
    blind.caps = dataclasses.replace(blind.caps, ref_images="none")
    chunk = next(iter(blind.generate(req)))
    assert "references: backend takes no reference images" in chunk.ignored  # reported, never dropped


def test_image_validation_refuses_bad_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    limit = Image.MAX_IMAGE_PIXELS
    ok = images.validate_image(png(tmp_path / "ok.png"))
    assert (ok.format, ok.width, ok.height) == ("PNG", 64, 48)
    Image.new("RGB", (20, 20)).save(tmp_path / "ok.jpg", "JPEG")
    assert images.validate_image(tmp_path / "ok.jpg").format == "JPEG"
    (tmp_path / "fake.png").write_text("not a picture")
    Image.new("RGB", (20, 20)).save(tmp_path / "pic.gif", "GIF")
    Image.new("1", (6000, 6000)).save(tmp_path / "bomb.png")  # 36 Mpx in a few kB
    Image.new("1", (4500, 4500)).save(tmp_path / "bomb2.png")  # over MAX_PIXELS, under Pillow's own error
    Image.new("RGB", (5000, 20)).save(tmp_path / "wide.png")
    data = (tmp_path / "ok.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    cases = {"missing.png": "no such", "fake.png": "not an image", "pic.gif": "not PNG or JPEG",
             "bomb.png": "decompression bomb", "bomb2.png": "decompression bomb", "wide.png": "5000x20",
             "cut.png": "corrupt"}
    for name, why in cases.items():
        with pytest.raises(InputError, match=why):
            images.validate_image(tmp_path / name)
    monkeypatch.setattr(images, "MAX_BYTES", 100)
    with pytest.raises(InputError, match="limit"):
        images.validate_image(tmp_path / "ok.png")
    assert Image.MAX_IMAGE_PIXELS == limit  # the process-wide guard is restored


def test_script_verbs_say_image_voice_and_replay(tmp_path: Path, embedder: Any) -> None:
    pytest.importorskip("pocketsphinx")
    speak("make it rain", tmp_path / "rain.wav")
    png(tmp_path / "drop.png", colour=(40, 90, 220))
    script = tmp_path / "play.txt"
    script.write_text("say it is night now\nvoice rain.wav\nimage drop.png creature\nsay blah blah\n"
                      "say offer the kite\n")
    runner = play_headless(str(DATA / "mini"), parse_script(script.read_text(), str(script)), backend="null",
                           seed=3, save_dir=tmp_path / "s", transcript=tmp_path / "t.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    heard = next(r for r in rows if r["type"] == "heard")
    assert heard["text"] == "make it rain" and heard["mode"] == "grammar"
    assert runner.session.state.world == {"time_of_day": "night", "weather": "rain"}
    assert runner.session.state.gifts["creature"][0] == "picture"
    assert any(r["type"] == "not_understood" and r["input"] == "blah blah" for r in rows)
    chunk = [r for r in rows if r["type"] == "chunk"]
    assert any(r["request"]["event"] == "edit" for r in chunk)
    assert replay(tmp_path / "t.jsonl").ok
