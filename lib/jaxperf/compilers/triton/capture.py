"""Capture the Triton module Pallas builds for a kernel, on a CPU-only machine.

:func:`capture` exports a Pallas kernel for CUDA (an abstract NVIDIA device
of the target's generation stands in for the hardware) and keeps the Triton
module that Pallas' Triton lowering produced, as text ``.ttir``, with the
launch settings (``num_warps``, ``num_stages``, grid) from the custom call.
The CUDA export itself is :func:`jaxperf.compilers.cuda.cuda_export`.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...private_api import triton_lowering_hook
from ..cuda import cuda_export, raise_site
from .toolchain import DEFAULT_TARGET, TARGETS, check_target


class DoesNotLower(NotImplementedError):
    """Pallas' Triton lowering rejected the kernel (e.g. ``fori_loop(unroll>1)``).

    ``where`` names the lowering function that raised, because JAX raises a
    bare ``NotImplementedError`` for some of these.
    """

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


@dataclass(frozen=True)
class CapturedModule:
    """One kernel's Triton module and how JAX would launch it."""

    ttir: str  # the Triton module as text (MLIR assembly)
    num_warps: int
    num_stages: int
    grid: tuple[int, int, int]
    export_ms: float  # jax.export end to end: trace, Pallas->Triton, StableHLO

    @property
    def programs(self) -> int:
        """Kernel programs (CTAs) per call: the product of the grid."""
        return self.grid[0] * self.grid[1] * self.grid[2]


def capture(fn: Callable[..., Any], args: Sequence[Any], *, target: str = DEFAULT_TARGET) -> CapturedModule:
    """Export ``fn(*args)`` (which holds one Triton ``pallas_call``) for CUDA and
    return the Triton module Pallas built for it.

    Works without a GPU. ``args`` may be arrays or ``jax.ShapeDtypeStruct``.
    JAX's caches are cleared first so that tracing and lowering really run and
    are timed. Raises :class:`DoesNotLower` when the
    lowering rejects the kernel with NotImplementedError; ValueError for a bad
    target or when ``fn`` holds other than one Triton kernel.
    """
    import jax

    check_target(target)
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    jax.clear_caches()
    sink: list[str] = []

    def record(result: Any) -> None:
        sink.append(result.module.operation.get_asm(enable_debug_info=False))

    start = time.perf_counter()
    try:
        with (
            triton_lowering_hook(record),
            cuda_export(TARGETS[target][1]) as export,
            warnings.catch_warnings(),
        ):
            # "The Pallas Triton backend is deprecated": known, said once in the notebook.
            warnings.filterwarnings("ignore", message=".*Pallas Triton backend is deprecated.*")
            exported = export(jax.jit(fn))(*specs)
    except NotImplementedError as err:
        frame = raise_site(err)
        where = f"{Path(frame.filename).name}:{frame.name}" if frame else ""
        raise DoesNotLower(
            f"Pallas' Triton lowering raised NotImplementedError({str(err)!r}) in {where}", where
        ) from err
    export_ms = (time.perf_counter() - start) * 1e3
    if len(sink) != 1:
        raise ValueError(
            f"fn={fn!r} is not allowed: expected exactly one Triton pallas_call, found {len(sink)}."
        )
    text = exported.mlir_module()
    config = dict(re.findall(r"\b(grid_[xyz]|num_warps|num_stages) = (\d+) : i32", text))
    grid = (int(config.get("grid_x", 1)), int(config.get("grid_y", 1)), int(config.get("grid_z", 1)))
    return CapturedModule(
        ttir=sink[0],
        num_warps=int(config.get("num_warps", 4)),
        num_stages=int(config.get("num_stages", 3)),
        grid=grid,
        export_ms=export_ms,
    )
