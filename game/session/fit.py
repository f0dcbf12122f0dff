"""Fitting a game to its story: the one routine a load, a reload and every checkpoint use.

A save made with an older version of the story, or a story hot-reloaded under a
running game, keeps the :class:`~game.state.GameState` by stable ids:

* variables by name: new ones get their defaults, removed ones go, a value whose
  type no longer fits the declaration takes the new default;
* items by id (inventory and holders; objects the player added stay), characters
  by id (a new character's relationship axes start at the card's values);
* the scene by id; if it is gone, the game restarts at the start scene with a
  ``warning`` (a checkpoint in a scene that is gone is dropped: there is nothing to
  roll back into). The location is kept while the story still has it.

An Ink story resumes inside bink from its saved state (the runtime re-enters the
knot when the recompiled story no longer fits it). A save made with this very
story is not fitted but checked (:func:`check_state`): a state it cannot have is a
damaged or hand-edited save.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from game.errors import SaveError
from game.state import Event, GameState
from game.state.saves import PREVIOUS, Checkpoint
from game.story.ink_runtime import InkRuntime
from game.story.runtime import StoryRuntime
from game.story.story import Story

_KINDS: dict[str, type | tuple[type, ...]] = {"int": int, "float": (int, float), "bool": bool, "str": str}


def fits_type(value: Any, declared: str) -> bool:
    """Whether ``value`` is a value of a variable declared ``declared`` (``int``, ``float``, ``bool``, ``str``)."""
    kinds = _KINDS.get(declared)
    return kinds is not None and isinstance(value, kinds) and (declared == "bool" or not isinstance(value, bool))


def scene_fits(runtime: StoryRuntime, state: GameState) -> bool:
    """Whether ``state``'s scene is in ``runtime``'s story (an Ink state before its first knot fits too)."""
    return state.scene in runtime.story.model.scenes or (isinstance(runtime, InkRuntime) and not state.scene)


def fit_state(story: Story, state: GameState) -> GameState:
    """``state`` fitted to ``story`` by stable ids (the scene is left as it is; see :func:`fit_game`).

    Returns a shallow copy: fields it does not change are shared with ``state``
    (copy it before changing it in place).
    """
    m = story.model
    scene = m.scenes.get(state.scene)
    relationships = dict(state.relationships)
    for cid, member in m.cast.items():
        relationships.setdefault(cid, dict(member.relationship))
    return state.model_copy(update={
        "story_id": m.id,
        "variables": {k: state.variables[k] if fits_type(state.variables.get(k), v.type) else v.default
                      for k, v in m.variables.items()},
        "inventory": [i for i in state.inventory if i in m.items or i in state.objects],
        "holders": {i: c for i, c in state.holders.items() if i in m.items or i in state.objects},
        "relationships": relationships,
        "location": state.location if state.location in m.locations or scene is None else scene.location,
    })


@dataclass
class Fitted:
    """A game fitted to a story: the live state, the checkpoints kept, and what happened."""

    state: GameState
    checkpoints: list[Checkpoint]
    events: list[Event]


def fit_game(runtime: StoryRuntime, state: GameState, checkpoints: list[Checkpoint], cause: str) -> Fitted:
    """Fit a game (``state`` and its ``checkpoints``) to ``runtime``'s story.

    Changes neither argument (an Ink runtime is synced to the new state). Checkpoints
    keep their extension snapshots; one in a scene that is gone is dropped.

    Args:
        cause: ``"load"`` (a warning says the story changed) or ``"reload"``.

    Raises:
        game.errors.WorldloomError: the story fails while resuming (a bad start scene).
    """
    story = runtime.story
    fitted = fit_state(story, state).copy_state()
    events: list[Event] = []
    if scene_fits(runtime, fitted):
        if cause == "load":
            events.append(Event(kind="warning", turn=fitted.turn, frame=fitted.frame, scene=fitted.scene,
                                text=f"the story changed since this save; resumed at scene {fitted.scene!r}"))
        if isinstance(runtime, InkRuntime):
            events += runtime.resume(fitted)
    else:
        old = fitted.scene
        fitted.scene = ""
        events.append(Event(kind="warning", turn=fitted.turn, frame=fitted.frame, scene=old,
                            text=f"scene {old!r} is gone from the story; restarted at the start scene",
                            ids={"scene": old}))
        events += runtime.enter(fitted, story.model.start, cause)
    kept = [Checkpoint(cp.label, fit_state(story, cp.state), cp.extras) for cp in checkpoints
            if scene_fits(runtime, cp.state)]
    return Fitted(fitted, kept, events)


def check_state(runtime: StoryRuntime, state: GameState, where: str, section: str = "state",
                base: GameState | None = None) -> None:
    """A state saved with this very story must name its scenes, items and typed variables.

    ``base``: a state already checked that this one shares unchanged fields with (the
    checkpoint before it, read from the same save); only the fields that differ are checked.

    Raises:
        game.errors.SaveError: the save was edited or damaged into a state the story
            cannot have; names ``section`` (``state``, ``checkpoints.3.state``).
    """
    m = runtime.story.model

    def bad(why: str) -> SaveError:
        return SaveError(f"save is corrupt ({section}: {why})", where=where, hint=PREVIOUS)

    if (base is None or state.scene is not base.scene) and not scene_fits(runtime, state):
        raise bad(f"scene {state.scene!r} is not in this story")
    if base is None or state.inventory is not base.inventory or state.holders is not base.holders \
            or state.objects is not base.objects:
        for item in [*state.inventory, *state.holders]:
            if item not in m.items and item not in state.objects:
                raise bad(f"item {item!r} is not in this story")
    if base is None or state.variables is not base.variables:
        for name, decl in m.variables.items():
            value = state.variables.get(name, decl.default)
            if not fits_type(value, decl.type):
                raise bad(f"variable {name} is {value!r}, not {decl.type}")


__all__ = ["Fitted", "check_state", "fit_game", "fit_state", "fits_type", "scene_fits"]
