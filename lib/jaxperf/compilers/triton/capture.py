"""Capture the Triton module Pallas builds for a kernel, on a CPU-only machine: :func:`capture`
exports the kernel for CUDA (:func:`jaxperf.compilers.cuda.cuda_export`) and keeps the module as
``.ttir`` text with the launch settings (``num_warps``, ``num_stages``, grid) of the custom call."""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...private_api import triton_lowering_hook
from ..cuda import DEFAULT_TARGET, TARGETS, check_target, cuda_export, raise_site


class DoesNotLower(NotImplementedError):
    """Pallas' Triton lowering rejected the kernel (e.g. ``fori_loop(unroll>1)``); ``where`` names the
    lowering function that raised (JAX raises a bare ``NotImplementedError`` for some)."""

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
    """The Triton module Pallas builds for ``fn(*args)`` (one Triton ``pallas_call``), exported for
    CUDA without a GPU, JAX's caches cleared first so tracing and lowering really run and are timed.
    :class:`DoesNotLower` when the lowering raises NotImplementedError; ValueError for a bad target
    or other than one Triton kernel."""
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
