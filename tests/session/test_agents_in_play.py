"""Agents choose with the dialogue model in real play (``open_game``), and a replay needs no model.

``open_game`` gives agents with ``fallback: model`` a :class:`ModelAgentPolicy` over the
dialogue model (the cast's, or one loaded for them), so the window and headless play
alike; a replay answers from the transcript's recorded picks. Here the dialogue model is
a scripted one (no network, no weights): the real SmolLM2 runs in ``bench/agents.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from game.cast.agentmind import ModelAgentPolicy
from game.headless import HeadlessRunner, play_headless
from game.inputs.script import parse_script, read_script
from game.models.llm import Message, ModelError
from game.models.llm_scripted import ScriptedDialogueModel
from game.replay import replay
from game.replay_io import read_transcript
from game.session import open_game
from game.state import GameState, Wait
from game.story import Story, load_story

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "tests" / "data" / "two_agents"
GULL = ROOT / "stories" / "gullhaven"


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDLOOM_CACHE", str(tmp_path / "cache"))


def picker() -> ScriptedDialogueModel:
    """Answers by what the options are: a real pick for some, nonsense (refused) for others."""
    return ScriptedDialogueModel([(r"grab:", "grab"), (r"hand:", "hand"), (r"chat:", "chat"),
                                  (r"drink:", "I fly to the moon"), (r"eat:", "99"), (r"to_tower:", "4")],
                                 default="2")


def run(story: Path, script: str, out: Path, model: Any, seed: int = 5) -> tuple[HeadlessRunner, Path]:
    out.mkdir(parents=True, exist_ok=True)
    commands = read_script(GULL / "playthroughs" / script) if script.endswith(".txt") else parse_script(script)
    runner = play_headless(str(story), commands, backend="procedural", seed=seed, save_dir=out / "saves",
                           transcript=out / "t.jsonl", size=(48, 27), dialogue=model, voice=False)
    return runner, out / "t.jsonl"


def agent_rows(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_transcript(path) if r.get("type") == "agent"]


@pytest.mark.parametrize(("story", "script"), [(TWO, "wait 1\n" * 40), (GULL, "the_wreck.txt")],
                         ids=["two_agents", "gullhaven"])
def test_a_seeded_run_with_model_agents_is_identical_twice_and_replays_without_a_model(
        story: Path, script: str, tmp_path: Path) -> None:
    a, ta = run(story, script, tmp_path / "a", picker())
    b, tb = run(story, script, tmp_path / "b", picker())
    assert ta.read_text() == tb.read_text() and a.frame_hash.hexdigest() == b.frame_hash.hexdigest()
    by_model = [r for r in agent_rows(ta) if r["data"]["by"] == "model"]
    assert by_model, "the dialogue model chose none of the agents' actions"
    assert all(isinstance(r["data"]["turn"], int) for r in by_model)
    result = replay(ta)  # no model: the recorded picks, turn by turn
    assert result.ok, result.mismatches
    assert result.matched == len([r for r in read_transcript(ta)
                                  if r.get("type") not in ("header", "input", "chunk", "save", "cast_summary")])


def test_without_a_model_the_same_run_goes_otherwise(tmp_path: Path) -> None:
    """The model's picks are really what the agents did: with no model they only follow rules."""
    _, with_model = run(TWO, "wait 1\n" * 40, tmp_path / "m", picker())
    _, without = run(TWO, "wait 1\n" * 40, tmp_path / "n", None)
    assert not [r for r in agent_rows(without) if r["data"]["by"] == "model"]
    assert [r["ids"] for r in agent_rows(with_model)] != [r["ids"] for r in agent_rows(without)]


def test_agents_stay_inside_the_declared_actions_whatever_the_model_proposes(tmp_path: Path) -> None:
    """A model that names undeclared actions, numbers out of range or nothing cannot leave the set."""
    wild = ScriptedDialogueModel([(r"drink:", "steal_boat"), (r"eat:", "burn the mill down"), (r"hand:", "99"),
                                  (r"thirst rising", "0"), (r"chat:", "fly_away")], default="1")
    runner, path = run(TWO, "wait 1\n" * 120, tmp_path, wild, seed=9)
    story = load_story(TWO)
    declared = {cid: set(a.actions) for cid, a in story.model.agents.items()}
    rows = agent_rows(path)
    assert rows and all(r["ids"]["action"] in declared[r["ids"]["character"]] for r in rows)
    assert any(r["data"]["by"] == "model" for r in rows)
    assert wild.calls > 5  # it was asked, and its undeclared answers became waits


class Proposer:
    """An agent policy that proposes what the story never declared, or a declared action not possible now."""

    def __init__(self) -> None:
        self.asked = 0

    def choose(self, story: Story, state: GameState, agent: str, options: Sequence[str]) -> str:
        self.asked += 1
        impossible = [a for a in story.model.agents[agent].actions if a not in options]
        return impossible[0] if impossible and self.asked % 2 else "steal_the_boat"


def test_a_policy_that_proposes_undeclared_or_impossible_actions_is_refused(tmp_path: Path) -> None:
    proposer = Proposer()
    game = open_game(TWO, backend="null", seed=2, save_dir=tmp_path, dialogue=None, voice=False, agents=proposer)
    try:
        runner = HeadlessRunner(game.session)
        runner.start()
        for cmd in parse_script("wait 1\n" * 30):
            runner.run(cmd)
        events = game.session.log.upto(len(game.session.log))
    finally:
        game.close()
    acted = [e for e in events if e.kind == "agent"]
    assert proposer.asked > 10
    assert not [e for e in acted if e.data["by"] == "model"]  # none of its proposals was taken
    assert all(e.data["by"] in ("schedule",) or e.data["by"].startswith("rule:") for e in acted)


