"""A newer world server may announce capabilities this client does not know (wire-version skew).

The client must still connect and play, ignore the unknown fields, and say which ones it
ignored in :attr:`RemoteBackend.notice`; a capabilities object missing a required field or
with a mistyped one is still refused with a :class:`WireError`.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from game.errorbank.guard import GuardedBackend
from game.world import server as world_server
from game.world.backends.procedural import ProceduralBackend
from game.world.protocol import Capabilities, SessionStart
from game.world.wire import WireError, caps_from_json, caps_json, unknown_caps_fields
from tests.world.test_remote import TOKEN, H, W, client, play, requests, same, start_server

CAPS = Capabilities(backend="procedural", frames_per_block=4, fps=12.0, width=W, height=H)


def test_unknown_fields_are_ignored_and_named() -> None:
    data: dict[str, Any] = {**caps_json(CAPS), "depth_maps": True, "audio_voices": 3}
    assert caps_from_json(data) == CAPS
    assert unknown_caps_fields(data) == ("audio_voices", "depth_maps")
    assert unknown_caps_fields(caps_json(CAPS)) == ()


def test_missing_or_mistyped_fields_are_still_refused() -> None:
    data = asdict(CAPS)
    del data["fps"]
    with pytest.raises(WireError, match="capabilities"):
        caps_from_json(data)
    with pytest.raises(WireError, match="not an object"):
        caps_from_json(["procedural"])


def test_a_client_plays_with_a_newer_server_and_says_what_it_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    def newer_caps_json(caps: Capabilities) -> dict[str, Any]:
        return {**caps_json(caps), "depth_maps": True}

    monkeypatch.setattr(world_server, "caps_json", newer_caps_json)
    srv, _ = start_server(max_sessions=2)
    rb = client(srv.url)
    try:
        remote = play(rb, 3, requests())
        assert same(remote, play(ProceduralBackend(W, H), 3, requests()))
        assert "depth_maps" in rb.notice and "ignored" in rb.notice
        assert TOKEN not in rb.notice
    finally:
        rb.close()
        srv.stop()


def test_the_player_is_told_through_the_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    def newer_caps_json(caps: Capabilities) -> dict[str, Any]:
        return {**caps_json(caps), "depth_maps": True}

    monkeypatch.setattr(world_server, "caps_json", newer_caps_json)
    srv, _ = start_server(max_sessions=2)
    shown: list[str] = []
    guard = GuardedBackend(client(srv.url), reference_factory=None, on_notice=shown.append)
    try:
        guard.start(SessionStart("main", 4, "a meadow"))
        assert not guard.down and shown and "depth_maps" in shown[-1]
        assert len(list(guard.generate(requests(n=1)[0]))) >= 1
        assert shown.count(shown[-1]) == 1  # said once, not again at every block
    finally:
        guard.close()
        srv.stop()
