"""Where one ``eqx.filter_pmap`` call spends its time: stage timers and cProfile.

The stage timers run the same helpers, in the same order, as Equinox 0.13's
``_PmapWrapper._call`` (reached through :mod:`jaxperf.private_api`, pinned by
``tests/test_private_api.py``), with a clock read between them.
"""

from __future__ import annotations

import cProfile
import pstats
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import pandas as pd

from .. import private_api, timing
from ..errors import check_int
from ..paths import PROJECT_ROOT
from .methods import build_runner
from .models import ModelSpec, count_leaves

STAGES = (
    "axis resolution",
    "partition",
    "ShapeDtypeStruct",
    "cache lookup",
    "inner pmap call (+execution)",
    "combine",
)
WARMUP_CALLS = 3


def filter_pmap_stages(fn: Any, args: tuple, calls: int = 30) -> pd.DataFrame:
    """Time each stage of ``eqx.filter_pmap``'s call path on ``fn(*args)`` (``fn`` an
    ``eqx.filter_pmap`` wrapper); one row per (stage, call) in seconds, warm-up excluded."""
    check_int("calls", calls, minimum=1)
    h = private_api.equinox_pmap_stage_helpers()
    rows = []
    for call in range(calls + WARMUP_CALLS):
        t0 = time.perf_counter()
        dummy = h["_common_preprocess"](fn._axis_size, {})
        in_axes = h["_named_in_axes"](fn._fun, fn._in_axes, args)
        in_axes = (None, h["_resolve_axes"](args, in_axes), 0, None)
        t1 = time.perf_counter()
        dynamic, static = eqx.partition((fn._fun, args, dummy, fn._out_axes), eqx.is_array)
        t2 = time.perf_counter()
        struct = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), dynamic)
        t3 = time.perf_counter()
        cached = h["_filter_pmap_cache"](
            fn._fun, static, struct, in_axes, fn._axis_name, fn._axis_size, fn._pmapkwargs
        )
        t4 = time.perf_counter()
        out = timing.block(cached(dynamic))
        t5 = time.perf_counter()
        h["_postprocess"](out)
        t6 = time.perf_counter()
        if call >= WARMUP_CALLS:
            for stage, seconds in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                rows.append({"stage": stage, "call": call - WARMUP_CALLS, "seconds": seconds})
    return pd.DataFrame(rows)


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


def breakdown(
    spec: ModelSpec, step: str, n_devices: int, calls: int = 30
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Stage times of one filter_pmap call, cProfile's top functions by self time,
    and the median wall time of an ordinary (untimed-stage) call for comparison."""
    model, opt_state = spec.build()
    runner = build_runner("filter_pmap", step, model, opt_state, spec.batch(n_devices), n_devices)
    fn, args = runner.fn, runner.args
    stages = filter_pmap_stages(fn, args, calls)
    plain = timing.compare(
        {"filter_pmap": lambda: fn(*args)},
        timing.TimingConfig(warmup=2, repeats=5, number=max(calls // 5, 1), dispatch_only=False),
    )
    return stages, profile_calls(lambda: fn(*args), calls), float(plain["wall_s_per_call"].median())


def run_breakdowns(
    specs: Iterable[ModelSpec], step: str, n_devices: int, calls: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Stage timers and cProfile for each spec: (stages, profile, whole-call medians)."""
    stages, profiles, totals = [], [], []
    for spec in specs:
        model, opt_state = spec.build()
        leaves = count_leaves(model, spec.batch(n_devices), opt_state)
        s, prof, total = breakdown(spec, step, n_devices, calls)
        stages.append(s.assign(model=spec.name, leaves=leaves))
        profiles.append(prof.assign(model=spec.name, leaves=leaves))
        totals.append(
            {
                "model": spec.name,
                "leaves": leaves,
                "whole_call_ms": 1e3 * total,
                "sum_of_stages_ms": 1e3 * s.groupby("stage")["seconds"].median().sum(),
            }
        )
    return pd.concat(stages, ignore_index=True), pd.concat(profiles, ignore_index=True), pd.DataFrame(totals)


def profile_methods(
    spec: ModelSpec, step: str, n_devices: int, methods: tuple[str, ...], calls: int, donate: bool = True
) -> pd.DataFrame:
    """Where the time goes now: cProfile's top functions by self time per call for each of
    ``methods`` (donated by default, as a training loop runs them) on one model."""
    model, opt_state = spec.build()
    x = spec.batch(n_devices)
    leaves = count_leaves(model, x, opt_state)
    frames = []
    for method in methods:
        runner = build_runner(method, step, model, opt_state, x, n_devices, donate=donate)
        for _ in range(WARMUP_CALLS):
            timing.block(runner.call())
        profile = profile_calls(runner.call, calls, top=8)
        frames.append(profile.assign(method=method, donated=donate, model=spec.name, leaves=leaves))
    return pd.concat(frames, ignore_index=True)
