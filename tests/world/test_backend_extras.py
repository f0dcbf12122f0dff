"""A world backend chosen without its optional packages says which extra to install."""

from __future__ import annotations

import sys

import pytest

from game.errors import BackendError
from game.world.backends import make_backend

#: Modules that import diffusers when loaded (forgotten for the test so they load again).
NEEDS_DIFFUSERS = ("game.world.backends.causal", "game.world.backends.action", "game.models.causal_loader",
                   "game.models.action_module")


@pytest.mark.parametrize("name", ["causal", "action"])
def test_a_block_causal_backend_without_diffusers_names_the_extra(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)  # importing it raises ImportError
    for module in NEEDS_DIFFUSERS:
        monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(BackendError) as err:
        make_backend(name, model="/nowhere")
    assert f"the {name} backend needs torch and diffusers" in str(err.value)
    assert err.value.hint == "pip install 'worldloom[diffusion]'"
