"""A package's names bound on first use (PEP 562 module ``__getattr__``): ``from game.story import
Story`` works as ever, but importing one light module of the package (``game.story.diagnostics``,
``game.errorbank.clock``) does not run the package's heavy imports for a caller that never reads them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) whose names ``homes``
    maps each to the module it comes from: a name is imported from its module when first read, then
    kept in the package (read again without a call).

    Use at the package's top level: ``__getattr__, __dir__ = lazy_names(__name__, HOMES)``.

    The ``__getattr__`` raises:
        AttributeError: a name not in ``homes`` (``from package import submodule`` then imports
            the submodule, as Python's import does for any attribute a package lacks).
    """

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return getattr_, dir_
