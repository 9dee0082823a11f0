"""Runs ahead or waits: a verdict per method from enqueue-only over blocked time per call.

On a step whose device time is well above its host time, ``enqueue_s_per_call /
blocked_s_per_call`` (back to back in one repeat: :func:`jaxperf.timing.compare`'s
``dispatch_s_per_call`` over ``wall_s_per_call``) is far below 1 for a method that returns once
its step is enqueued and about 1 for one that waits; shared-CPU noise moves both times together.
:func:`judge` says **runs ahead** when the upper quartile of the ratios is below
:data:`BOUNDARY` (0.5), **waits for each call** when the lower quartile is above it, **unclear**
when the interquartile range straddles it, and **not judged** when the reference method
(``jax.jit``, known to run ahead) has an upper quartile not below :data:`HEAVY_ENOUGH_BELOW`
(0.25): then host work alone fills the step and any method would look as if it waited. The
margin is the deciding quartile's distance from the boundary (NaN when unclear or not judged).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .errors import bad_value

BOUNDARY = 0.5
HEAVY_ENOUGH_BELOW = 0.25

RUNS_AHEAD = "runs ahead"
WAITS = "waits for each call"
UNCLEAR = "unclear"
NOT_JUDGED = "not judged"


def quartiles(values: Sequence[float] | np.ndarray | pd.Series) -> tuple[float, float, float]:
    """(q25, median, q75) of finite ``values``; NaNs when there are none."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return (float("nan"),) * 3
    q25, median, q75 = np.percentile(arr, [25, 50, 75])
    return float(q25), float(median), float(q75)


def judge(
    ratios: Sequence[float] | np.ndarray | pd.Series, reference_q75: float | None = None
) -> tuple[str, float]:
    """(verdict, margin) for one method's per-pair enqueue/blocked ratios (rule: module docstring),
    given the reference method's upper quartile; ValueError for a negative or no finite ratio."""
    arr = np.asarray(ratios, dtype=float)
    if arr.size == 0 or not np.isfinite(arr).any():
        raise bad_value("ratios", list(arr), "at least one finite enqueue/blocked ratio")
    if (arr[np.isfinite(arr)] < 0).any():
        raise bad_value("ratios", list(arr), "ratios of two durations, >= 0")
    q25, _, q75 = quartiles(arr)
    if reference_q75 is not None and not (reference_q75 < HEAVY_ENOUGH_BELOW):
        return NOT_JUDGED, float("nan")
    if q75 < BOUNDARY:
        return RUNS_AHEAD, BOUNDARY - q75
    if q25 > BOUNDARY:
        return WAITS, q25 - BOUNDARY
    return UNCLEAR, float("nan")


def verdicts(df: pd.DataFrame, reference: str, by: Sequence[str] = (), key: str = "variant") -> pd.DataFrame:
    """One row per (``by`` groups, ``key``): enqueue and blocked ms per call, their ratio's
    quartiles, the verdict and margin; ``reference`` is the ``key`` known to run ahead (jax.jit)."""
    for col in ("dispatch_s_per_call", "wall_s_per_call"):
        if col not in df:
            raise bad_value("df", sorted(df.columns), f"timing rows with a {col!r} column")
    data = df.assign(enqueue_over_blocked=df["dispatch_s_per_call"] / df["wall_s_per_call"])
    groups = data.groupby(list(by), sort=False) if by else [((), data)]
    rows = []
    for labels, part in groups:
        labels = labels if isinstance(labels, tuple) else (labels,)
        ref = part[part[key] == reference]["enqueue_over_blocked"]
        ref_q75 = quartiles(ref)[2] if len(ref) else float("nan")
        for name, sub in part.groupby(key, sort=False):
            ratio = sub["enqueue_over_blocked"]
            verdict, margin = judge(ratio, ref_q75)
            q25, median, q75 = quartiles(ratio)
            rows.append(
                dict(zip(by, labels))
                | {
                    key: name,
                    "enqueue_ms_per_call": 1e3 * float(np.median(sub["dispatch_s_per_call"])),
                    "blocked_ms_per_call": 1e3 * float(np.median(sub["wall_s_per_call"])),
                    **dict(ratio_median=median, ratio_q25=q25, ratio_q75=q75, reference_ratio_q75=ref_q75),
                    **dict(pairs=int(ratio.notna().sum()), verdict=verdict, margin=margin),
                }
            )
    return pd.DataFrame(rows)
