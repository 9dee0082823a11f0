"""Is the optional ``triton`` extra (``pip install -e '.[triton]'``, about 1 GB) usable here, and for
which NVIDIA targets? :func:`status` says why not, never raising; :func:`require` raises
:class:`TritonUnavailableError` with that reason, so a study can record "not measured"."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cuda import TARGETS

INSTALL_HINT = "pip install -e '.[triton]' (or JAXPERF_EXTRAS=triton bash tools/setup_env.sh)"
NOT_INSTALLED = "not measured: triton extra not installed"


class TritonUnavailableError(RuntimeError):
    """The optional ``triton`` package (or its ptxas/cuobjdump) is not usable here."""


@dataclass(frozen=True)
class TritonStatus:
    """Whether the toolchain is usable: ``reason`` says why not ("" when it is)."""

    available: bool
    version: str | None
    reason: str
    ptxas: dict[str, str] = field(default_factory=dict)  # target -> ptxas path
    cuobjdump: str | None = None


def status() -> TritonStatus:
    """Whether the triton extra is usable, never raising (not cached: a test may hide the module)."""
    try:  # triton, and the pieces of it .compile uses
        triton: Any = importlib.import_module("triton")
        for name in ("triton._C.libtriton", "triton.backends.compiler", "triton.compiler.compiler"):
            importlib.import_module(name)
    except ImportError as err:
        return TritonStatus(False, None, f"{NOT_INSTALLED} ({err}); install with {INSTALL_HINT}")
    except Exception as err:  # a broken install is as absent as a missing one
        return TritonStatus(
            False, None, f"not measured: triton failed to import ({type(err).__name__}: {err})"
        )
    version = triton.__version__
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        from triton.knobs import nvidia

        ptxas = {name: get_ptxas(cap).path for name, (cap, _) in TARGETS.items()}
        cuobjdump = nvidia.cuobjdump.path
    except Exception as err:
        return TritonStatus(
            False, version, f"not measured: triton {version} has no usable ptxas/cuobjdump ({err})"
        )
    missing = [p for p in [*ptxas.values(), cuobjdump] if not p or not Path(p).exists()]
    if missing:
        return TritonStatus(False, version, f"not measured: triton {version} lacks {missing}")
    return TritonStatus(True, version, "", ptxas, cuobjdump)


def require() -> TritonStatus:
    """The status, or :class:`TritonUnavailableError` carrying the reason."""
    st = status()
    if not st.available:
        raise TritonUnavailableError(st.reason)
    return st
