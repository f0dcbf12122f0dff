"""World replicas of ``serve --engine ray`` handing a session over, without Ray: two replicas, one book.

The book is :class:`SnapshotBook` behind the same ``.method.remote(...)`` calls the Ray
actor answers, so this is the replica code the cluster runs, minus the cluster.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from game.world.backends import make_backend
from game.world.journal import SnapshotBook
from game.world.protocol import Entity, Scene, SessionStart, WorldRequest
from game.world.ray_world import CLOSE_GONE, WorldReplica
from game.world.server import CLOSE_REPLACED
from game.world.wire import WIRE_VERSION, loads, request_json, session_start_json

W, H = 64, 36
KEY = "handoff-key-0001"
SCENE = Scene("meadow", entities=(Entity("creature", "character", "the creature", x=0.6),))
SETTINGS = {"backend": "procedural", "backend_kwargs": {"width": W, "height": H},
            "config": {"token": "t" * 40, "max_sessions": 4, "grace_s": 30.0}, "app_name": "t"}


class _Call:
    def __init__(self, book: SnapshotBook, name: str) -> None:
        self.book, self.name = book, name

    async def remote(self, *args: Any) -> Any:
        return getattr(self.book, self.name)(*args)


class ActorLike:
    """A :class:`SnapshotBook` answering ``book.method.remote(...)`` like its Ray actor."""

    def __init__(self) -> None:
        self.book = SnapshotBook()

    def __getattr__(self, name: str) -> _Call:
        return _Call(self.book, name)


def plain(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(data))
    return out


def request(seq: int) -> WorldRequest:
    return WorldRequest("s", seq, 48, f"a meadow at dusk {seq}", switch_mode="plain", scene=SCENE,
                        actions=("d",) * 12)


def block(reply: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    text, payload = reply["out"]
    return loads(text), payload


def test_a_block_made_by_a_replica_that_died_is_made_again_by_the_next() -> None:
    async def run() -> None:
        book = ActorLike()
        a = WorldReplica(SETTINGS, book=book, tag="A")
        b = WorldReplica(SETTINGS, book=book, tag="B")
        hello = {"op": "hello", "v": WIRE_VERSION, "client": KEY, "size": [W, H], "encoding": "raw"}
        said = loads((await a.hello("c1", KEY, hello))["out"][0])
        assert said["op"] == "hello" and said["resumed"] is False and said["encoding"] == "raw"
        start = plain(session_start_json(SessionStart("s", 7, "a meadow")))
        assert (await a.message("c1", KEY, {"op": "start", "start": start}))["out"] == ['{"op":"started"}']
        gen = {"op": "generate", "request": plain(request_json(request(1))), "from_block": 0}
        head0, _ = block(await a.message("c1", KEY, gen))
        assert (head0["seq"], head0["block"]) == (1, 0)
        head1, made_by_a = block(await a.message("c1", KEY, {"op": "next", "seq": 1, "block": 1}))
        # A dies before its answer reaches the gateway: the gateway asks B for block 1 again
        again, made_by_b = block(await b.message("c1", KEY, {"op": "next", "seq": 1, "block": 1}))
        assert (again["seq"], again["block"]) == (1, 1) and made_by_b == made_by_a
        head2, third = block(await b.message("c1", KEY, {"op": "next", "seq": 1, "block": 2}))
        ref = make_backend("procedural", width=W, height=H)
        ref.start(SessionStart("s", 7, "a meadow"))
        blocks = [c.frames.tobytes() for c in ref.generate(request(1))]
        assert made_by_a[: len(blocks[1])] == blocks[1] and third[: len(blocks[2])] == blocks[2]
        assert (await b.whoami())["rebuilt"] == 1 and book.book.held() == {KEY: "B"}
        # the stale copy on A cannot answer for the session without claiming it back (and rebuilding)
        assert (await a.whoami())["rebuilt"] == 0
        replaced = await b.message("c0", KEY, {"op": "next", "seq": 1, "block": 3})
        assert replaced["out"][0][0] == CLOSE_REPLACED  # an older connection of the same client
        gone = await b.message("c1", "never-opened-0001", {"op": "next", "seq": 1, "block": 0})
        assert gone["out"][0][0] == CLOSE_GONE
        closed = await b.message("c1", KEY, {"op": "close"})
        assert closed["out"][-1][0] == 1000 and book.book.held() == {}

    asyncio.run(run())


def test_a_session_whose_client_vanished_leaves_the_replica_and_the_book_after_its_grace() -> None:
    async def run() -> None:
        book = ActorLike()
        settings = {**SETTINGS, "config": {**SETTINGS["config"], "grace_s": 0.05}}
        a = WorldReplica(settings, book=book, tag="A")
        hello = {"op": "hello", "v": WIRE_VERSION, "client": KEY, "size": [W, H], "encoding": "raw"}
        await a.hello("c1", KEY, hello)
        assert book.book.held() == {KEY: "A"}
        await a.detach("c0", KEY)  # not its connection: nothing happens
        await asyncio.sleep(0.3)
        assert (await a.whoami())["sessions"] == [KEY]
        await a.detach("c1", KEY)
        for _ in range(100):  # the reaper runs every grace / 4 (at least 50 ms); bounded wait
            if not book.book.held():
                break
            await asyncio.sleep(0.05)
        assert book.book.held() == {} and (await a.whoami())["sessions"] == []

    asyncio.run(run())