class Broken:
    """A dialogue model whose worker died: every call fails."""

    name = "broken"
    context_size = 2048

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        self.calls += 1
        raise ModelError("the model worker is gone")

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_a_failing_model_leaves_the_agents_to_their_rules(tmp_path: Path) -> None:
    model = Broken()
    runner, path = run(TWO, "wait 1\n" * 60, tmp_path, model)
    rows = agent_rows(path)
    assert model.calls == 1  # not asked again once it failed
    assert rows and {r["data"]["by"] for r in rows} <= {"schedule", "rule:0", "rule:1"}
    assert runner.session.state.turn == 60  # play went on


def test_open_game_wires_the_policy_for_play_and_keeps_it_over_a_reload(tmp_path: Path) -> None:
    model = picker()
    game = open_game(TWO, backend="null", save_dir=tmp_path, dialogue=model, voice=False)
    try:
        assert isinstance(game.agents, ModelAgentPolicy) and game.agents.model is model
        assert game.session.runtime.policy is game.agents
        assert game.session.reload().ok
        assert game.session.runtime.policy is game.agents
    finally:
        game.close()
    for kw in ({"dialogue": None}, {"dialogue": model, "recorded": None, "agents": None}):
        g = open_game(TWO, backend="null", save_dir=tmp_path, voice=False, **kw)
        try:
            assert (g.agents is None) == (kw["dialogue"] is None)
        finally:
            g.close()


def test_a_story_without_model_agents_loads_no_model_for_them(tmp_path: Path, mini_path: Path) -> None:
    game = open_game(mini_path, backend="null", save_dir=tmp_path, dialogue=picker(), voice=False)
    try:
        assert game.agents is None and game.worker is None
    finally:
        game.close()


def test_a_character_with_a_card_who_is_an_agent_shares_the_casts_model(tmp_path: Path, embedder: object) -> None:
    """One dialogue model for her replies and her picks: nothing more is loaded for the agents."""
    card = ROOT / "characters" / "eve.yaml"
    (tmp_path / "story.yaml").write_text(f"""
id: eve_agent
title: Eve acts
start: quay
locations: {{quay: {{name: the quay}}, inn: {{name: the inn}}}}
cast: {{eve: {{name: Eve, card: "{card}"}}}}
agents:
  eve: {{at: quay, fallback: model, actions: {{go: {{kind: move, to: inn}}, back: {{kind: move, to: quay}}}}}}
scenes: {{quay: {{location: quay, choices: [{{id: stay, text: Stay}}]}}}}
""")
    model = ScriptedDialogueModel(default="1")
    game = open_game(tmp_path, backend="null", save_dir=tmp_path / "saves", dialogue=model, voice=False,
                     cast_options={"embedder": embedder, "show_progress": False})
    try:
        assert game.cast is not None and game.cast.model is model and game.worker is None
        assert isinstance(game.agents, ModelAgentPolicy) and game.agents.model is model
        game.session.start()
        events = game.session.submit(Wait()).events
        assert [(e.ids["action"], e.data["by"]) for e in events if e.kind == "agent"] == [("go", "model")]
    finally:
        game.close()


class Done:
    """A last step that counts the turns applied."""

    def __init__(self) -> None:
        self.turns = 0

    def on_turn(self, host: Any, intent: Any, events: list[Any]) -> list[Any]:
        self.turns += 1
        return []


class Watching(ScriptedDialogueModel):
    """A scripted model that notes, at each call, the session's turn and the turns applied so far."""

    def __init__(self, done: Done) -> None:
        super().__init__(default="1")
        self.done = done
        self.session: Any = None
        self.seen: list[tuple[int, int]] = []

    def stream(self, messages: list[Message], max_new_tokens: int = 128, temperature: float = 0.0,
               seed: int = 0) -> Iterator[str]:
        self.seen.append((self.session.state.turn, self.done.turns))
        return super().stream(messages, max_new_tokens, temperature, seed)


def test_the_model_picks_before_the_turn_off_the_sessions_lock(tmp_path: Path) -> None:
    """Each call happens while the session's state is still the last turn's (the prepare phase,
    on a copy, off the lock), never inside the turn (where it already is the new turn's)."""
    done = Done()
    model = Watching(done)
    game = open_game(TWO, backend="null", seed=1, save_dir=tmp_path, dialogue=model, voice=False, steps=[done])
    model.session = game.session
    try:
        game.session.start()
        first = game.session.state.turn
        events = []
        for _ in range(12):
            events += game.session.submit(Wait()).events
    finally:
        game.close()
    assert model.calls >= 3 and any(e.kind == "agent" and e.data["by"] == "model" for e in events)
    assert all(turn == first + applied for turn, applied in model.seen), model.seen


def test_play_dialogue_none_loads_no_model_and_the_agents_keep_to_their_rules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from game import cli
    from game.cast import castroom

    def no_loading(*args: Any, **kw: Any) -> Any:
        raise AssertionError(f"a dialogue model was loaded: {args[:1]}")

    monkeypatch.setattr(castroom, "load_dialogue", no_loading)  # what open_game loads the agents' model with
    script = tmp_path / "w.txt"
    script.write_text("wait 1\n" * 20)
    out = tmp_path / "t.jsonl"
    assert cli.main(["play", str(TWO), "--headless", "--dialogue", "none", "--no-voice", "--no-errorbank",
                     "--backend", "null", "--inputs", str(script), "--transcript", str(out),
                     "--save-dir", str(tmp_path / "saves")]) == 0
    rows = agent_rows(out)
    assert rows and not [r for r in rows if r["data"]["by"] == "model"]
    assert "worldloom:" not in capsys.readouterr().err  # no warning about a model that would not load
