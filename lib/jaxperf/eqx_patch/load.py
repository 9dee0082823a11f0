"""The patched Equinox, built in this process from the installed Equinox's own source with
:data:`DIFF_PATH` applied, beside the shipped one.

Each Equinox module the diff changes (``equinox/_jit.py``, ``_vmap_pmap.py``, ``_errors.py``)
is compiled again from its installed source, patched, as a new module named
``equinox.<module>__jaxperf_patched``: inside the ``equinox`` package, so its relative imports
share every unchanged module (``Module``, ``Static``, the filters, the compile utilities), and
with its imports of the other changed modules pointed at their patched copies. Nothing of the
shipped Equinox is replaced: ``eqx.filter_jit`` and ``eqx.filter_pmap`` stay as shipped, and the
patched ones are timed beside them. ``EquinoxRuntimeError`` is the shipped class in both, so
``except eqx.EquinoxRuntimeError`` catches either's.

An error check has to come from the same Equinox as the ``filter_jit`` that is to wait for it:
inside a patched wrapper, use :func:`patched_error_if`, or enter
:func:`shipped_error_checks_routed`, which sends the shipped ``eqx.error_if`` through the patched
Equinox while it is active. A shipped check that is not routed is invisible to a patched
``filter_jit``, which then does not wait for it: on an asynchronous backend its failure surfaces
at the next synchronisation, as JAX's ``JaxRuntimeError`` (XLA:CPU runs a program with a host
callback before its call returns, so there it still raises inside the call).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import linecache
import re
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import private_api
from ..paths import PROJECT_ROOT
from . import diff

#: the Equinox release the diff was made against (its git tag is ``v<release>``)
PATCHED_RELEASE = "0.13.8"
#: the patch, a unified diff against Equinox's repository at that tag (source and tests)
DIFF_PATH = PROJECT_ROOT / "results" / "equinox_patch" / f"equinox-{PATCHED_RELEASE}.diff"
SUFFIX = "__jaxperf_patched"


@dataclass(frozen=True)
class PatchedEquinox:
    """What :func:`patched_equinox` built: the patched public functions and modules."""

    filter_jit: Callable[..., Any]
    filter_pmap: Callable[..., Any]
    error_if: Callable[..., Any]
    branched_error_if_impl_jit: Any  # what the patched eqx.error_if runs inside a trace
    modules: dict[str, types.ModuleType]  # "equinox._jit" -> its patched copy
    installed: str  # the installed Equinox's version
    diff_path: Path


def _source_root() -> Path:
    """The folder that holds the installed ``equinox`` package."""
    return Path(importlib.import_module("equinox").__file__ or "").resolve().parent.parent


def read_patch(path: Path = DIFF_PATH) -> list[diff.FilePatch]:
    """The file patches of the diff at ``path``. Raises FileNotFoundError saying where it was
    looked for (it is committed in the project's ``results/equinox_patch/``)."""
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"the Equinox patch is not at {path}: it is committed in the project's "
            "results/equinox_patch/ (run from a clone of the project)."
        )
    return diff.parse(Path(path).read_text())


def patched_sources(path: Path = DIFF_PATH) -> dict[str, str]:
    """Module name (``"equinox._jit"``) -> the installed source of that module with the diff at
    ``path`` applied, for each ``equinox/*.py`` file the diff changes (its ``tests/`` files
    are for a checkout of Equinox's repository). Raises ValueError naming the installed
    Equinox's version and the hunk that does not apply."""
    equinox = importlib.import_module("equinox")
    root = _source_root()
    sources = {}
    for patch in read_patch(path):
        if not (patch.path.startswith("equinox/") and patch.path.endswith(".py")):
            continue
        file = root / patch.path
        try:
            text = file.read_text()
            sources[patch.path[:-3].replace("/", ".")] = diff.apply(text, patch)
        except (OSError, diff.DoesNotApply) as err:
            raise ValueError(
                f"the Equinox patch {path.name} (made against Equinox {PATCHED_RELEASE}) does not "
                f"apply to the installed Equinox {equinox.__version__} ({file}): {err} "
                f"Install equinox=={PATCHED_RELEASE} to build the patched Equinox."
            ) from None
    return sources


