"""The Ink runtime's one path to bink (``game.story.bink_calls``): the C functions it calls
straight must answer what bink's own API answers, line by line and choice by choice, and an
installed bink without them must fail loudly at the start, naming what is missing.

bink is pinned (``bink>=0.7.1,<0.8``, the ``ink`` extra); if a bink release renames or drops a
C function, these tests fail before a player meets it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from game.errors import StoryError
from game.story.bink_calls import NEEDED, StepCalls, step_calls

bink_story = pytest.importorskip("bink.story")
bink_ffi = pytest.importorskip("bink._ffi")

InkCompile = Callable[[Path, Path], Path]

CALLS = """\
# title: Calls
EXTERNAL note(x)
-> start

=== start ===
# scene: hall
Hello there. # mood: warm
~ note("hi")
~ note(3)
Ann: Second line, {~one|two|three}. # speaker: Ann # volume: low
+ [Go left] # side: left
  -> left
+ [Go right #fast] -> right
+ [Stay] -> start

=== left ===
Léft, {~north|south}.
-> start

=== right ===
Right. # end
{right > 4: -> END}
-> start
"""


@pytest.fixture(scope="module")
def calls_json(ink_compile: InkCompile, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("calls")
    (folder / "calls.ink").write_text(CALLS, encoding="utf-8")
    return ink_compile(folder / "calls.ink", folder / "calls.ink.json").read_bytes().decode("utf-8-sig")


def test_the_installed_bink_has_every_c_function_the_runtime_calls() -> None:
    missing = [name for name in NEEDED if not hasattr(bink_ffi.LIB, name)]
    assert not missing
    assert hasattr(bink_story, "_EXTERNAL_FUNCTION")


def test_every_call_answers_what_bink_s_own_api_answers(calls_json: str) -> None:
    """Two stories in lockstep, one through :class:`StepCalls`, one through bink's API: the same
    lines, tags, choices (texts and tags), external calls and errors, across random choices."""
    direct, wrapped = bink_story.Story(calls_json), bink_story.Story(calls_json)
    for story in (direct, wrapped):  # the same seed: Ink seeds each new story at random
        saved = json.loads(story.save_state())
        saved["storySeed"] = 7
        story.load_state(json.dumps(saved))
    calls = step_calls(direct)
    assert isinstance(calls, StepCalls)
    heard_direct: list[str] = []
    heard_wrapped: list[str] = []
    calls.bind_text_function("note", heard_direct.append)
    wrapped.bind_external_function("note", lambda _name, *args: heard_wrapped.append(
        args[0] if args and isinstance(args[0], str) else ""))
    rng = random.Random(4)
    lines, menus = 0, []
    for _ in range(200):
        while True:
            assert calls.can_continue() == wrapped.can_continue()
            if not wrapped.can_continue():
                break
            assert calls.cont() == (wrapped.cont(), tuple(wrapped.get_current_tags()))
            lines += 1
        found = wrapped.get_current_choices()
        expected = [(found[i], tuple(found.get_tags(i))) for i in range(len(found))]
        assert calls.choices(True) == expected
        menus += expected
        assert calls.choices(False) == [(text, ()) for text, _ in expected]
        if not expected:
            break
        index = rng.randrange(len(expected))
        calls.choose(index)
        wrapped.choose_choice_index(index)
    assert lines > 40 and heard_direct == heard_wrapped and heard_direct[:2] == ["hi", ""]
    assert ("Go right", ("fast",)) in menus and not expected  # choice tags were read; the story ended
    with pytest.raises(RuntimeError) as ours:
        calls.choose(99)
    with pytest.raises(RuntimeError) as theirs:
        wrapped.choose_choice_index(99)
    assert str(ours.value) == str(theirs.value)


def test_a_bink_without_what_the_runtime_calls_is_a_story_error_naming_it(calls_json: str) -> None:
    with pytest.raises(StoryError, match="C story pointer"):
        step_calls(object())


def test_a_missing_c_function_is_named(calls_json: str, monkeypatch: pytest.MonkeyPatch) -> None:
    story, lib = bink_story.Story(calls_json), bink_ffi.LIB

    class Without:
        """bink's library, less one function."""

        def __getattr__(self, name: str) -> object:
            if name == "bink_story_cont":
                raise AttributeError(name)
            return getattr(lib, name)

    monkeypatch.setattr(bink_ffi, "LIB", Without())
    with pytest.raises(StoryError, match="bink_story_cont"):
        step_calls(story)
