"""The timing harness: warm-up excluded, repeats, interleaved comparisons.

Three measurements per call, named after what they hold:

- ``wall_s_per_call``: end to end, each call blocked with
  ``block_until_ready`` before the next (it/s = 1 / this);
- ``cpu_s_per_call``: the dispatching thread's CPU time (``time.thread_time``)
  over those same blocked calls, i.e. host work, not waiting;
- ``dispatch_s_per_call``: a separate loop that only enqueues and blocks once
  after the loop; the final block is not counted;
- ``loop_it_per_s``: that same loop with its final block counted, i.e. the
  rate of a training loop that lets dispatch run ahead of execution.

Variants are compared interleaved: each repeat runs every variant once, in an
order rotated from one repeat to the next, so that drift on a noisy machine
hits all of them alike. Ratios are taken per pair (same repeat), then summarised
by their median and interquartile range.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .timing_config import Clock, TimingConfig


def block(tree: Any) -> Any:
    """Wait for every array in ``tree``; non-array leaves pass through."""
    import jax

    return jax.block_until_ready(tree)


def _blocked_batch(fn: Callable[[], Any], number: int, clock: Clock, sync) -> tuple[float, float]:
    wall0, cpu0 = clock.wall(), clock.cpu()
    for _ in range(number):
        sync(fn())
    return (clock.wall() - wall0) / number, (clock.cpu() - cpu0) / number


def _dispatch_batch(fn: Callable[[], Any], number: int, clock: Clock, sync) -> tuple[float, float]:
    """(enqueue-only, pipelined loop) seconds per call: before and after the one final block."""
    outs = []
    wall0 = clock.wall()
    for _ in range(number):
        outs.append(fn())
    enqueued = clock.wall() - wall0
    sync(outs)
    return enqueued / number, (clock.wall() - wall0) / number


def compare(
    variants: Mapping[str, Callable[[], Any]],
    config: TimingConfig | None = None,
    *,
    sync: Callable[[Any], Any] = block,
    progress: Any = None,
    **labels: Any,
) -> pd.DataFrame:
    """Time each zero-argument callable in ``variants``, interleaved.

    Returns one tidy row per (variant, repeat) with ``wall_s_per_call``,
    ``cpu_s_per_call``, ``it_per_s`` and (if enabled) ``dispatch_s_per_call``;
    extra keyword ``labels`` (model, leaves, ...) become constant columns.
    ``progress`` is an optional tqdm bar advanced once per variant batch.
    """
    config = config or TimingConfig()
    if not variants:
        raise ValueError("variants={} is not allowed: expected at least one variant to time.")
    names = list(variants)
    clock = config.clock
    for name in names:
        for _ in range(config.warmup):
            sync(variants[name]())
    rows = []
    for repeat in range(config.repeats):
        shift = repeat % len(names)
        order = names[shift:] + names[:shift]
        for position, name in enumerate(order):
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
                enqueue, loop = _dispatch_batch(variants[name], config.number, clock, sync)
                row["dispatch_s_per_call"] = enqueue
                row["loop_it_per_s"] = 1.0 / loop if loop > 0 else float("inf")
            rows.append(row)
            if progress is not None:
                progress.update(1)
    return pd.DataFrame(rows)


def iqr_stats(values: Any) -> dict[str, float]:
    """Median and quartiles (and their spread) of ``values``."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("values=[] is not allowed: expected at least one measurement.")
    q25, median, q75 = np.percentile(arr, [25, 50, 75])
    return {"median": float(median), "q25": float(q25), "q75": float(q75), "n": int(arr.size)}


def summarize(df: pd.DataFrame, value: str, by: list[str]) -> pd.DataFrame:
    """Median, q25, q75 and count of ``value`` for each group in ``by``."""
    if value not in df:
        raise ValueError(f"value={value!r} is not a column: expected one of {list(df.columns)}.")
    grouped = df.groupby(by, sort=False)[value]
    out = grouped.apply(lambda s: pd.Series(iqr_stats(s))).unstack()
    return out.reset_index()


def pair_ratios(
    df: pd.DataFrame,
    baseline: str,
    value: str = "it_per_s",
    by: list[str] | None = None,
) -> pd.DataFrame:
    """Per-repeat ratio ``value(variant) / value(baseline)`` inside each group.

    Pairs are matched on ``by + ['repeat']``, so each ratio compares two
    measurements taken back to back.
    """
    by = list(by or [])
    if baseline not in set(df["variant"]):
        raise ValueError(
            f"baseline={baseline!r} is not a timed variant: expected one of {sorted(set(df['variant']))}."
        )
    keys = by + ["repeat"]
    base = df[df["variant"] == baseline][keys + [value]].rename(columns={value: "_base"})
    merged = df.merge(base, on=keys, how="inner")
    merged["ratio"] = merged[value] / merged["_base"]
    return merged.drop(columns="_base")
