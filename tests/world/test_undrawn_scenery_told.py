"""Scenery the procedural painter cannot draw is told to the author once, naming the scene and the
words ("a workbench" in Gullhaven's net shed), in headless play (a warning line) and in the window
(stderr), not only in each chunk's ``ignored`` list of the transcript."""

from __future__ import annotations

import os

os.environ["SDL_VIDEODRIVER"] = "dummy"
os.environ["SDL_AUDIODRIVER"] = "dummy"
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from game.app.app import App  # noqa: E402
from game.headless import play_headless  # noqa: E402
from game.inputs.channels import Channels  # noqa: E402
from game.inputs.meaning import LexicalEmbedder, Resolver  # noqa: E402
from game.inputs.script import parse_line  # noqa: E402
from game.session import open_game  # noqa: E402
from game.state import Choose, Move  # noqa: E402
from game.world.undrawn import UndrawnScenery  # noqa: E402

STORY = Path(__file__).resolve().parents[2] / "stories" / "gullhaven"
NOTE = "scenery: nothing in the vocabulary is near 'a workbench' (nearest is desk at 0.44); not drawn"


def test_each_phrase_is_told_once_per_scene_with_its_scene() -> None:
    told = UndrawnScenery()
    first = told.tell("net_shed", [NOTE, "cue creak: no sound for it"])
    assert first == ["scene 'net_shed': 'a workbench' is not drawn (nearest is desk at 0.44): name something "
                     "the painter draws (game/world/backends/scenery.py), or give the scene art"]
    assert told.tell("net_shed", [NOTE]) == []  # once
    assert len(told.tell("inn", [NOTE])) == 1  # another scene's words are its own


def test_headless_play_warns_of_the_net_shed_s_workbench_once(tmp_path: Path) -> None:
    warnings: list[str] = []
    script = ["choose be_apprentice", "move d", "choose listen", "choose listen"]
    runner = play_headless(str(STORY), [parse_line(x, f"p.txt:{i}") for i, x in enumerate(script, 1)],
                           backend="procedural", size=(96, 54), save_dir=tmp_path / "s", dialogue=None,
                           voice=False, on_warning=warnings.append)
    shed = [w for w in warnings if "'net_shed'" in w and "'a workbench'" in w]
    assert len(shed) == 1, warnings
    assert runner.errors == []  # a note for the author, not a script line that failed


def test_the_window_tells_the_author_on_stderr_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    game = open_game(STORY, backend="procedural", dialogue=None, voice=False, save_dir=tmp_path / "s", size=(96, 54))
    session = game.session
    channels = Channels(session, Resolver(session.story, LexicalEmbedder()), voice_dir=tmp_path / "voice")
    app = App(session, (640, 360), threaded=False, audio=False, channels=channels)
    try:
        app.start()
        for turn in (Choose(choice_id="be_apprentice"), Move(direction="d", seconds=0.5)):
            session.submit(turn)
            for _ in range(30):
                app.step()
        for _ in range(30):  # idle blocks of the shed carry the same note again
            app.step()
        err = capsys.readouterr().err
        assert err.count("'a workbench' is not drawn") == 1 and "scene 'net_shed'" in err, err
        assert app.author_notes and "'net_shed'" in app.author_notes[0]
    finally:
        app.close()
        game.close()