def _point_imports_at_patched(source: str, patched: list[str]) -> str:
    """``source`` with its relative imports of the ``patched`` modules (``"_jit"``, ...) turned
    into imports of their patched copies."""
    for name in patched:
        source = re.sub(
            rf"^from \. import {name}$", f"from . import {name}{SUFFIX} as {name}", source, flags=re.M
        )
        source = re.sub(rf"^from \.{name} import ", f"from .{name}{SUFFIX} import ", source, flags=re.M)
    return source


def _load_order(sources: dict[str, str]) -> list[str]:
    """The patched modules ordered so that each comes after the patched modules it imports."""
    short = {name: name.rsplit(".", 1)[1] for name in sources}
    imports = {
        name: {
            other
            for other in sources
            if other != name
            and re.search(rf"^from \.(?: import {short[other]}$|{short[other]} import )", src, re.M)
        }
        for name, src in sources.items()
    }
    order: list[str] = []
    while len(order) < len(sources):
        ready = [name for name in sources if name not in order and imports[name] <= set(order)]
        if not ready:
            raise ValueError(
                f"the patched modules {sorted(set(sources) - set(order))} import each other in a cycle."
            )
        order += ready
    return order


def _load(name: str, source: str, filename: str) -> types.ModuleType:
    """``source`` executed as module ``<name>__jaxperf_patched`` of the ``equinox`` package."""
    module = types.ModuleType(name + SUFFIX)
    module.__package__ = "equinox"
    module.__file__ = filename
    # Tracebacks through the patched code show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), vars(module))  # noqa: S102
    except BaseException:
        del sys.modules[module.__name__]
        raise
    return module


@functools.cache
def patched_equinox() -> PatchedEquinox:
    """The patched Equinox (built once per process; see the module docstring). Raises
    ValueError naming the installed Equinox's version when the diff does not apply to it."""
    equinox = importlib.import_module("equinox")
    sources = patched_sources()
    short = [name.rsplit(".", 1)[1] for name in sources]
    root = _source_root()
    modules: dict[str, types.ModuleType] = {}
    for name in _load_order(sources):
        filename = f"{root / name.replace('.', '/')}.py (patched by jaxperf)"
        modules[name] = _load(name, _point_imports_at_patched(sources[name], short), filename)
    jit, errors = modules["equinox._jit"], modules["equinox._errors"]
    # One exception class for both Equinoxes: `except eqx.EquinoxRuntimeError` catches either.
    vars(jit)["EquinoxRuntimeError"] = equinox.EquinoxRuntimeError
    return PatchedEquinox(
        filter_jit=jit.filter_jit,
        filter_pmap=modules["equinox._vmap_pmap"].filter_pmap,
        error_if=errors.error_if,
        branched_error_if_impl_jit=errors.branched_error_if_impl_jit,
        modules=modules,
        installed=str(equinox.__version__),
        diff_path=DIFF_PATH,
    )


def patched_filter_jit(fun: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """``eqx.filter_jit(fun, **kwargs)`` as the patched Equinox builds it (a decorator too):
    the patched ``_JitWrapper`` itself, with nothing around its calls."""
    if fun is None:
        return functools.partial(patched_filter_jit, **kwargs)
    return patched_equinox().filter_jit(fun, **kwargs)


def patched_filter_pmap(fun: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """``eqx.filter_pmap(fun, **kwargs)`` as the patched Equinox builds it (a decorator too)."""
    if fun is None:
        return functools.partial(patched_filter_pmap, **kwargs)
    return patched_equinox().filter_pmap(fun, **kwargs)


def patched_error_if(x: Any, pred: Any, msg: str, **kwargs: Any) -> Any:
    """``eqx.error_if`` of the patched Equinox: a check that its ``filter_jit`` waits for."""
    return patched_equinox().error_if(x, pred, msg, **kwargs)


@contextlib.contextmanager
def shipped_error_checks_routed() -> Iterator[None]:
    """While active, the shipped ``eqx.error_if`` runs its check through the patched Equinox (as
    it would with the patch installed), so that a patched ``filter_jit`` sees it and reports its
    failure as Equinox does. Not thread-safe: it swaps one attribute of ``equinox._errors``."""
    _, errors_module = private_api.equinox_jit_modules()
    replacement = patched_equinox().branched_error_if_impl_jit
    with private_api.equinox_attributes_replaced(errors_module, {"branched_error_if_impl_jit": replacement}):
        yield
