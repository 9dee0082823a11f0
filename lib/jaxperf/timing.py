"""The timing harness: warm-up excluded, repeats, interleaved comparisons. Per call: ``wall_s_per_call``
and ``cpu_s_per_call`` (the dispatching thread's CPU) over blocked calls (``it_per_s``: 1 / wall);
then a loop that only enqueues and blocks once after it (``loop_calls`` long: with
``TimingConfig.loop_seconds`` the seed's loop, at least that long and ``loop_calls`` calls):
``dispatch_s_per_call`` (its final block not counted), ``enqueue_cpu_s_per_call`` (the thread's CPU
meanwhile) and ``loop_it_per_s``; ``cpu_tick_s`` the CPU clock's step (on a coarse one
:func:`host_column` reads the wall time).
Each repeat runs every variant once, over 2k repeats of k each in every place and after every other
equally often (a Williams design); ratios are per pair (same repeat). Repeats: a fixed count, or
until each watched ratio's IQR is within ``TimingConfig.precision`` or a time cap (Hoefler and
Belli, SC15); every row says what stopped it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .errors import bad_value, check_choice
from .timing_config import Clock, TimingConfig, cpu_tick


def block(tree: Any) -> Any:
    """Wait for every array in ``tree``; non-array leaves pass through."""
    import jax

    return jax.block_until_ready(tree)


def _blocked_batch(fn: Callable[[], Any], number: int, clock: Clock, sync) -> tuple[float, float]:
    wall0, cpu0 = clock.wall(), clock.cpu()
    for _ in range(number):
        sync(fn())
    return (clock.wall() - wall0) / number, (clock.cpu() - cpu0) / number


def _dispatch_batch(fn: Callable[[], Any], number: int, clock: Clock, sync) -> tuple[float, float, float]:
    """(enqueue-only, the thread's CPU while enqueuing, pipelined loop) seconds per call: before
    and after the one final block. Only the last call's outputs are kept and waited for: a loop
    of thousands of calls must not hold every output alive, and calls on a device run in order
    (each call of a training loop takes the previous one's state)."""
    out = None
    wall0, cpu0 = clock.wall(), clock.cpu()
    for _ in range(number):
        out = fn()
    enqueued, cpu = clock.wall() - wall0, clock.cpu() - cpu0
    sync(out)
    return enqueued / number, cpu / number, (clock.wall() - wall0) / number


#: the most calls one seed's loop may take (a path far faster than the clock can time)
MAX_LOOP_CALLS = 100_000


def loop_length(fn: Callable[[], Any], config: TimingConfig, clock: Clock, sync) -> int:
    """Calls in ``fn``'s pipelined loop: ``config.number``, or for the seed's loop
    (``config.loop_seconds`` > 0) at least ``config.loop_calls`` and enough for ``loop_seconds``
    (10% over, read from loops of growing length until one lasts a fifth of it), at most
    :data:`MAX_LOOP_CALLS`. Each variant's length is fixed once, so its rounds stay alike."""
    if not config.loop_seconds:
        return config.number
    calls = max(config.loop_calls, config.number)
    while True:
        seconds = _dispatch_batch(fn, calls, clock, sync)[2] * calls
        if seconds >= config.loop_seconds / 5 or calls >= MAX_LOOP_CALLS:
            break
        calls = int(
            min(
                MAX_LOOP_CALLS,
                max(2 * calls, np.ceil(0.3 * config.loop_seconds * calls / max(seconds, 1e-9))),
            )
        )
    wanted = int(np.ceil(1.1 * config.loop_seconds * calls / max(seconds, 1e-9)))
    return int(min(MAX_LOOP_CALLS, max(config.loop_calls, config.number, wanted)))


#: what ended a comparison's rounds (its ``stopped_by`` column)
STOPS = ("fixed repeats", "precision", "time cap", "repeat cap")
#: the per-call columns a watched ratio may read
RATIO_VALUES = ("wall_s_per_call", "cpu_s_per_call", "it_per_s", "dispatch_s_per_call", "loop_it_per_s")
#: (variant, baseline, value): the per-repeat ratio ``value(variant) / value(baseline)``
Watch = tuple[str, str, str]


def relative_iqr(values: Any) -> float:
    """Half the interquartile range over the median: 0.05 means the middle half of the
    values lies within about +-5% of their median (inf for a median of 0)."""
    s = iqr_stats(values)
    return float((s["q75"] - s["q25"]) / (2 * abs(s["median"]))) if s["median"] else float("inf")


def default_watch(names: list[str], dispatch_only: bool) -> list[Watch]:
    """Every variant against the first, on blocked it/s and (if timed) pipelined it/s."""
    values = ["it_per_s"] + (["loop_it_per_s"] if dispatch_only else [])
    return [(name, names[0], value) for name in names[1:] for value in values]


def _check_watch(watch: list[Watch], names: list[str], config: TimingConfig) -> None:
    allowed = [v for v in RATIO_VALUES if config.dispatch_only or v in RATIO_VALUES[:3]]
    for entry in watch:
        if not (isinstance(entry, tuple) and len(entry) == 3):
            raise bad_value("watch", entry, "(variant, baseline, value) tuples")
        variant, baseline, value = entry
        for name in (variant, baseline):
            check_choice("watch variant", name, names)
        check_choice("watch value", value, allowed)


def _widest(rows: list[dict], watch: list[Watch]) -> float:
    """The widest relative IQR among the watched per-repeat ratios (nan: nothing watched)."""
    if not watch:
        return float("nan")
    by_key = {(row["variant"], row["repeat"]): row for row in rows}
    repeats = sorted({row["repeat"] for row in rows})
    return max(
        relative_iqr([by_key[(v, r)][value] / by_key[(b, r)][value] for r in repeats])
        for v, b, value in watch
    )


def compare(
    variants: Mapping[str, Callable[[], Any]],
    config: TimingConfig | None = None,
    *,
    sync: Callable[[Any], Any] = block,
    progress: Any = None,
    watch: list[Watch] | None = None,
    **labels: Any,
) -> pd.DataFrame:
    """Time each zero-argument callable in ``variants``, interleaved: one tidy row per (variant,
    repeat) with the module's columns, ``labels`` as constant columns; ``progress`` (a tqdm bar)
    advanced per variant batch. Rounds: ``config.repeats``, or with ``config.precision`` until every
    ``watch`` ratio (default :func:`default_watch`) has a :func:`relative_iqr` within it or a cap;
    rows record ``stopped_by`` (:data:`STOPS`) and ``rel_iqr`` (the widest watched one's)."""
    if os.environ.get("JAXPERF_RENDER"):  # jaxperf_study.study.RENDER_ENV: a redraw never measures
        raise RuntimeError(
            "timing.compare ran in a render (JAXPERF_RENDER is set): a measurement goes through "
            "Study.measure, which a render reads back from the published records"
        )
    config = config or TimingConfig()
    if not variants:
        raise ValueError("variants={} is not allowed: expected at least one variant to time.")
    names = list(variants)
    if watch is None:
        watch = default_watch(names, config.dispatch_only) if config.precision is not None else []
    watch = list(watch)
    _check_watch(watch, names, config)
    clock = config.clock
    for name in names:
        for _ in range(config.warmup):
            sync(variants[name]())
    lengths = (
        {name: loop_length(variants[name], config, clock, sync) for name in names}
        if config.dispatch_only
        else {}
    )
    rows: list[dict] = []
    start = clock.wall()
    repeat = 0
    while True:
        _round(variants, names, repeat, config, clock, sync, progress, labels, rows, lengths)
        repeat += 1
        if repeat < config.repeats:
            continue
        if config.precision is None or not watch:  # nothing to narrow: the minimum is all
            stopped = "fixed repeats"
            break
        if _widest(rows, watch) <= config.precision:
            stopped = "precision"
            break
        if clock.wall() - start >= config.max_seconds:
            stopped = "time cap"
            break
        if repeat >= config.max_repeats:
            stopped = "repeat cap"
            break
    df = pd.DataFrame(rows)
    df["cpu_tick_s"] = cpu_tick(clock.cpu)  # the CPU clock's step: a coarse one is read pooled
    df["stopped_by"] = stopped
    df["rel_iqr"] = _widest(rows, watch)
    return df


def williams(names: list[str], repeat: int) -> list[str]:
    """Round ``repeat``'s order of ``names``: row ``repeat`` of a Williams design (see above)."""
    k = len(names)
    first = [0] + [(i + 1) // 2 if i % 2 else k - i // 2 for i in range(1, k)]
    return [names[(x + repeat) % k] for x in first][:: -1 if repeat // k % 2 else 1]


def _round(
    variants: Mapping[str, Callable[[], Any]],
    names: list[str],
    repeat: int,
    config: TimingConfig,
    clock: Clock,
    sync: Callable[[Any], Any],
    progress: Any,
    labels: dict[str, Any],
    rows: list[dict],
    lengths: Mapping[str, int],
) -> None:
    """One interleaved round: every variant once, in :func:`williams` order; ``lengths`` the
    calls of each variant's pipelined loop (:func:`loop_length`)."""
    for position, name in enumerate(williams(names, repeat)):
        wall, cpu = _blocked_batch(variants[name], config.number, clock, sync)
        row = {
            **labels,
            "variant": name,
            "repeat": repeat,
            "position": position,
            "calls": config.number,
            "wall_s_per_call": wall,
            "cpu_s_per_call": cpu,
            "it_per_s": 1.0 / wall if wall > 0 else float("inf"),
        }
        if config.dispatch_only:
            enqueue, cpu, loop = _dispatch_batch(variants[name], lengths[name], clock, sync)
            row["loop_calls"] = lengths[name]
            row["dispatch_s_per_call"], row["enqueue_cpu_s_per_call"] = enqueue, cpu
            row["loop_it_per_s"] = 1.0 / loop if loop > 0 else float("inf")
        rows.append(row)
        if progress is not None:
            progress.update(1)


COARSE_TICK_S = 1e-4  # a thread CPU clock of steps this long (a TPU host's: 10 ms) cannot time a call
#: the host's time per call, by the column :func:`host_column` reads, in words
HOST_MEASURES = {
    "enqueue_cpu_s_per_call": "the dispatching thread's CPU time while the loop enqueues",
    "cpu_s_per_call": "the dispatching thread's CPU time per blocked call",
    "dispatch_s_per_call": "the wall time while the loop enqueues (the thread's CPU clock moves in steps "
    "of {tick_ms:g} ms here, too coarse for a call; the device works apart from the host, so enqueuing "
    "is the host's work, and a path that waits for each call includes its wait)",
}


def coarse_clock(rows: pd.DataFrame) -> bool:
    return "cpu_tick_s" in rows and bool((rows["cpu_tick_s"] >= COARSE_TICK_S).any())


def host_column(rows: pd.DataFrame, blocked: bool = False) -> str:
    """The column of :func:`compare`'s ``rows`` with the host's time per call: the thread's CPU while
    enqueuing (per blocked call with ``blocked``), or on a coarse clock the wall time while enqueuing."""
    if coarse_clock(rows) and "dispatch_s_per_call" in rows:
        return "dispatch_s_per_call"
    return "cpu_s_per_call" if blocked or "enqueue_cpu_s_per_call" not in rows else "enqueue_cpu_s_per_call"


def host_measure(rows: pd.DataFrame) -> str:
    """:func:`host_column`'s choice for ``rows``, and why, in words."""
    tick_ms = 1e3 * float(rows["cpu_tick_s"].max()) if "cpu_tick_s" in rows else 0.0
    return HOST_MEASURES[host_column(rows)].format(tick_ms=tick_ms)


def amortised(fn: Callable[..., Any], n: int) -> Any:
    """``fn`` called ``n`` times in one jitted scan, each output's mean kept (jax#20909's harness, the
    inputs made once, outside): time / ``n`` spreads a call's fixed cost. The scan carries the inputs
    through an optimization barrier, so XLA cannot see that they never change and hoist the call."""
    import jax
    import jax.numpy as jnp

    def step(same: Any, _: Any) -> tuple[Any, Any]:
        same = jax.lax.optimization_barrier(same)
        return same, sum(jnp.mean(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(fn(*same)))

    return jax.jit(lambda *args: jax.lax.scan(step, args, None, length=n)[1])


def iqr_stats(values: Any) -> dict[str, float]:
    """Median and quartiles of ``values`` (raises ValueError for none)."""
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("values=[] is not allowed: expected at least one measurement.")
    q25, median, q75 = np.percentile(arr, [25, 50, 75])
    return {"median": float(median), "q25": float(q25), "q75": float(q75), "n": int(arr.size)}


def pair_ratios(
    df: pd.DataFrame, baseline: str, value: str = "it_per_s", by: list[str] | None = None
) -> pd.DataFrame:
    """Per-repeat ratio ``value(variant) / value(baseline)``, pairs matched on ``by + ['repeat']``
    (two measurements taken back to back)."""
    by = list(by or [])
    if baseline not in set(df["variant"]):
        raise bad_value("baseline", baseline, f"a timed variant, one of {sorted(set(df['variant']))}")
    keys = by + ["repeat"]
    base = df[df["variant"] == baseline][keys + [value]].rename(columns={value: "_base"})
    merged = df.merge(base, on=keys, how="inner")
    merged["ratio"] = merged[value] / merged["_base"]
    return merged.drop(columns="_base")
