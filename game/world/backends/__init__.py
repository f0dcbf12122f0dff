"""World backends by name.

``make_backend("procedural")`` gives the embedded default backend; ``null``
draws flat frames for tests, replays and the explorer; other backends register a
factory in :data:`BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from game.errors import BackendError
from game.world.backends.null import NullBackend
from game.world.protocol import Backend


def _procedural(**kw: Any) -> Backend:
    """The embedded procedural painter (the default); imported when chosen, so a start on another
    backend (``null`` for tests, replays and the explorer) skips its painters (start-up cost only)."""
    from game.world.backends.procedural import ProceduralBackend

    return ProceduralBackend(**kw)


def _drifting(**kw: Any) -> Backend:
    """The drifting *simulation* (imitates autoregressive error accumulation)."""
    from game.world.backends.drifting import DriftingBackend

    return DriftingBackend(**kw)


def _diffusion(**kw: Any) -> Backend:
    """SkyReels-V2 diffusion forcing; torch and diffusers are imported only when chosen."""
    from game.world.backends.diffusion import DiffusionBackend

    return DiffusionBackend(**kw)


def _lacks_diffusion(name: str, exc: ImportError) -> BackendError:
    """The error for a backend chosen without the ``diffusion`` extra (torch, diffusers) installed."""
    return BackendError(f"the {name} backend needs torch and diffusers: {exc}",
                        hint="pip install 'worldloom[diffusion]'")


def _causal(**kw: Any) -> Backend:
    """Block-causal text-to-video with a KV cache (Self-Forcing / LongLive family, Wan); torch and
    diffusers are imported only when chosen."""
    try:
        from game.world.backends.causal import CausalBackend
    except ImportError as exc:
        raise _lacks_diffusion("causal", exc) from exc
    return CausalBackend(**kw)


def _action(**kw: Any) -> Backend:
    """Matrix-Game 2.0 style keyboard + mouse world model (block-causal, KV cache, Wan); torch and
    diffusers are imported only when chosen."""
    try:
        from game.world.backends.action import ActionBackend
    except ImportError as exc:
        raise _lacks_diffusion("action", exc) from exc
    return ActionBackend(**kw)


def _remote(**kw: Any) -> Backend:
    """A backend served by ``worldloom serve``; websockets is imported only when chosen."""
    from game.world.backends.remote import RemoteBackend

    return RemoteBackend(**kw)


#: Backend name -> factory taking keyword arguments.
BACKENDS: dict[str, Callable[..., Backend]] = {
    "procedural": _procedural,
    "null": NullBackend,
    "drifting": _drifting,
    "diffusion": _diffusion,
    "causal": _causal,
    "action": _action,
    "remote": _remote,
}


def make_backend(name: str, **kwargs: Any) -> Backend:
    """Build the backend registered as ``name`` with ``kwargs``.

    Raises:
        BackendError: no backend has that name (the message lists the known ones); ``causal`` or
            ``action`` chosen without torch and diffusers (the hint names the extra).
    """
    factory = BACKENDS.get(name)
    if factory is None:
        known = ", ".join(sorted(BACKENDS))
        raise BackendError(f"unknown world backend {name!r}", hint=f"known backends: {known}")
    backend: Backend = factory(**kwargs)
    return backend
