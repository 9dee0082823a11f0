"""Lower the Mosaic GPU port for CUDA on this CPU (no GPU, no plugin): does it lower, and how big is it?

:func:`lower` exports the port (:mod:`jaxperf.jax20909.mosaic_gpu_kernel`) for CUDA inside
an abstract H100 mesh (:func:`jaxperf.compilers.lowering.export_variant`) and keeps the
Mosaic GPU module Pallas built (its lines and loops). Mosaic GPU's own refusals are the
result (``check_unroll=False`` by default, so that its unroll rule speaks for itself), each
recorded with its type and message; nothing raises for a lowering failure.
"""

from __future__ import annotations

import collections
import time
import traceback
from pathlib import Path
from typing import Any

from ...jax20909 import mosaic_gpu_kernel
from ..lowering import capture_kernel_ir, error_text, export_variant
from . import ir


def lower(
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int = 64,
    batch: int = 4,
    dtype: str = "float16",
    carry_dtype: str = "float32",
    check_unroll: bool = False,
) -> dict[str, Any]:
    """One row: ``lowers``, ``error_type``, ``error``, ``lower_s``, ``ir_lines``, ``loop_ops``, ``loop_carries``.

    Bad arguments (a form, dtype or T the port does not take) raise ValueError before anything
    is traced; so does a non-dividing unroll with ``check_unroll=True``.
    """
    fn, args = mosaic_gpu_kernel.build(
        loop_form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        carry_dtype=carry_dtype,
        check_unroll=check_unroll,
    )
    row: dict[str, Any] = dict(loop_form=loop_form, unroll=unroll, T=T, compiler="mosaic_gpu")
    started = time.perf_counter()
    with capture_kernel_ir("mosaic_gpu") as captured:
        try:
            export_variant(fn, args, "mosaic_gpu")
        except Exception as err:  # noqa: BLE001 - the error is the result
            return row | dict(
                lowers=False,
                error_type=type(err).__name__,
                error=error_text(err),
                error_site=recursion_site(err) if isinstance(err, RecursionError) else "",
                lower_s=time.perf_counter() - started,
                ir_lines=0,
                loop_ops=0,
                loop_carries="",
            )
    module = captured[-1] if captured else ""
    carries = ir.carried(module)
    return row | dict(
        lowers=True,
        error_type="",
        error="",
        error_site="",
        lower_s=time.perf_counter() - started,
        ir_lines=module.count("\n") + 1,
        loop_ops=ir.mosaic_counts(module)[2],
        loop_carries="; ".join(carries),
    )


def recursion_site(err: BaseException) -> str:
    """Where a RecursionError recursed: the function that fills most of the traceback (file,
    function, how many frames) and the frame that entered it, for a bug report."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    where = collections.Counter((Path(f.filename).name, f.name) for f in frames)
    (file, name), count = where.most_common(1)[0]
    first = next((f for f in frames if (Path(f.filename).name, f.name) == (file, name)), None)
    entered = next((frames[i - 1] for i, f in enumerate(frames) if f is first and i), None)
    via = f", entered from {Path(entered.filename).name}:{entered.name}" if entered else ""
    return f"{file}:{name} ({count} of {len(frames)} frames{via})"
