"""Is the optional ``triton`` toolchain here, and for which NVIDIA targets?

The ``triton`` package is an optional extra (``pip install -e '.[triton]'``,
about 1 GB): :func:`status` says whether it is usable and why not, never
raising; :func:`require` raises :class:`TritonUnavailableError` carrying that
reason, so a study can record "not measured" and carry on.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import check_choice

# Target name -> (compute capability, a device kind JAX's Pallas lowering maps
# to that capability). sm_86 is the reporter's RTX A6000 generation (JAX knows
# the A10, same sm_86); sm_90 is an H100.
TARGETS: dict[str, tuple[int, str]] = {
    "sm_90": (90, "NVIDIA H100 80GB HBM3"),
    "sm_86": (86, "NVIDIA A10"),
    "sm_80": (80, "NVIDIA A100-SXM4-80GB"),
}
DEFAULT_TARGET = "sm_90"
REPORTER_TARGET = "sm_86"  # jax#20909 ran on an RTX A6000
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

    def describe(self) -> str:
        if not self.available:
            return self.reason
        from ..paths import scrub  # name the tools inside site-packages, not this machine's folders

        tools = ", ".join(sorted(set(self.ptxas.values())))
        return scrub(f"triton {self.version} (ptxas: {tools}; cuobjdump: {self.cuobjdump})")


def _import_triton() -> Any:
    """Import triton and the pieces of it :mod:`jaxperf.triton.compile` uses."""
    triton = importlib.import_module("triton")
    for name in ("triton._C.libtriton", "triton.backends.compiler", "triton.compiler.compiler"):
        importlib.import_module(name)
    return triton


def status() -> TritonStatus:
    """Whether the triton extra is usable, never raising.

    Not cached, so a test can simulate absence by hiding the module.
    """
    try:
        triton = _import_triton()
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


def check_target(target: str) -> int:
    """The compute capability for ``target``; ValueError naming what is allowed."""
    check_choice("target", target, TARGETS)
    return TARGETS[target][0]


def label(target: str = DEFAULT_TARGET) -> str:
    """The words every number of this study carries: where it was compiled, and that nothing ran."""
    return f"compiled for {target} on a CPU, not executed"
