"""The Eve demo and the cast wiring (game/cast/castroom.py): the story, `ask`, replies with
sources, trust gating, memory in saves and rollbacks, the player's name, replays from
recorded replies, her voice in the chunk audio, and the director's identity anchor.

Fast: the ``scripted`` dialogue model, the ``null`` backend and no voice, except one short
test that really speaks (espeak-ng). The embedded SmolLM2 is tested in test_dialogue.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from game.cast.castroom import (
    Castroom,
    RecordedReplies,
    cast_of,
    dialogue_spec,
    format_summary,
    key_terms,
    names_claimed,
    owners_differ,
    speech_estimate,
)
from game.errors import InputError
from game.headless import HeadlessRunner, play_headless
from game.inputs.script import parse_script
from game.models.llm import ModelError
from game.models.llm_scripted import ScriptedDialogueModel
from game.replay import replay
from game.session import Session, open_game
from game.state import Choose, Say
from game.story.loader import load_story

ROOT = Path(__file__).parents[2]
EVE = ROOT / "stories" / "eve"
SCRIPTED = f"scripted:{EVE / 'scripted.yaml'}"

#: Into the kitchen, her name and a confidence, then enough talk to push them out of the rolling window.
OPENING = """choose knock
ask eve Good evening. I'm sorry to knock so late.
ask eve My name is Ada, by the way.
ask eve My grandmother kept a lighthouse in Finnmark, up on the Varanger coast.
"""
SMALL_TALK = "".join(f"ask eve {q}\n" for q in (
    "How long have you kept the light?", "Who is the gull at the window?", "Why have you never opened the bottle?",
    "What was it like growing up in Harrowby?", "Tell me about your grandmother.", "What do you eat in the winter?",
    "Is this the lemon tree you call Vesper?", "How do you keep tomatoes alive this far north?"))


def play(tmp: Path, script: str, embedder: Any, *, dialogue: Any = SCRIPTED, name: str = "t",
         **kw: Any) -> HeadlessRunner:
    out = tmp / name
    out.mkdir(exist_ok=True)
    return play_headless(str(EVE), parse_script(script, f"{name}.txt"), backend="null", seed=3,
                         save_dir=out / "saves", transcript=out / "t.jsonl", dialogue=dialogue, voice=False,
                         cast_options={"embedder": embedder, "show_progress": False}, **kw)


def rows_of(runner: HeadlessRunner, tmp: Path, name: str = "t") -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp / name / "t.jsonl").read_text(encoding="utf-8").splitlines()]


def session_for(tmp: Path, embedder: Any, model: Any = None, voice: bool = False,
                **kw: Any) -> tuple[Session, Castroom]:
    game = open_game(EVE, backend="null", seed=3, save_dir=tmp / "saves",
                     dialogue=model if model is not None else dialogue_spec(SCRIPTED), voice=voice,
                     cast_options={"embedder": embedder, "show_progress": False, **kw})
    room = game.cast
    assert room is not None and cast_of(game.session) is room
    return game.session, room


# -- the story -------------------------------------------------------------------------------------

def test_eve_story_loads_and_lints_clean() -> None:
    from game.story.lint import lint_story

    story = load_story(EVE)
    assert len(story.model.scenes) >= 6 and story.model.cast["eve"].card
    assert sum(1 for s in story.model.scenes.values() if s.ending) >= 2
    assert {"seaglass", "lemon", "lamp_oil", "almanac"} <= set(story.model.inventory)
    assert lint_story(EVE) == []
    long = parse_script((EVE / "long.txt").read_text(encoding="utf-8"), "long.txt")
    assert sum(c.verb == "ask" for c in long) >= 50


def test_ask_verb_parses_and_unknown_characters_are_refused(tmp_path: Path, embedder: Any) -> None:
    (cmd,) = parse_script("ask eve  What is that   light?")
    assert cmd.verb == "ask" and cmd.args == ("eve", "What is that   light?")
    with pytest.raises(InputError, match="ask takes"):
        parse_script("ask eve")
    refused = play(tmp_path, "choose knock\nask admiral Hello?\n", embedder)
    assert len(refused.errors) == 1 and refused.errors[0].startswith("t.txt:2: `ask admiral Hello?` failed")
    assert "characters who answer: eve" in refused.errors[0]


# -- replies ----------------------------------------------------------------------------------------

def test_ask_eve_gives_reply_events_with_sources(tmp_path: Path, embedder: Any) -> None:
    runner = play(tmp_path, OPENING + "ask eve What is that light for?\nask eve Zzzz qqq?\n", embedder)
    rows = rows_of(runner, tmp_path)
    assert rows[0]["cast"] == ["eve"] and rows[0]["dialogue"] == "eve-scripted"
    replies = [r for r in rows if r["type"] == "reply"]
    assert len(replies) == 5 and all(r["speaker"] == "eve" and r["text"] for r in replies)
    sources = [r["data"]["source"] for r in replies]
    assert sources[2] == "model" and "Finnmark" in replies[2]["text"]
    assert sources[3] == "authored" and replies[3]["ids"] == {"authored": "example.1"}
    assert sources[4] == "fallback" or replies[4]["text"].startswith(("Hm.", "The wind"))
    for r in replies:
        assert r["data"]["speech_s"] > 0 and r["data"]["expression"] and r["data"]["voice"]["rate"] > 0
    # the say turn's chunk is long enough for her to say it
    chunk = next(r for r in rows if r["type"] == "chunk" and r["frame"] >= replies[3]["frame"])
    assert chunk["frames"] / rows[0]["fps"] >= replies[3]["data"]["speech_s"]
    assert "saying" in chunk["request"]["prompt"] or len(chunk["request"]["prompt"]) == 160
    last = rows[-1]
    assert last["type"] == "cast_summary" and last["cast"]["eve"]["replies"]["total"] == 5
    assert runner.summary is not None and format_summary(runner.summary)[0].startswith("Eve Solvang (eve): 5 replies")


def test_replies_are_written_off_the_lock_in_the_prepare_phase(tmp_path: Path, embedder: Any) -> None:
    import threading

    gate = threading.Event()

    class Slow(ScriptedDialogueModel):
        def stream(self, *a: Any, **k: Any) -> Any:
            assert gate.wait(10)
            return super().stream(*a, **k)

    model = Slow([("chickens", "No chickens. Admiral would have words.")], default="Aye.")
    session, room = session_for(tmp_path, embedder, model)
    session.start()
    session.submit(Choose(choice_id="knock"))
    heard: list[tuple[str, str, str]] = []
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(session.submit(
        Say(text="Do you keep chickens?", target="eve"), progress=lambda *a: heard.append(a))))
    worker.start()
    # the model is still writing: the session answers the window meanwhile (the lock is free)
    seen = threading.Thread(target=lambda: done.append(session.view()))
    seen.start()
    seen.join(5)
    assert not seen.is_alive() and len(done) == 1 and model.calls <= 1
    gate.set()
    worker.join(10)
    result = done[1]
    assert [e.text for e in result.events if e.kind == "reply"] == ["No chickens. Admiral would have words."]
    assert model.calls == 1  # written once, ahead, and taken by the turn
    assert heard and all(k == "sentence" and who == "eve" for k, who, _ in heard)
    assert room.addressee("Eve, what's that?") == "eve" and room.addressee("what's that?", ["eve"]) == "eve"
    assert room.addressee("what's that?") == ""
    session.close()


# -- relationships ----------------------------------------------------------------------------------

def test_trust_gating_opens_the_lantern_room(tmp_path: Path, embedder: Any) -> None:
    low = play(tmp_path, "choose knock\nchoose to_watchroom\n", embedder, name="low")
    assert low.session.state.relationships["eve"]["trust"] < 3
    assert "to_lantern" not in [c.id for c in low.session.choices()]
    refused = play(tmp_path, "choose knock\nchoose to_watchroom\nchoose to_lantern\n", embedder, name="refused")
    assert len(refused.errors) == 1 and "refused.txt:3: `choose to_lantern` failed" in refused.errors[0]
    assert refused.session.state.scene == "watchroom"
    script = ("choose knock\ngive lamp_oil eve\nchoose help_paraffin\nchoose came_for_light\n"
              "ask eve Thank you so much, you are wonderful and kind!\nchoose to_watchroom\nchoose to_lantern\n")
    high = play(tmp_path, script, embedder, name="high")
    s = high.session
    assert s.state.scene == "lantern" and s.state.relationships["eve"]["trust"] >= 3
    rows = rows_of(high, tmp_path, "high")
    causes = {r["data"].get("cause") for r in rows if r["type"] == "effect" and r["ids"]["target"] == "trust(eve)"}
    assert {"gift", "tone"} <= causes  # her card's taste in gifts and the tone of what was said
    # the lantern room refers back to what happened downstairs
    assert any(r["type"] == "line" and "paraffin" in r["text"] for r in rows if r.get("scene") == "lantern")
    path = high.summary["eve"]["path"] if high.summary else []
    assert path[0]["trust"] == 0.0 and path[-1]["trust"] >= 3


# -- memory -------------------------------------------------------------------------------------------

def test_memory_survives_save_load_and_rollback(tmp_path: Path, embedder: Any) -> None:
    session, room = session_for(tmp_path, embedder)
    session.start()
    session.submit(Choose(choice_id="knock"))
    session.submit(Say(target="eve", text="My name is Ada, by the way."))
    session.submit(Say(target="eve", text="My grandmother kept a lighthouse in Finnmark."))
    session.save("night")
    saved = json.loads((tmp_path / "saves" / "night.json").read_text(encoding="utf-8"))
    assert saved["extra"]["cast"]["memories"]["eve"]["pinned"]["player_name"][0] == "The player's name is Ada."
    turn = session.state.turn
    session.submit(Choose(choice_id="came_for_light"))  # a checkpoint
    session.submit(Say(target="eve", text="Actually, call me Bo."))
    assert room.characters["eve"].memory.player_name == "Bo"
    session.rollback()
    memory = room.characters["eve"].memory
    assert session.state.turn == turn and memory.player_name == "Ada"
    assert all(m.turn <= turn for m in memory.history) and "Bo" not in json.dumps(memory.to_json())
    session.close()

    other, room2 = session_for(tmp_path, embedder)
    assert room2.characters["eve"].memory.player_name == ""
    other.load("night")
    memory2 = room2.characters["eve"].memory
    assert memory2.player_name == "Ada" and [m.role for m in memory2.history][-4:] == ["user", "assistant"] * 2
    assert memory2.to_json() == saved["extra"]["cast"]["memories"]["eve"]
    reply = other.submit(Say(target="eve", text="What's my name?")).events
    assert any(e.kind == "reply" and e.text.startswith("Ada.") for e in reply)
    other.close()


def test_name_is_pinned_and_recalled_after_it_left_the_rolling_window(tmp_path: Path, embedder: Any) -> None:
    script = ("choose knock\nask eve What's my name?\n" + OPENING.split("\n", 1)[1] + SMALL_TALK
              + "ask eve Do you still know what my name is?\n"
              + "ask eve Would my grandmother have liked your lighthouse, do you think?\n"
              + "ask eve Do you remember where my grandmother kept her lighthouse?\n")
    runner = play(tmp_path, script, embedder)
    room = cast_of(runner.session)
    assert room is not None
    memory = room.characters["eve"].memory
    assert memory.player_name == "Ada" and "The player's name is Ada." in memory.sink_text()
    assert not any("name is Ada" in m.text for m in memory.history)  # out of the window: the sink holds it
    replies = [r for r in rows_of(runner, tmp_path) if r["type"] == "reply"]
    assert replies[0]["data"]["source"] == "authored" and "haven't said" in replies[0]["text"]
    assert replies[-3]["data"]["authored_id"] == "answer.player_name" and replies[-3]["text"].startswith("Ada.")
    # the unpinned fact comes back from episodic memory into her prompt
    assert any("Finnmark" in m for m in replies[-2]["data"]["memories"])
    # and asked where, she says it back from the player's own words (no pattern read a fact from it)
    assert replies[-1]["data"]["authored_id"].startswith("said.") and "Finnmark" in replies[-1]["text"]
    facts = runner.summary["eve"]["facts"] if runner.summary else []
    assert facts and facts[0]["terms"] == ["Finnmark", "Varanger"] and facts[0]["retrieved_in_prompts"]
    assert runner.summary and runner.summary["eve"]["player_name"]["said_in_replies"]


def test_the_summary_tracks_told_facts_by_value_and_never_counts_a_question(tmp_path: Path, embedder: Any) -> None:
    script = ("choose knock\nask eve My name is Ada, by the way.\nask eve I keep forty hives near Rotterdam.\n"
              "ask eve Which treat did I say I'm fond of?\nask eve How many hives did I say I keep?\n")
    runner = play(tmp_path, script, embedder)
    assert runner.summary
    facts = runner.summary["eve"]["facts"]
    assert not [f for f in facts if f["told"].endswith("?")], facts  # a question is not a disclosure
    hives = [f for f in facts if "forty" in f["told"]]
    assert hives and "40" in hives[0]["belief"], facts  # the belief her memory holds, with its value
    asked = [r for r in rows_of(runner, tmp_path) if r["type"] == "reply"][-1]
    assert "40" in asked["text"] or "forty" in asked["text"].lower(), asked  # the grounded answer says it...
    assert hives[0]["said_in_replies"] == [hives[0]["told_at_exchange"] + 2]  # ...and the summary counts it
    text = "\n".join(format_summary(runner.summary))
    assert "(player_hives.count = 40) -> said back at [4]" in text, text


def test_a_told_count_is_said_back_only_by_a_reply_that_names_the_thing(tmp_path: Path, embedder: Any) -> None:
    # "Two white flashes every fifteen seconds" says two, not "2 cats": the summary counted it as said back
    script = ("choose knock\nask eve I have two cats called Pip and Moss.\nask eve How often does the light flash?\n"
              "ask eve How many cats did I say I have?\n")
    runner = play(tmp_path, script, embedder)
    assert runner.summary
    cats = [f for f in runner.summary["eve"]["facts"] if f.get("belief") == "player_cats.count = 2"]
    replies = [r for r in rows_of(runner, tmp_path) if r["type"] == "reply"]
    assert "two" in replies[1]["text"].lower() and "cat" not in replies[1]["text"].lower()
    assert cats and cats[0]["said_in_replies"] == [3], (cats, [r["text"] for r in replies])


# -- replays ------------------------------------------------------------------------------------------

def test_replay_uses_recorded_replies_and_never_builds_a_model(tmp_path: Path, embedder: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    runner = play(tmp_path, OPENING + "give lemon eve\nask eve Do you like lemons?\nsave s\n", embedder)
    transcript = tmp_path / "t" / "t.jsonl"
    rows = rows_of(runner, tmp_path)
    assert rows[-1]["type"] == "cast_summary"

    def no_model(*_: Any, **__: Any) -> Any:
        raise AssertionError("a replay must not build a dialogue model")

    import game.cast.castroom as castroom
    import game.models.registry as registry

    monkeypatch.setattr(registry, "build_model", no_model)
    monkeypatch.setattr(castroom, "build_model", no_model)
    monkeypatch.setattr(castroom, "pipeline_for", no_model)
    result = replay(transcript)
    assert result.ok, result.mismatches
    assert result.matched == len([r for r in rows if r["type"] not in ("header", "input", "chunk", "save",
                                                                         "cast_summary")])
    said = [r["text"] for r in rows if r["type"] == "reply"]
    assert said and all(any(t in line for line in result.lines) for t in said)  # her replies are shown too
    # with a reply taken out of the transcript, the replay says so instead of inventing one
    cut = [r for r in rows if not (r["type"] == "reply" and "lemon" in r["text"].lower())]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(json.dumps(r) for r in cut) + "\n", encoding="utf-8")
    assert not replay(broken).ok
    recorded = RecordedReplies(rows)
    assert len(recorded) == 4 and recorded.take("eve", "x")["speaker"] == "eve"


# -- voice ----------------------------------------------------------------------------------------------

def test_her_voice_is_mixed_into_the_chunk_audio(tmp_path: Path, embedder: Any) -> None:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    game = open_game(EVE, backend="null", seed=1, save_dir=tmp_path,
                     dialogue=ScriptedDialogueModel(default="Aye. Mind the step."),
                     cast_options={"embedder": embedder, "show_progress": False})
    session, room = game.session, game.cast
    assert room is not None and room.voice is not None and game.stack == ("voice", "null")
    runner = HeadlessRunner(session)
    chunks: list[Any] = []
    runner.on_chunk = chunks.append
    runner.start()
    before = len(chunks)
    runner.run(parse_script("choose knock")[0])
    quiet = chunks[before:]
    # a line no card topic answers, so the scripted model speaks (since session 8 "Is it always this windy?"
    # is answered with her card's weather tonight, 0.503 at TOPIC_THRESHOLD 0.5)
    runner.run(parse_script("ask eve Do you like football?")[0])
    spoken = chunks[before + len(quiet):]
    session.close()

    def rms(cs: list[Any]) -> float:
        audio = np.concatenate([c.audio if c.audio is not None else np.zeros(1, np.float32) for c in cs])
        return float(np.sqrt(np.mean(np.square(audio))))

    assert rms(quiet) < 1e-4 < 0.01 < rms(spoken)
    assert all(c.audio is None or len(c.audio) == round(c.n_frames * c.audio_rate / c.fps) for c in spoken)
    assert [t for t, _ in room.voice.spoken] == ["Aye.", "Mind the step."] and not room.voice.errors
    assert sum(c.n_frames for c in spoken) / spoken[0].fps >= sum(s for _, s in room.voice.spoken)


# -- the director ---------------------------------------------------------------------------------------

def test_director_sends_her_identity_anchor_expression_and_words(tmp_path: Path, embedder: Any) -> None:
    session, room = session_for(tmp_path, embedder, ScriptedDialogueModel(default="The kettle's on."))
    start = session.start().request
    assert start is not None
    anchors = {a.id: a for a in start.anchors}
    card = room.characters["eve"].card
    assert anchors["char.eve"].kind == "image" and anchors["char.eve"].ref.endswith("characters/eve.png")
    assert Path(anchors["char.eve"].ref).is_file() and anchors["char.eve"].tier == "sink_global"
    assert anchors["char.eve.look"].ref == card.look.description
    session.submit(Choose(choice_id="knock"))
    # not a hello: her card answers those herself (tests/cast/test_farewell_greeting.py), the model this
    request = session.submit(Say(text="My boots are soaked through.", target="eve")).request
    assert request is not None
    eve = next(e for e in request.scene.entities if e.id == "eve")
    assert "copper-red braid" in eve.look
    assert "looking guarded" in request.prompt and 'saying "The kettle\'s on"' in request.prompt
    assert request.tiers["prompt.expression"] == "request"
    assert room.characters["eve"].rel.expression(session.state) == "guarded"
    session.state.relationships["eve"].update(trust=5.0, affinity=7.0)
    assert "looking delighted" in session.idle_request().prompt
    session.close()


# -- smaller pieces -------------------------------------------------------------------------------------

def test_dialogue_specs(tmp_path: Path) -> None:
    assert dialogue_spec("transformers").kind == "transformers" and dialogue_spec("").source == ""
    assert dialogue_spec("openai:gpt-4o-mini").model == "gpt-4o-mini"
    assert dialogue_spec("HuggingFaceTB/SmolLM2-360M-Instruct").source == "HuggingFaceTB/SmolLM2-360M-Instruct"
    spec = dialogue_spec(SCRIPTED)
    assert spec.kind == "scripted" and spec.options["answers"] and spec.options["name"] == "eve-scripted"
    assert dialogue_spec("scripted:scripted.yaml", base=EVE).options == spec.options
    bad = tmp_path / "bad.yaml"
    bad.write_text("answers: [['(unclosed', 'x']]\n", encoding="utf-8")
    with pytest.raises(ModelError, match="regular expression"):
        dialogue_spec(f"scripted:{bad}")
    with pytest.raises(ModelError, match="cannot read"):
        dialogue_spec(f"scripted:{tmp_path / 'missing.yaml'}")


def test_card_answers_round_trip_and_summary_helpers(tmp_path: Path) -> None:
    from game.cast.card_io import load_card, read_card_json, write_card_json

    card = load_card(ROOT / "characters" / "eve.yaml")
    assert card.answers and card.fallbacks and card.home == "Skerrow"
    back = read_card_json(write_card_json(card, tmp_path / "eve.json", version=3))
    assert back.answers == card.answers and back.fallbacks == card.fallbacks and back.home == card.home
    assert key_terms("My grandmother kept a lighthouse in Finnmark. Mother was from Oslo.") == [
        "Finnmark", "Oslo"]
    assert names_claimed("I'm Eve. My name is Marta, and I'm glad.") == ["Eve", "Marta"]
    assert owners_differ("What did I tell you about my grandmother?", "Tell me about your grandmother.")
    assert not owners_differ("Tell me about your old grandmother", "Tell me about your grandmother.")
    assert 2.0 < speech_estimate("Two white flashes every fifteen seconds.", 160, 1) < 3.5
