"""Re-exports that load on first use (PEP 562), so that importing a study's package (and its
``settings`` module, which the options check builds with the standard library only, before any
environment exists) imports no JAX, NumPy or pandas. Standard library only."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, names: Mapping[str, tuple[str, str | None]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each public name to
    ``(module, attribute)``, the module relative to ``package``; attribute None: the module itself."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = names[name]
        value = importlib.import_module(module, package)
        if attribute is not None:
            value = getattr(value, attribute)
        vars(importlib.import_module(package))[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(names))

    return __getattr__, __dir__
