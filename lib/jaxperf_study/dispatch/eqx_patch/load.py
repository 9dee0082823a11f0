"""The patched Equinox, built in this process from the installed Equinox's own source with the
diffs of :data:`DIFF_PATHS` applied in order, beside the shipped one.

Each Equinox module the diffs change (``equinox/_jit.py``, ``equinox/_vmap_pmap.py``; neither
imports the other) is compiled again from its installed source, patched, as a new module named
``equinox.<module>__jaxperf_patched``: inside the ``equinox`` package, so its relative imports
share every unchanged module (``Module``, ``Static``, the filters, the compile utilities,
``clear_caches``). Nothing of the shipped Equinox is replaced: ``eqx.filter_jit`` and
``eqx.filter_pmap`` stay as shipped, and the patched ones are timed beside them.
``EquinoxRuntimeError`` is the shipped class in both, so ``except eqx.EquinoxRuntimeError``
catches either's (a shipped ``eqx.error_if`` failing under the patched ``filter_jit``: see
:func:`shipped_error_checks_routed`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import linecache
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jaxperf import private_api
from jaxperf.paths import PROJECT_ROOT

from ... import private_hooks
from . import diff

#: the Equinox release the project pins; the diffs apply to it and to Equinox's main
PATCHED_RELEASE = "0.13.8"
#: Equinox's main when the diffs were made (``git format-patch`` of one commit each, both on it)
EQUINOX_MAIN = "9336d820b2ef66b360fc6cb3611b3da5cefbb14d"
PATCH_DIR = PROJECT_ROOT / "results" / "equinox_patch"
#: the two diffs, each a commit on Equinox's main that applies alone (they change different files):
#: filter_pmap working with leaves (equinox/_vmap_pmap.py), filter_jit's wait (equinox/_jit.py)
DIFF_PATHS = (
    PATCH_DIR / "1-filter-pmap-leaves-not-pytrees.diff",
    PATCH_DIR / "2-filter-jit-wait-only-on-error-checks.diff",
)
SUFFIX = "__jaxperf_patched"


@dataclass(frozen=True)
class PatchedEquinox:
    """What :func:`patched_equinox` built: the patched public functions and modules."""

    filter_jit: Callable[..., Any]
    filter_pmap: Callable[..., Any]
    modules: dict[str, types.ModuleType]  # "equinox._jit" -> its patched copy
    installed: str  # the installed Equinox's version


def _source_root() -> Path:
    """The folder that holds the installed ``equinox`` package."""
    return Path(importlib.import_module("equinox").__file__ or "").resolve().parent.parent


def read_patch(path: Path) -> list[diff.FilePatch]:
    """The file patches of the diff at ``path``. Raises FileNotFoundError saying where it was
    looked for (the diffs are committed in the project's ``results/equinox_patch/``)."""
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"the Equinox patch is not at {path}: it is committed in the project's "
            "results/equinox_patch/ (run from a clone of the project)."
        )
    return diff.parse(Path(path).read_text())


def apply_all(
    read: Callable[[str], str], paths: tuple[Path, ...] = DIFF_PATHS, under: str = ""
) -> dict[str, str]:
    """File path (``"equinox/_jit.py"``) -> its text with every diff of ``paths`` applied in
    order, for each file under ``under`` that they change; ``read(path)`` gives a file's
    unpatched text. Raises :class:`diff.DoesNotApply` naming the diff and the hunk."""
    texts: dict[str, str] = {}
    for path in paths:
        for patch in read_patch(path):
            if patch.path.startswith(under):
                try:
                    texts[patch.path] = diff.apply(texts.get(patch.path) or read(patch.path), patch)
                except diff.DoesNotApply as err:
                    raise diff.DoesNotApply(f"{Path(path).name}: {err}") from None
    return texts


def patched_sources(paths: tuple[Path, ...] = DIFF_PATHS) -> dict[str, str]:
    """Module name (``"equinox._jit"``) -> the installed source of that module with the diffs at
    ``paths`` applied, for each ``equinox/*.py`` file they change (their ``tests/`` files are
    for a checkout of Equinox's repository). Raises ValueError naming the installed Equinox's
    version and the hunk that does not apply."""
    equinox = importlib.import_module("equinox")
    root = _source_root()
    try:
        texts = apply_all(lambda p: (root / p).read_text(), paths, under="equinox/")
    except (OSError, diff.DoesNotApply) as err:
        raise ValueError(
            f"the Equinox patch (made against Equinox's main {EQUINOX_MAIN[:12]}, applies to "
            f"{PATCHED_RELEASE}) does not apply to the installed Equinox {equinox.__version__}: {err} "
            f"Install equinox=={PATCHED_RELEASE} to build the patched Equinox."
        ) from None
    return {path[:-3].replace("/", "."): text for path, text in texts.items() if path.endswith(".py")}


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
    ValueError naming the installed Equinox's version when the diffs do not apply to it."""
    equinox = importlib.import_module("equinox")
    root = _source_root()
    modules = {
        name: _load(name, source, f"{root / name.replace('.', '/')}.py (patched by jaxperf)")
        for name, source in patched_sources().items()
    }
    jit = modules["equinox._jit"]
    # One exception class for both Equinoxes: `except eqx.EquinoxRuntimeError` catches either.
    vars(jit)["EquinoxRuntimeError"] = equinox.EquinoxRuntimeError
    return PatchedEquinox(
        filter_jit=jit.filter_jit,
        filter_pmap=modules["equinox._vmap_pmap"].filter_pmap,
        modules=modules,
        installed=str(equinox.__version__),
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


@contextlib.contextmanager
def shipped_error_checks_routed() -> Iterator[None]:
    """While active, a failing shipped ``eqx.error_if`` leaves its message where the patched
    ``filter_jit`` looks for it (as it would with the patch installed), so that it raises
    Equinox's readable ``EquinoxRuntimeError``. Not thread-safe: it swaps one attribute of
    ``equinox._errors``."""
    _, errors_module = private_hooks.equinox_jit_modules()
    patched_jit = patched_equinox().modules["equinox._jit"]
    with private_api.equinox_attributes_replaced(errors_module, {"_jit": patched_jit}):
        yield
