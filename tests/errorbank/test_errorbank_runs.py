"""Each run of a game records its cases and samples under its own session id in the error bank."""

from __future__ import annotations

from pathlib import Path

from game.errorbank import ErrorStore
from game.errorbank.stats import summary
from game.session.assembly import open_game

STORY = Path(__file__).resolve().parents[2] / "stories" / "zero_mark"


def _play_once(db: Path) -> None:
    game = open_game(STORY, backend="procedural", size=(96, 54), errorbank=db, dialogue=None, voice=False)
    try:
        game.session.start()
        for _, _chunk in zip(range(2), game.session.stream(), strict=False):
            pass
    finally:
        game.close()


def test_two_runs_are_two_sessions_in_the_bank(tmp_path: Path) -> None:
    db = tmp_path / "errors.db"
    _play_once(db)
    _play_once(db)
    store = ErrorStore(db)
    try:
        runs = store.sessions()
        assert len(runs) == 2, runs
        assert all(r.startswith("main@") for r in runs)
        assert summary(store)["sessions"] == 2
        assert {s.session for s in store.samples()} == set(runs)
    finally:
        store.close()
