"""The compile sweep: every (kernel, loop form, unroll, T) compiled for one target.

One tidy row per (kernel, variant, T, repeat), with the compile time of each
stage, the machine-code metrics and the static counts of
:mod:`jaxperf.compilers.triton.estimate`. Honesty rules: a variant Pallas' Triton
lowering rejects is recorded "does not lower", once per T; a compile that
crashes is recorded "failed" with its error; a point not compiled because of
a budget is recorded "over budget" with the reason. Nothing is dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..compilers.triton import estimate
from ..compilers.triton.capture import DoesNotLower, capture
from ..compilers.triton.compile import STAGES, compile_ttir
from ..compilers.triton.toolchain import DEFAULT_TARGET, TritonUnavailableError, check_target, require
from ..errors import bad_value, check_int
from .plan import Shape, Variant, check_sizes, plan

STATUS_OK = "ok"
STATUS_NO_LOWER = "does not lower"
STATUS_OVER_BUDGET = "over budget"
STATUS_FAILED = "failed"
# Forms whose program grows with T (the others hold at most `unroll` body copies).
GROWS_WITH_T = ("python",)
# The Python loop's next compile is predicted as this one's x (T ratio)**1.5 when deciding
# whether it fits max_compile_s: its ttgir and llir stages grow faster than T.
PREDICTED_GROWTH = 1.5
KEY_COLUMNS = (
    "kernel",
    "loop_form",
    "unroll",
    "variant",
    "T",
    "steps",
    "target",
    "repeat",
    "status",
    "error",
)


def build_variant(
    v: Variant, T: int, shape: Shape, build: Callable[..., Any] | None = None
) -> tuple[Any, tuple]:
    """The jitted ``pallas_call`` of ``v`` at ``T`` for the Triton lowering, and its input specs."""
    if build is None:
        from ..jax20909.kernels import build as build_kernel

        build = build_kernel
    carry = shape.seed_carry_dtype if v.kernel == "seed" else "float32"
    return build(
        v.kernel,
        v.loop_form,
        v.unroll,
        T=T,
        D=shape.D,
        batch=shape.batch,
        dtype=shape.dtype,
        block_rows=shape.block_rows,
        interpret=False,
        lowering="triton",
        carry_dtype=carry,
    )


def measure(fn: Callable[..., Any], args: Sequence[Any], *, target: str = DEFAULT_TARGET) -> dict[str, Any]:
    """Capture and compile once: one flat row of times (ms), code metrics and static counts.

    ``compile_ms`` = ``export_ms`` (JAX: trace + Pallas->Triton + StableHLO) +
    ``triton_ms`` (Triton's ttir passes to cubin), the closest analogue of the
    reporter's compile column. Raises DoesNotLower, TritonUnavailableError or ValueError.
    """
    captured = capture(fn, args, target=target)
    result = compile_ttir(
        captured.ttir, target=target, num_warps=captured.num_warps, num_stages=captured.num_stages
    )
    stats = result.sass_stats
    counts = estimate.dynamic_counts(result.sass)
    return {
        "export_ms": captured.export_ms,
        "triton_lowering_ms": captured.triton_lowering_ms,
        "parse_ms": result.parse_ms,
        **{f"{stage}_ms": ms for stage, ms in result.stage_ms.items()},
        "triton_ms": result.total_ms,
        "compile_ms": captured.export_ms + result.total_ms,
        "ttir_lines": captured.ttir_lines,
        "ptx_instructions": result.ptx_instructions,
        "sass_instructions": stats.instructions,
        "registers": stats.registers,
        "spill_stores_bytes": stats.spill_stores_bytes,
        "spill_loads_bytes": stats.spill_loads_bytes,
        "local_memory_instructions": stats.local_memory_instructions,
        "backward_branches": stats.backward_branches,
        "loop_present": stats.loop_present,
        "shared_bytes": stats.shared_bytes,
        "num_warps": captured.num_warps,
        "num_stages": captured.num_stages,
        "programs": captured.programs,
        "ptx_version": result.options["ptx_version"],
        **estimate.columns(counts, num_warps=captured.num_warps, programs=captured.programs),
    }


def _check_seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_value(name, value, "a number of seconds > 0")
    return float(value)


def sweep(
    variants: Sequence[Variant],
    sizes: Mapping[str, Sequence[int]],
    *,
    target: str = DEFAULT_TARGET,
    repeats: int = 1,
    repeat_below_s: float = float("inf"),
    max_compile_s: float = 30.0,
    budget_s: float = float("inf"),
    shape: Shape = Shape(),
    build: Callable[..., Any] | None = None,
    progress: Any = None,
    skip: Collection[tuple[str, int]] = (),
    warm_up: bool = True,
) -> pd.DataFrame:
    """Compile every variant at every T of its kernel; one tidy row per (variant, T, repeat).

    Kernels run in the order of ``variants`` (put the one that matters first),
    T ascending. Each point is compiled once, and ``repeats`` times in all when
    that first compile took under ``repeat_below_s``; inside one T the repeats
    visit the variants in an order rotated from repeat to repeat, so drift hits
    them alike. A Python loop whose next compile is predicted (x (T ratio)^1.5)
    over ``max_compile_s``, and every point once the sweep has run ``budget_s``,
    is recorded "over budget" with the reason. (variant name, T) pairs in ``skip`` are left
    out (neither compiled nor recorded). ``progress`` (a tqdm bar)
    advances once per (variant, T). With ``warm_up``, one compile of the first variant at the
    smallest T runs first and is discarded: a process' first compile also pays Triton's,
    LLVM's and ptxas' start-up (committed runs read the Python loop's T=256 compile as 85, 306
    and 555 ms because it was that first compile). Raises TritonUnavailableError without the
    triton extra, ValueError for a bad argument.
    """
    check_target(target)
    check_int("repeats", repeats, minimum=1)
    _check_seconds("repeat_below_s", repeat_below_s)
    _check_seconds("max_compile_s", max_compile_s)
    _check_seconds("budget_s", budget_s)
    kernels = list(dict.fromkeys(v.kernel for v in variants))
    missing = [k for k in kernels if k not in sizes]
    if missing:
        raise bad_value("sizes", dict(sizes), f"a list of T for each kernel swept ({kernels})")
    per_kernel = {k: check_sizes(f"sizes[{k!r}]", sizes[k]) for k in kernels}
    require()
    if warm_up and variants:
        first = next(v for v in variants if v.kernel == kernels[0])
        _one(first, per_kernel[kernels[0]][0], target, shape, build, {}, [])
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    last: dict[Variant, tuple[int, float]] = {}

    def base(v: Variant, T: int, repeat: int = 0) -> dict[str, Any]:
        row = dict(kernel=v.kernel, loop_form=v.loop_form, unroll=v.unroll, variant=v.name, T=T)
        return {**row, "steps": T // shape.block_rows, "target": target, "repeat": repeat}

    def skip_reason(v: Variant, T: int) -> str:
        spent = time.perf_counter() - started
        if spent > budget_s:
            return f"not measured: the sweep had run {spent:.0f} s > budget_s={budget_s:g}"
        if v.loop_form in GROWS_WITH_T and v in last:
            prev_T, prev_s = last[v]
            predicted = prev_s * (T / prev_T) ** PREDICTED_GROWTH
            if predicted > max_compile_s:
                return (
                    f"not measured: at T={prev_T} one compile took {prev_s:.1f} s, so T={T} is predicted at "
                    f"~{predicted:.0f} s (x (T ratio)^{PREDICTED_GROWTH:g}) > max_compile_s={max_compile_s:g}"
                )
        return ""

    for kernel in kernels:
        for T in per_kernel[kernel]:
            active = []
            for v in (v for v in variants if v.kernel == kernel and (v.name, T) not in skip):
                reason = skip_reason(v, T)
                if reason:
                    rows.append({**base(v, T), "status": STATUS_OVER_BUDGET, "error": reason})
                    if progress is not None:
                        progress.update(1)
                else:
                    active.append(v)
            times: dict[Variant, list[float]] = {v: [] for v in active}
            for repeat in range(repeats):
                shift = repeat % max(len(active), 1)
                for v in active[shift:] + active[:shift]:
                    if repeat > 0 and not (times[v] and times[v][0] < repeat_below_s):
                        continue
                    rows.append(_one(v, T, target, shape, build, base(v, T, repeat), times[v]))
                    if progress is not None and repeat == 0:
                        progress.update(1)
            for v, secs in times.items():
                if secs:
                    last[v] = (T, float(np.median(secs)))
    df = pd.DataFrame(rows, columns=None if rows else list(KEY_COLUMNS))
    return df[list(KEY_COLUMNS) + [c for c in df.columns if c not in KEY_COLUMNS]]


def _one(
    v: Variant,
    T: int,
    target: str,
    shape: Shape,
    build: Callable[..., Any] | None,
    row: dict,
    secs: list[float],
) -> dict[str, Any]:
    """Compile one point; a rejection or a crash is a result, recorded in the row."""
    start = time.perf_counter()
    try:
        fn, args = build_variant(v, T, shape, build)
        measured = measure(fn, args, target=target)
    except DoesNotLower as err:
        return {**row, "status": STATUS_NO_LOWER, "error": str(err)}
    except TritonUnavailableError:
        raise
    except Exception as err:
        return {**row, "status": STATUS_FAILED, "error": f"{type(err).__name__}: {str(err)[:500]}"}
    secs.append(measured["compile_ms"] / 1e3)
    return {**row, **measured, "status": STATUS_OK, "error": "", "wall_s": time.perf_counter() - start}


def sweep_targets(
    variants: Sequence[Variant],
    sizes: Mapping[str, Sequence[int]],
    targets: Sequence[str],
    *,
    reuse: pd.DataFrame | None = None,
    **options: Any,
) -> pd.DataFrame:
    """:func:`sweep` once per target (``options`` as for :func:`sweep`), rows concatenated.

    Points that ``reuse`` (an earlier sweep's rows) already compiled for a target are taken
    from it (their first compile), not compiled again. ``budget_s`` is for all targets together.
    """
    frames = []
    budget_s = _check_seconds("budget_s", options.pop("budget_s", float("inf")))
    started = time.perf_counter()
    for target in targets:
        done: set[tuple[str, int]] = set()
        if reuse is not None and not reuse.empty:
            names = {v.name for v in variants}
            kernels = {v.kernel for v in variants}
            old = reuse[(reuse.target == target) & (reuse.status == STATUS_OK) & reuse.variant.isin(names)]
            wanted = [k in kernels and T in sizes.get(k, ()) for k, T in zip(old.kernel, old["T"])]
            old = old[pd.Series(wanted, index=old.index, dtype=bool)]
            old = old.sort_values("repeat").drop_duplicates(["kernel", "variant", "T"])
            frames.append(old)
            done = set(zip(old.variant, old["T"]))
        left = max(budget_s - (time.perf_counter() - started), 1e-9)
        frames.append(sweep(variants, sizes, target=target, skip=done, budget_s=left, **options))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(KEY_COLUMNS))


def count_points(variants: Sequence[Variant], sizes: Mapping[str, Sequence[int]]) -> int:
    """How many (variant, T) points :func:`sweep` visits (for a progress bar)."""
    return sum(len(set(sizes[v.kernel])) for v in variants)


__all__ = [
    "STAGES",
    "Variant",
    "Shape",
    "plan",
    "check_sizes",
    "build_variant",
    "measure",
    "sweep",
    "count_points",
]
