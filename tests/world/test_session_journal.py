"""The session journal behind the Ray Serve hand-off: a backend rebuilt from its calls is the same session.

No Ray here: the journal, the rebuild and the snapshot book are plain Python.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from game.errors import BackendError
from game.world.backends import make_backend
from game.world.journal import JournaledBackend, SnapshotBook, compact, rebuild
from game.world.protocol import Backend, Entity, MemoryOp, Scene, SessionStart, WorldRequest

W, H = 64, 36
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))


def fresh() -> Backend:
    return make_backend("procedural", width=W, height=H)


def request(seq: int) -> WorldRequest:
    return WorldRequest("s", seq, 36, f"a meadow at dusk {seq}", switch_mode="plain", scene=SCENE,
                        actions=("d",) * 12 if seq % 2 else ("w",) * 6)


def test_a_rebuilt_session_goes_on_with_the_same_frames() -> None:
    """Journal a session mid-request (a snapshot and a fork in it), rebuild it elsewhere: the next
    blocks, and the next request, are byte-identical to the original's."""
    jb = JournaledBackend(fresh())
    jb.start(SessionStart("s", 7, "a meadow"))
    for c in jb.generate(request(1)):
        assert c.frames.shape[1:] == (H, W, 3)
    snap = jb.memory(MemoryOp(op="snapshot"))
    assert snap.ok
    it = iter(jb.generate(request(2)))
    next(it)  # one block of request 2 taken: the hand-off happens here
    entries: list[dict[str, object]] = []
    compact(entries, jb.journal.take())
    assert [e["k"] for e in entries] == ["start", "gen", "memory", "gen"]
    assert entries[1]["pulls"] == 4 and entries[3]["pulls"] == 1 and entries[3]["closed"] is False

    copy = rebuild(fresh, entries)
    moved = copy.open[1]  # request 2's blocks, journaled again
    rest_a = [c.frames.tobytes() for c in it]
    rest_b = [c.frames.tobytes() for c in moved]
    assert rest_a and rest_a == rest_b
    third_a = [c.frames.tobytes() for c in jb.generate(request(3))]
    third_b = [c.frames.tobytes() for c in copy.backend.generate(request(3))]
    assert third_a == third_b
    assert copy.backend.memory(MemoryOp(op="restore", handle=snap.handle)).ok  # the snapshot came along
    assert copy.backend.journal.pending[0] == ["next", 1]  # the rebuilt backend journals on


def test_the_book_lets_only_the_holder_write() -> None:
    book = SnapshotBook()
    assert book.claim("key-0001", "A", -1) is None  # no such session
    epoch = book.create("key-0001", "A", {"width": W, "height": H})
    assert book.claim("key-0001", "A", epoch) == {"held": True}
    assert book.append("key-0001", "A", epoch, [["gen", 0, {"seq": 1}], ["next", 0]], {"cur": [1, "fp", 1, 0]})
    took = book.claim("key-0001", "B", -1)  # A died: B takes the session over
    assert took is not None and not took["held"] and took["epoch"] == epoch + 1
    assert took["entries"] == [{"k": "gen", "gen": 0, "request": {"seq": 1}, "pulls": 1, "closed": False}]
    assert took["meta"] == {"cur": [1, "fp", 1, 0]} and took["options"] == {"width": W, "height": H}
    assert not book.append("key-0001", "A", epoch, [["next", 0]], {})  # A's stale copy cannot write
    assert book.append("key-0001", "B", took["epoch"], [["next", 0]], {})
    book.drop("key-0001", "A")  # only the holder ends a session
    assert book.held() == {"key-0001": "B"}
    book.drop("key-0001", "B")
    assert book.held() == {}


def test_the_book_folder_outlives_the_book(tmp_path: Path) -> None:
    book = SnapshotBook(str(tmp_path))
    epoch = book.create("key-0002", "A", {})
    book.append("key-0002", "A", epoch, [["start", {"session_id": "s"}], ["gen", 0, {"seq": 1}], ["next", 0]],
                {"started": True})
    with open(tmp_path / "key-0002.jsonl", "a", encoding="utf-8") as f:
        f.write('{"events": [["next", 0]')  # a line cut by a crash mid-write
    again = SnapshotBook(str(tmp_path)).claim("key-0002", "B", -1)
    assert again is not None and again["meta"] == {"started": True}
    assert [e["k"] for e in again["entries"]] == ["start", "gen"] and again["entries"][1]["pulls"] == 1
    assert SnapshotBook(str(tmp_path)).claim("../etc", "B", -1) is None  # keys never leave the folder


def test_a_malformed_journal_is_a_named_error() -> None:
    with pytest.raises(BackendError, match="never started"):
        compact([], [["next", 3]])
    with pytest.raises(BackendError, match="unknown event"):
        compact([], [["eval", "1+1"]])
    with pytest.raises(BackendError, match="unknown entry"):
        rebuild(fresh, [{"k": "shell"}])
