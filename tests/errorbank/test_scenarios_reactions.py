"""The monitors' request scenarios draw characters' reaction states from the one list the state keeps
(``game.state.gamestate.REACTIONS``: what lint allows and the world draws), not from a copy that could
drift from it: a reaction added there is one the scenarios (and the calibrations measured on them) meet."""

from __future__ import annotations

import importlib

import pytest

from game.errorbank import scenarios
from game.state import gamestate


def _drawn(module: object) -> set[str]:
    return {e.state for r in module.session_requests(24 * 600, seed=3)  # type: ignore[attr-defined]
            for e in r.scene.entities if e.kind == "character"}


def test_the_scenarios_draw_every_reaction_and_only_those() -> None:
    assert _drawn(scenarios) == set(gamestate.REACTIONS)


def test_a_reaction_added_to_the_state_is_drawn_by_the_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gamestate, "REACTIONS", (*gamestate.REACTIONS, "spin"))
    try:
        assert "spin" in _drawn(importlib.reload(scenarios))
    finally:
        monkeypatch.undo()
        importlib.reload(scenarios)
    assert "spin" not in scenarios.STATES
