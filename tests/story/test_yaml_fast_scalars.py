"""The composer's fast path for scalars in mappings and lists resolves as the core schema says.

Plain text is taken as it stands unless its first character may start a number, a bool or a null;
quoted text is always text; keys, list items and anchored values keep their line marks.
"""

from __future__ import annotations

import pytest

from game.errors import StoryError
from game.story.yamlio import compose_marked

DOC = """\
plain: hello world
yes_word: yes
quoted_number: "12"
single_quoted: '-3.5'
number: 12
negative: -4
float: .5
exp: 1e3
bool: true
Bool: False
null_word: null
tilde: ~
empty:
text_t: tomorrow
text_n: nothing
text_dot: ...x
list:
  - 7
  - seven
  - "7"
  - ~
  - &one anchored
  - *one
"""


def test_every_kind_of_scalar_resolves_as_before() -> None:
    m = compose_marked(DOC, "f.yaml")
    assert m.value == {
        "plain": "hello world", "yes_word": "yes", "quoted_number": "12", "single_quoted": "-3.5",
        "number": 12, "negative": -4, "float": 0.5, "exp": 1000.0, "bool": True, "Bool": False,
        "null_word": None, "tilde": None, "empty": None, "text_t": "tomorrow", "text_n": "nothing",
        "text_dot": "...x", "list": [7, "seven", "7", None, "anchored", "anchored"]}
    assert m.where(("quoted_number",)) == "f.yaml:3:1"
    assert m.where(("list", 1)) == "f.yaml:19:5"
    assert m.where(("list", 5)) == "f.yaml:22:5"  # an alias of a scalar points at the anchor


def test_keys_that_need_resolving_become_text_and_merge_keys_and_duplicates_are_refused() -> None:
    assert compose_marked("1: a\ntrue: b\n~: c\n", "f").value == {1: "a", "true": "b", "~": "c"}
    with pytest.raises(StoryError, match="merge keys") as exc:
        compose_marked("a: 1\n<<: {b: 2}\n", "f")
    assert exc.value.where == "f:2"
    with pytest.raises(StoryError, match="duplicate key 'a'") as exc:
        compose_marked("a: 1\nb: 2\na: 3\n", "f")
    assert exc.value.where == "f:3:1"


def test_marks_inside_an_anchored_mapping_are_copied_to_its_alias() -> None:
    m = compose_marked("base: &b\n  x: 1\n  y: [a, b]\nother: *b\n", "f")
    assert m.value["other"] == {"x": 1, "y": ["a", "b"]}
    assert m.where(("other", "y", 1)) == "f:3:10"


def test_a_tagged_scalar_value_is_refused_where_it_is() -> None:
    with pytest.raises(StoryError, match="tag") as exc:
        compose_marked("a:\n  b: !!python/name:os.system x\n", "f")
    assert exc.value.where == "f:2:6"
