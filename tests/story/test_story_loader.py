"""The story format: loading, includes, errors with file:line, the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import StoryError
from game.story import load_story
from game.story.loader import cache_dir


def write(tmp: Path, text: str, name: str = "story.yaml") -> Path:
    (tmp / name).write_text(text)
    return tmp


BASE = """id: t
title: T
start: a
locations: {here: {name: Here}}
scenes:
  a: {location: here, ending: done}
"""


def test_loads_with_includes(mini_path: Path) -> None:
    story = load_story(mini_path)
    assert {"meadow", "after", "creek_scene", "good_end", "bad_end"} <= set(story.model.scenes)
    assert story.model.items["kite"].tags == ("toy",)


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, BASE + "  b: {location: here\n")
    with pytest.raises(StoryError) as err:
        load_story(tmp_path)
    assert "YAML syntax error" in str(err.value)
    assert any(f"story.yaml:{n}:" in str(err.value) for n in (7, 8))


def test_schema_error_names_line_of_the_field(tmp_path: Path) -> None:
    write(tmp_path, BASE + "  b:\n    location: here\n    choices:\n      - {id: 1bad, text: x}\n")
    with pytest.raises(StoryError) as err:
        load_story(tmp_path)
    assert "story.yaml:10" in str(err.value) and "id" in str(err.value)


def test_bad_expression_names_its_line(tmp_path: Path) -> None:
    write(tmp_path, BASE + "  b:\n    location: here\n    on_enter: [\"system('rm')\"]\n    ending: x\n")
    with pytest.raises(StoryError) as err:
        load_story(tmp_path)
    assert "story.yaml:9" in str(err.value) and "unknown effect" in str(err.value)


def test_duplicate_key_and_duplicate_id_across_includes(tmp_path: Path) -> None:
    write(tmp_path, BASE + "include: [two.yaml]\n")
    write(tmp_path, "scenes:\n  a: {location: here, ending: again}\n", "two.yaml")
    with pytest.raises(StoryError) as err:
        load_story(tmp_path)
    assert "two.yaml:2" in str(err.value) and "duplicate id 'a'" in str(err.value)
    assert "story.yaml" in err.value.hint


def test_binary_and_missing_files_are_clear(tmp_path: Path) -> None:
    (tmp_path / "story.yaml").write_bytes(b"\x00\x01binary")
    with pytest.raises(StoryError, match="binary"):
        load_story(tmp_path)
    with pytest.raises(StoryError, match="no story here"):
        load_story(tmp_path / "nope")


def test_python_tags_are_refused(tmp_path: Path) -> None:
    write(tmp_path, BASE.replace("title: T", "title: !!python/object/apply:os.system ['true']"))
    with pytest.raises(StoryError, match="not allowed"):
        load_story(tmp_path)


def test_include_cannot_escape_the_folder(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    write(tmp_path / "s", BASE + "include: [../outside.yaml]\n")
    write(tmp_path, "scenes: {}\n", "outside.yaml")
    with pytest.raises(StoryError, match="outside the story folder"):
        load_story(tmp_path / "s")


def test_cache_is_used_and_invalidated_by_edits(tmp_path: Path) -> None:
    write(tmp_path, BASE)
    first = load_story(tmp_path)
    assert first.marked is not None
    assert list(cache_dir().glob("*.model.json"))
    second = load_story(tmp_path)
    assert second.marked is None and second.model == first.model
    write(tmp_path, BASE.replace("title: T", "title: Changed"))
    third = load_story(tmp_path)
    assert third.digest != first.digest and third.model.title == "Changed"


@pytest.mark.parametrize("name", ["zero_mark", "gullhaven", "eve"])
def test_a_story_from_the_cache_is_the_story_loaded(name: str, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(Path(__file__).resolve().parents[2] / "stories" / name, tmp_path / name)
    fresh = load_story(tmp_path / name, use_cache=False)
    load_story(tmp_path / name)  # fills the cache (its defaults left out)
    cached = load_story(tmp_path / name)
    assert cached.marked is None  # from the cache
    assert cached.model == fresh.model


def test_the_parsed_files_are_freed_without_the_cyclic_collector(mini_path: Path) -> None:
    import gc
    import weakref

    from game.story.loader import read_sources, story_file

    enabled = gc.isenabled()
    gc.disable()  # freed by reference counting alone: no cycle keeps them for a collection to scan
    try:
        _, order, parsed = read_sources(story_file(mini_path))
        refs = [weakref.ref(parsed[name]) for name in order]
        assert len(refs) > 1  # the story and its includes
        del parsed
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if enabled:
            gc.enable()


def test_cache_notices_an_edited_include(mini_path: Path, tmp_path: Path) -> None:
    import shutil

    shutil.copytree(mini_path, tmp_path / "s")
    first = load_story(tmp_path / "s")
    assert load_story(tmp_path / "s").marked is None  # cached
    chapter = tmp_path / "s" / "chapter2.yaml"
    chapter.write_text(chapter.read_text().replace("Afterwards.", "Much later."))
    again = load_story(tmp_path / "s")
    assert again.marked is not None and again.digest != first.digest
    assert again.model.scenes["after"].lines[0].text == "Much later."


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    write(tmp_path, BASE + "\n".join(f"bomb_{x}" for x in lines) + "\n")
    with pytest.raises(StoryError, match="alias bomb"):
        load_story(tmp_path)


def test_a_missing_include_is_reported_at_its_include_line(tmp_path: Path) -> None:
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "one.yaml").write_text("scenes:\n  b: {location: here, ending: e}\n")
    (tmp_path / "story.yaml").write_text("id: t\ntitle: T\nstart: a\ninclude:\n  - chapters/one.yaml\n"
                                         "  - chapters/two.yaml\nlocations: {here: {name: Here}}\n"
                                         "scenes:\n  a: {location: here, ending: e}\n")
    with pytest.raises(StoryError) as exc:
        load_story(tmp_path, use_cache=False)
    assert exc.value.where == f"{tmp_path / 'story.yaml'}:6:5"
    assert "include 'chapters/two.yaml': file not found" in exc.value.why
    assert str(tmp_path / "chapters" / "two.yaml") in exc.value.why
    # an include inside an include points at that file's line
    (tmp_path / "chapters" / "one.yaml").write_text("include: [gone.yaml]\nscenes:\n  b: {location: here, ending: e}\n")
    (tmp_path / "story.yaml").write_text("id: t\ntitle: T\nstart: a\ninclude: [chapters/one.yaml]\n"
                                         "locations: {here: {name: Here}}\nscenes:\n  a: {location: here, ending: e}\n")
    with pytest.raises(StoryError) as exc:
        load_story(tmp_path, use_cache=False)
    assert exc.value.where == f"{tmp_path / 'chapters' / 'one.yaml'}:1:11"
