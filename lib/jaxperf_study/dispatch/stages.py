"""Where one ``eqx.filter_pmap`` call spends its time: stage timers and cProfile
(:mod:`jaxperf_study.dispatch.accounting` adds them up).

The stage timers run the same helpers, in the same order, as Equinox 0.13's
``_PmapWrapper._call`` (reached through :mod:`jaxperf_study.private_hooks`, pinned by
``tests/test_private_api.py``), with a clock read between them, and block only at the end
as an ordinary call does (its host work after the dispatch overlaps the execution, and a
block in the middle would serialise them). Each round also times an ordinary call and the
same step under ``jax.pmap`` on params, interleaved, so that the stages can be checked to
sum to a call, and compared with the reporter's fast one.

Every timed call here ends by dropping its outputs, as the sweep's blocked calls do: the
no-op step returns the whole model and optimiser state (391 arrays at 392 leaves, each
sharded over the devices), and freeing them costs a few ms of host time that falls inside
an ordinary call's clock. The staged call times it as its last stage, ``free the outputs``
(which also drops the call's partition of its inputs and their ShapeDtypeStructs, the
last references Equinox's call holds; the input arrays stay alive in the caller's model);
without that stage the stages summed ~10 ms (18%) short of the ordinary call at 392 leaves.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import pandas as pd

from jaxperf import timing
from jaxperf.errors import check_int
from jaxperf.paths import PROJECT_ROOT

from .. import private_hooks

STAGES = (
    "axis resolution",
    "partition",
    "ShapeDtypeStruct",
    "cache lookup",
    "inner pmap call (dispatch)",
    "combine",
    "wait for execution",
    "free the outputs",
)
#: what each round of :func:`call_breakdown` times, in its order on the first round
CALLS = ("filter_pmap, staged", "filter_pmap", "jax.pmap on params")
WARMUP_CALLS = 3


def staged_call(fn: Any, args: tuple, h: dict[str, Any]) -> tuple[list[float], list[float]]:
    """One ``eqx.filter_pmap`` call made stage by stage, as Equinox 0.13's ``_PmapWrapper._call``
    makes it (``h``: its private helpers), blocking only at the end as an ordinary call waits,
    then dropping its outputs as a timed ordinary call does: (wall seconds per stage,
    thread-CPU seconds per stage) in :data:`STAGES` order."""
    marks = [now()]
    mark = lambda: marks.append(now())  # noqa: E731
    dummy = h["_common_preprocess"](fn._axis_size, {})
    in_axes = (None, h["_resolve_axes"](args, h["_named_in_axes"](fn._fun, fn._in_axes, args)), 0, None)
    mark()
    dynamic, static = eqx.partition((fn._fun, args, dummy, fn._out_axes), eqx.is_array)
    mark()
    struct = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), dynamic)
    mark()
    cached = h["_filter_pmap_cache"](
        fn._fun, static, struct, in_axes, fn._axis_name, fn._axis_size, fn._pmapkwargs
    )
    mark()
    out = cached(dynamic)
    mark()
    out = h["_postprocess"](out)
    mark()
    timing.block(out)
    mark()
    del out, dynamic, struct  # the last references to the call's arrays and their structure
    mark()
    return durations(marks)


def now() -> tuple[float, float]:
    """(wall, dispatching thread's CPU) seconds: one clock read of a staged call."""
    return time.perf_counter(), time.thread_time()


def durations(marks: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """(wall seconds, thread-CPU seconds) between consecutive clock reads of :func:`now`."""
    return [b[0] - a[0] for a, b in zip(marks, marks[1:])], [b[1] - a[1] for a, b in zip(marks, marks[1:])]


def whole(call: Callable[[], Any]) -> tuple[list[float], list[float]]:
    """One ordinary blocked call, its outputs dropped inside the clock (``free the outputs``)."""
    start = now()
    timing.block(call())
    return durations([start, now()])


Run = Callable[[], tuple[list[float], list[float]]]


def interleaved(runs: dict[str, Run], stages: tuple[str, ...], calls: int) -> pd.DataFrame:
    """``calls`` rounds of every run of ``runs`` (the first made stage by stage into ``stages``,
    the others whole calls), in :func:`~jaxperf.timing.williams` order, after :data:`WARMUP_CALLS`
    warm-up rounds: one row per (round, call, stage) with ``wall_ms`` and ``cpu_ms`` (the
    dispatching thread); whole calls have the stage ``"whole call"``."""
    check_int("calls", calls, minimum=1)
    for _ in range(WARMUP_CALLS):
        for run in runs.values():
            run()
    names, rows = list(runs), []
    for call in range(calls):
        for name in timing.williams(names, call):
            wall, cpu = runs[name]()
            for stage, w, c in zip(stages if name == names[0] else ("whole call",), wall, cpu):
                rows.append(
                    {"round": call, "call": name, "stage": stage, "wall_ms": 1e3 * w, "cpu_ms": 1e3 * c}
                )
    return pd.DataFrame(rows)


def call_breakdown(fn: Any, args: tuple, reference: Any, calls: int = 30) -> pd.DataFrame:
    """:func:`interleaved` rounds of :data:`CALLS`: ``fn(*args)`` made stage by stage, the same
    call made normally, and ``reference()`` (the step under jax.pmap on params)."""
    h = private_hooks.equinox_pmap_stage_helpers()
    runs = {
        CALLS[0]: lambda: staged_call(fn, args, h),
        CALLS[1]: lambda: whole(lambda: fn(*args)),
        CALLS[2]: lambda: whole(reference),
    }
    return interleaved(runs, STAGES, calls)


def _where(filename: str) -> str:
    """A profiled function's file, naming no folder of this machine: the path inside
    site-packages, inside the project, or the bare name."""
    if "site-packages/" in filename:
        return filename.split("site-packages/")[-1]
    path = Path(filename)
    return path.relative_to(PROJECT_ROOT).as_posix() if path.is_relative_to(PROJECT_ROOT) else path.name


def _profile_stats(profiler: cProfile.Profile) -> dict[Any, Any]:
    """pstats' raw table: (file, line, function) -> (calls, ncalls, self s, cumulative s, callers)."""
    return vars(pstats.Stats(profiler))["stats"]


def profile_calls(call: Callable[[], Any], calls: int, top: int = 15) -> pd.DataFrame:
    """cProfile over ``calls`` blocked calls of ``call()``: the ``top`` functions by self time per call."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        timing.block(call())
    profiler.disable()
    rows = [
        {
            "function": f"{func} ({_where(filename)}:{line})",
            "calls_per_step": ncalls / calls,
            "self_ms_per_step": 1e3 * tottime / calls,
            "cumulative_ms_per_step": 1e3 * cumtime / calls,
        }
        for (filename, line, func), (_cc, ncalls, tottime, cumtime, _callers) in _profile_stats(
            profiler
        ).items()
    ]
    profile = pd.DataFrame(rows).sort_values("self_ms_per_step", ascending=False).head(top)
    return profile.reset_index(drop=True)
