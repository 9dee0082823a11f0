"""The TPU compile sweep: generation x kernel x loop form x unroll x T, compiled on a CPU.

Each point compiles the jax#20909 kernel (:mod:`jaxperf.jax20909.kernels`,
forced to Mosaic TPU) for one device of the generation's topology, records
its compile time, code size and final-bundle schedule, and the static cycle
estimate of one kernel call at the compiled batch and at the reporter's
batch (512). A point that fails records its error; a point whose compile is
predicted to run past ``max_compile_s``, or that comes after the run has
spent ``max_total_s``, is recorded "over budget". Only the Python loop's
program grows with T, so only its compile is predicted: the last compiled T's
time scaled by ``(T / T_prev) ** 1.5`` (it grows faster than T); the loop forms
compile the same program at every T.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd

from ..compilers.mosaic_tpu import bundles, compile, estimate, topology
from ..jax20909 import kernels, vocab

OK, ERROR, OVER_BUDGET = "ok", "error", "over budget"
GROWTH_EXPONENT = 1.5
REPEAT_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class Point:
    """One compile of the sweep."""

    generation: str
    kernel: str
    loop_form: str
    unroll: int
    T: int

    @property
    def variant(self) -> str:
        return vocab.variant_name(self.loop_form, self.unroll)

    @property
    def series(self) -> tuple[str, str, str, int]:
        return (self.generation, self.kernel, self.loop_form, self.unroll)


# Compile order within a kernel, by variant name or else by loop form: the reporter's two loops;
# the portable fixes, scalar_carry first (the fix that closes the gap on XLA:CPU, notebook 02);
# fori_loop's other unrolls; pl.loop last (a wrapper over fori_loop, the same bundles).
PRIORITY = ("python", "fori u=1", "scalar_carry", "hoisted", "hand_unrolled", "fori", "pl_loop")


def _priority(variant: tuple[str, int]) -> tuple[int, int]:
    """A variant's place in :data:`PRIORITY`, so that a run that hits its time budget loses
    the least informative points; raises for a loop form that has no place."""
    form, unroll = variant
    name = vocab.variant_name(form, unroll)
    key = name if name in PRIORITY else form
    if key not in PRIORITY:
        raise ValueError(f"loop_form={form!r} has no compile priority: add it to sweep.PRIORITY.")
    return (PRIORITY.index(key), unroll)


def plan(
    generations: Iterable[str],
    kernel_names: Iterable[str],
    loop_forms: Iterable[str],
    unrolls: Iterable[int],
    sizes: Iterable[int],
) -> list[Point]:
    """Every point, ordered so that a run that hits ``max_total_s`` loses the least: kernel by
    kernel (the reporter's first), variant by :func:`_priority`, then generation, and T
    ascending (the budget rule predicts each T from the one before)."""
    sizes = sorted(set(sizes))
    generations = list(generations)
    for generation in generations:
        topology.resolve(generation)
    points = []
    for kernel in kernel_names:
        for form, unroll in sorted(vocab.variants(loop_forms, unrolls, kernel=kernel), key=_priority):
            for generation in generations:
                points += [Point(generation, kernel, form, unroll, T) for T in sizes]
    return points


def programs(kernel: str, T: int, batch: int) -> int:
    """Grid programs of one kernel call: the seed's T/128 row blocks per batch element, else one per element."""
    return batch * (T // vocab.SEED_PROGRAM_ROWS) if kernel == "seed" else batch


def builder(point: Point, *, batch: int, D: int, dtype: str) -> compile.Builder:
    """A fresh ``(jitted pallas_call, input ShapeDtypeStructs)`` for the point, forced to Mosaic TPU."""
    return lambda: kernels.build(
        point.kernel,
        point.loop_form,
        point.unroll,
        T=point.T,
        D=D,
        batch=batch,
        dtype=dtype,
        interpret=False,
        lowering="mosaic_tpu",
    )


def schedule_columns(point: Point, schedules: list[bundles.Schedule], *, batch: int) -> dict[str, Any]:
    """Bundle counts and the static estimate of one kernel call (the first Mosaic kernel)."""
    if not schedules:
        return {"bundles": None}
    schedule = schedules[0]
    row: dict[str, Any] = dict(bundles.summary(schedule), kernels_dumped=len(schedules))
    try:
        row["cycles"] = estimate.static_cycles(schedule)
        top = schedule.children(None)
        # One grid program: an iteration of the outermost loop (the kernel body for one block).
        row["cycles_per_program"] = estimate.iteration_cycles(schedule, top[0]) if len(top) == 1 else None
        seed_batch = int(str(vocab.SEED_SIZES["batch"]))
        trips = estimate.grid_trips(
            schedule, programs(point.kernel, point.T, batch), programs(point.kernel, point.T, seed_batch)
        )
        row["cycles_seed_batch"] = estimate.static_cycles(schedule, trips) if trips else None
    except ValueError as err:
        row["estimate_error"] = str(err)
        return row
    generation = topology.resolve(point.generation)[0]  # "v5e:1x1" runs at v5e's clock
    clock = estimate.CLOCKS[generation]
    row["clock_mhz"] = clock.mhz
    row["clock_published"] = clock.published
    if row["cycles_seed_batch"] is not None:
        row["us_seed_batch"] = estimate.microseconds(row["cycles_seed_batch"], generation)
    return row


def run(
    points: list[Point],
    *,
    batch: int,
    D: int,
    dtype: str,
    repeats: int,
    repeat_below_s: float,
    max_compile_s: float,
    max_total_s: float,
    progress: Any = None,
    clock: Callable[[], float] = time.perf_counter,
) -> pd.DataFrame:
    """Compile every point; one row per (point, repeat), or one row for an error or a skip.

    Repeats stop once the run has spent ``REPEAT_SHARE`` of ``max_total_s`` (then each point
    is compiled once), so that a slow machine spends its budget on points, not repeats.
    """
    started = clock()
    last: dict[tuple, tuple[int, float]] = {}  # series -> (T, median ms) of its last compile
    rows: list[dict[str, Any]] = []
    warmed: set[str] = set()
    for point in points:
        base = dict(dataclasses.asdict(point), variant=point.variant, batch=batch, D=D, dtype=dtype)
        base["device_kind"] = topology.device_kind(point.generation)
        reason = _over_budget(point, last.get(point.series), max_compile_s, clock() - started, max_total_s)
        if reason:
            rows.append(dict(base, status=OVER_BUDGET, error=reason))
        else:
            if point.generation not in warmed:  # libtpu's first Mosaic compile pays one-off set-up
                compile.compile_for(builder(point, batch=batch, D=D, dtype=dtype), point.generation)
                warmed.add(point.generation)
            spent = clock() - started
            todo = repeats if spent < REPEAT_SHARE * max_total_s else 1
            rows += list(_compile_rows(point, base, batch, D, dtype, todo, repeat_below_s, last))
        if progress is not None:
            progress.update(1)
    return pd.DataFrame(rows)


def _compile_rows(
    point: Point, base: dict, batch: int, D: int, dtype: str, repeats: int, repeat_below_s: float, last: dict
) -> Iterator[dict[str, Any]]:
    result = compile.compile_for(
        builder(point, batch=batch, D=D, dtype=dtype),
        point.generation,
        repeats=repeats,
        repeat_below_s=repeat_below_s,
    )
    if not result.ok:
        yield dict(base, status=ERROR, error=result.error)
        return
    last[point.series] = (point.T, result.median_ms)
    static = dict(
        code_bytes=result.code_bytes,
        **{f"cost_{k.replace(' ', '_')}": v for k, v in result.cost.items()},
        **schedule_columns(point, result.schedules, batch=batch),
    )
    for repeat, ms in enumerate(result.compile_ms):
        yield dict(base, status=OK, error="", repeat=repeat, compile_ms=ms, **static)


def _over_budget(
    point: Point, previous: tuple[int, float] | None, max_compile_s: float, spent_s: float, max_total_s: float
) -> str:
    if spent_s > max_total_s:
        return f"the run had spent {spent_s:.0f} s > max_total_s={max_total_s:g}"
    if previous is None or point.loop_form != "python":
        return ""
    prev_T, prev_ms = previous
    predicted_s = prev_ms / 1e3 * (point.T / prev_T) ** GROWTH_EXPONENT
    if predicted_s > max_compile_s:
        return f"predicted {predicted_s:.1f} s (T={prev_T}: {prev_ms / 1e3:.2f} s) > max_compile_s={max_compile_s:g}"
    return ""


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """What :func:`run_settings` gave: one row per compile (:func:`run`), and the sweep's wall time."""

    records: pd.DataFrame
    run_s: float

    @functools.cached_property
    def points(self) -> pd.DataFrame:
        """One row per point (:func:`point_medians`)."""
        return point_medians(self.records)

    def describe(self) -> str:
        return f"{len(self.points)} points in {self.run_s:.0f} s"


def run_settings(
    settings: Any, progress: Any = None, clock: Callable[[], float] = time.perf_counter
) -> SweepRun:
    """:func:`run` over :func:`plan` of a :class:`~jaxperf.tpu.settings.TpuSettings`, timed by ``clock``."""
    points = plan(
        settings.generations, settings.kernels, settings.loop_forms, settings.unrolls, settings.sizes
    )
    if progress is not None:
        progress.reset(total=len(points))
    started = clock()
    records = run(
        points,
        batch=settings.batch,
        D=settings.D,
        dtype=settings.dtype,
        repeats=settings.repeats,
        repeat_below_s=settings.repeat_below_s,
        max_compile_s=settings.max_compile_s,
        max_total_s=settings.max_total_s,
        progress=progress,
        clock=clock,
    )
    return SweepRun(records, clock() - started)


def reporter_dtype_probe(settings: Any) -> pd.DataFrame:
    """The reporter's kernel in the reporter's float16, fori_loop at the smallest T, per generation:
    does Mosaic TPU accept the dtype? (One compile each; the errors are the answer.)"""
    points = plan(settings.generations, ["seed"], ["fori"], [1], [min(settings.sizes)])
    return run(
        points,
        batch=settings.batch,
        D=settings.D,
        dtype=str(vocab.SEED_SIZES["dtype"]),
        repeats=1,
        repeat_below_s=0.0,
        max_compile_s=settings.max_compile_s,
        max_total_s=settings.max_total_s,
    )


def point_medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per point: the median compile ms over repeats, the static columns, the status."""
    keys = ["generation", "kernel", "loop_form", "unroll", "variant", "T"]
    static = df.drop(columns=[c for c in ("repeat", "compile_ms") if c in df]).drop_duplicates(keys)
    if "compile_ms" not in df:
        return static.reset_index(drop=True)
    medians = df.groupby(keys, dropna=False)["compile_ms"].median().rename("compile_ms").reset_index()
    return static.merge(medians, on=keys, how="left").reset_index(drop=True)
