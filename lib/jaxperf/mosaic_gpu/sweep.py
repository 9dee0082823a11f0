"""Notebook 09's three sweeps of the Mosaic GPU port: interpret, lower, compile.

- :func:`interpret_check`: the port in Mosaic GPU's interpreter on this CPU against the
  float64 reference (proves the arithmetic; interpreter seconds, never GPU speed);
- :func:`lowering`: every loop form and unroll exported for CUDA at every T (no GPU, no
  plugin), each refusal recorded with Mosaic GPU's own error;
- :func:`compile_sweep`: the compile forms compiled for sm_90a in the compile environment,
  timed, dumped and counted (the static estimate per kernel call).

Honesty rules as in the other studies: a point that fails is recorded with its error, a point
past a budget "over budget" with the reason, nothing dropped; nothing runs on a GPU.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..compilers.mosaic_gpu import compile as mgpu_compile
from ..compilers.mosaic_gpu import ir as mgpu_ir
from ..compilers.mosaic_gpu import lower as mgpu_lower
from ..jax20909 import inputs, mosaic_gpu_kernel, reference, vocab
from .settings import MosaicGpuSettings

OK, FAILED, OVER_BUDGET = "ok", "failed", "over budget"
PYTHON_GROWTH = 1.3  # the Python loop's lowering grows about as T^1.3 here (layout inference)


def _row(form: str, unroll: int, T: int) -> dict[str, Any]:
    return dict(loop_form=form, unroll=unroll, variant=vocab.variant_name(form, unroll), T=T)


def interpret_check(
    s: MosaicGpuSettings, *, progress: Any = None, clock: Callable[[], float] = time.perf_counter
) -> pd.DataFrame:
    """One row per (variant, T): ``status`` ok when the interpreted output matches the float64
    reference (``error_vs_tolerance`` <= 1), else the error; ``interpret_s`` for the call."""
    started, rows = clock(), []
    for T in sorted(s.interpret_Ts):
        for form, unroll in s.interpret_plan():
            row = _row(form, unroll, T) | {"batch": s.interpret_batch}
            spent = clock() - started
            if spent > s.interpret_budget_s:
                rows.append(row | dict(status=OVER_BUDGET, error=f"spent {spent:.0f} s > interpret_budget_s"))
            else:
                rows.append(row | _interpret_one(s, form, unroll, T))
            if progress is not None:
                progress.update(1)
    return pd.DataFrame(rows)


def _interpret_one(s: MosaicGpuSettings, form: str, unroll: int, T: int) -> dict[str, Any]:
    import jax

    fn, _ = mosaic_gpu_kernel.build(
        form,
        unroll,
        T=T,
        D=s.D,
        batch=s.interpret_batch,
        dtype=s.dtype,
        interpret=True,
        carry_dtype=s.carry_dtype,
    )
    arrays = inputs.make_inputs("seed", 0, T=T, D=s.D, batch=s.interpret_batch, dtype=s.dtype)
    start = time.perf_counter()
    try:
        out = np.asarray(jax.block_until_ready(fn(*arrays)))
        worst = reference.check_close("seed", out, tuple(np.asarray(a) for a in arrays))
    except Exception as err:  # noqa: BLE001 - a wrong or failing variant is the result
        return dict(status=FAILED, error=f"{type(err).__name__}: {str(err)[:300]}", interpret_s=None)
    return dict(status=OK, error="", error_vs_tolerance=worst, interpret_s=time.perf_counter() - start)


def lowering(
    s: MosaicGpuSettings, *, progress: Any = None, clock: Callable[[], float] = time.perf_counter
) -> pd.DataFrame:
    """:func:`jaxperf.compilers.mosaic_gpu.lower.lower` of every (form, unroll) at every T."""
    started, rows = clock(), []
    last_python: tuple[int, float] | None = None
    for T in sorted(s.sizes):
        for form, unroll in s.lowering_plan():
            row = _row(form, unroll, T) | {"compiler": "mosaic_gpu"}
            spent = clock() - started
            reason = (
                f"spent {spent:.0f} s > lowering_budget_s={s.lowering_budget_s:g}"
                if spent > s.lowering_budget_s
                else ""
            )
            if form == "python" and last_python and not reason:
                predicted = last_python[1] * (T / last_python[0]) ** PYTHON_GROWTH
                if predicted > s.max_lower_s:
                    reason = f"predicted {predicted:.0f} s (x (T ratio)^{PYTHON_GROWTH}) > max_lower_s={s.max_lower_s:g}"
            if reason:
                rows.append(row | dict(lowers=None, status=OVER_BUDGET, error=reason))
            else:
                result = mgpu_lower.lower(
                    form, unroll, T=T, D=s.D, batch=s.lowering_batch, dtype=s.dtype, carry_dtype=s.carry_dtype
                )
                rows.append(row | result | {"status": OK if result["lowers"] else FAILED})
                if form == "python":
                    last_python = (T, result["lower_s"])
            if progress is not None:
                progress.update(1)
    return pd.DataFrame(rows)


def dump_dir() -> Path:
    """A temporary folder for the compile's dumps (megabytes of IR: read, never committed),
    removed when the process ends."""
    path = Path(tempfile.mkdtemp(prefix="jaxperf-mosaic-gpu-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def compile_points(
    s: MosaicGpuSettings, lowered: pd.DataFrame | None = None
) -> tuple[list[dict], pd.DataFrame]:
    """The compile sweep's points (T ascending, the reporter's two loops first in each T), and
    the rows for points left out because the lowering sweep showed they do not lower."""
    failed: dict[tuple[str, int], str] = {}
    if lowered is not None and len(lowered):
        bad = lowered[lowered.status != OK]
        failed = {(r.variant, int(r.T)): f"{r.status}: {r.error}" for r in bad.itertuples()}
    points, skipped = [], []
    for T in sorted(s.sizes):
        for form, unroll in s.compile_plan():
            name = vocab.variant_name(form, unroll)
            if (name, T) in failed:
                skipped.append(
                    _row(form, unroll, T) | dict(status="not compiled", error=f"lowering {failed[(name, T)]}")
                )
            else:
                points.append(mgpu_ir.point(form, unroll, T, batch=s.batch, D=s.D, dtype=s.dtype))
    return points, pd.DataFrame(skipped)


def compile_sweep(
    s: MosaicGpuSettings, out_dir: Path, lowered: pd.DataFrame | None = None, *, progress: Any = None
) -> pd.DataFrame:
    """Compile for sm_90a in the compile environment; one row per (variant, T) with the median
    lower/compile ms (``compile_total_ms``: their sum, the reporter's compile column) and the
    counts of its dumps (:func:`jaxperf.compilers.mosaic_gpu.ir.point_counts`).
    ``progress`` (a tqdm bar) advances per point compiled; its total is reset to the points."""
    points, skipped = compile_points(s, lowered)
    if progress is not None:
        progress.reset(total=len(points))
    rows = mgpu_compile.compile_points(
        points,
        out_dir,
        repeats=s.repeats,
        repeat_below_s=s.repeat_below_s,
        budget_s=s.compile_budget_s,
        progress=progress,
    )
    out = []
    for row in rows:
        flat = _row(row["loop_form"], row["unroll"], row["T"]) | {
            "batch": row.get("batch"),
            "status": row["status"],
        }
        flat["error"] = row.get("error", "")
        lower_ms, compile_ms = row.get("lower_ms") or [], row.get("compile_ms") or []
        if row["status"] == OK and compile_ms:
            flat |= dict(
                lower_ms=float(np.median(lower_ms)),
                compile_ms=float(np.median(compile_ms)),
                compiles=len(compile_ms),
                mosaic_lines=row.get("mosaic_lines"),
                dump_dir=row.get("dump_dir", ""),
            )
            flat["compile_total_ms"] = flat["lower_ms"] + flat["compile_ms"]
            texts = mgpu_compile.read_dump(out_dir, row)
            if texts:
                flat |= mgpu_ir.point_counts(texts, programs=mgpu_ir.programs(row["T"], s.batch))
        out.append(flat)
    frame = pd.DataFrame(out + skipped.to_dict(orient="records"))
    return frame.sort_values(["T", "variant"], key=vocab.variant_sort_key, kind="stable").reset_index(
        drop=True
    )
