"""The explorer spreads its bound over the scenes: on a long road whose states far outnumber
the bound, it still reaches the far endings (breadth-first spent the bound near the start)."""

from __future__ import annotations

from collections import deque
from typing import Any

from game.story.explorer import Coverage, Explorer, breadth_first
from game.story.loader import story_from_dict


def long_road(n: int, rest: bool = True) -> dict[str, Any]:
    """``n`` scenes in a row: on, a side path two ahead behind a visit count, a once-only rest
    that raises ``courage`` (``rest``), a way back; an ending off the road half way, one at its end."""
    scenes: dict[str, Any] = {"rest_stop": {"title": "Inn", "location": "road", "ending": "inn", "lines": ["Stay."]}}
    for i in range(n):
        if i == n - 1:
            scenes[f"s{i}"] = {"title": f"End {i}", "location": "road", "ending": "road_end", "lines": ["The end."]}
            continue
        scenes[f"s{i}"] = {
            "title": f"Mile {i}", "location": "road", "lines": [f"Mile {i}."],
            "choices": [
                {"id": f"on_{i}", "text": "Walk on", "goto": f"s{i + 1}"},
                {"id": f"side_{i}", "text": "Side path", "if": f"visited('s{max(0, i - 1)}') >= 2 or courage >= 3",
                 "goto": f"s{min(n - 1, i + 2)}"},
                *([{"id": f"rest_{i}", "text": "Rest", "once": True, "do": ["courage += 1"]}] if rest else []),
                *([{"id": "inn", "text": "Stay at the inn", "goto": "rest_stop"}] if i == n // 2 else []),
            ],
            **({"exits": {"a": {"goto": f"s{i - 1}", "label": "Back"}}} if i else {}),
        }
    return {"id": "road", "title": "Road", "start": "s0",
            "variables": {"courage": {"type": "int", "default": 0}}, "locations": {"road": {"name": "Road"}},
            "scenes": scenes}


def test_the_far_endings_of_a_road_too_big_for_the_bound_are_found() -> None:
    story = story_from_dict(long_road(120))
    cov = Coverage()
    g = breadth_first(Explorer(story), 3000, cov, [])
    assert g.bound_hit  # the states do not fit: the order decides what is seen
    assert set(cov.endings) == {"inn", "road_end"}
    assert cov.scenes == set(story.model.scenes)
    assert g.merged > 0


def test_a_story_that_fits_is_explored_whole_with_the_same_states() -> None:
    """Order changes nothing when the bound is not hit: every abstract state a plain
    breadth-first walk of the moves finds is found."""
    story = story_from_dict(long_road(6, rest=False))
    ex = Explorer(story)
    g = breadth_first(ex, 100_000, Coverage(), [])
    root, _ = ex.start()
    seen, todo = {ex.key(root)}, deque([root])
    while todo:
        state = todo.popleft()
        for step in ex.moves(state):
            out = ex.step(state, step)
            if out is not None and ex.key(out[0]) not in seen:
                seen.add(ex.key(out[0]))
                todo.append(out[0])
    assert not g.bound_hit and set(g.keys) == seen and len(seen) > 20
    assert {e for e in g.ending if e} == {"inn", "road_end"}
