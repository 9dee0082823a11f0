"""Runs ahead or waits: a verdict per path from its enqueue-only over its blocked time per call
(:func:`jaxperf.timing.compare`'s ``dispatch_s_per_call / wall_s_per_call``, back to back in a round).

A path that returns once its call is enqueued enqueues in its host time H and blocks in H + D + s
(D: the device's time; s: collecting the outputs); one that waits enqueues in H + D, and its time
after enqueuing (blocked - enqueue) is s alone. :func:`judge`: **not judged** unless the reference
(``jax.jit``, which runs ahead) shows more device than host time, the upper quartile of its ratios
below :data:`BOUNDARY` (1/2); then a path **runs ahead** where its upper quartile is below 1/2, and
**waits for each call** where its lower quartile is above 1/2 and its median time after enqueuing
is under half the reference's (its calls return with the device's work done; else its host time
exceeds the device's, its ratio is as high either way: **not judged**); **unclear** otherwise.
On a TPU v5e (2b842c2, notebook 01's train step on mlp_depth16_x128): ``jax.jit`` 0.30-0.33, the
paths that run ahead 0.08-0.39, ``eqx.filter_jit`` 0.78-0.81 (0.80 ms after enqueuing against the
reference's 2.17), ``eqx.filter_pmap`` (4.7 ms of host time) 0.77-0.81 (1.25 ms): every verdict
right, where the rule before (the reference's upper quartile below 0.25) judged none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pandas as pd

from .errors import bad_value

BOUNDARY = 0.5
Values: TypeAlias = Sequence[float] | np.ndarray | pd.Series
RUNS_AHEAD, WAITS, UNCLEAR, NOT_JUDGED = "runs ahead", "waits for each call", "unclear", "not judged"


def quartiles(values: Values) -> tuple[float, float, float]:
    """(q25, median, q75) of finite ``values``; NaNs when there are none."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return (float("nan"),) * 3
    q25, median, q75 = np.percentile(arr, [25, 50, 75])
    return float(q25), float(median), float(q75)


def judge(ratios: Values, reference_q75: float | None = None, after: float = 0.0) -> str:
    """The verdict on one path's per-round ``ratios``, given the reference's upper quartile and the
    path's median time after enqueuing over the reference's; ValueError for a negative or no ratio."""
    arr = np.asarray(ratios, dtype=float)
    if arr.size == 0 or not np.isfinite(arr).any():
        raise bad_value("ratios", list(arr), "at least one finite enqueue/blocked ratio")
    if (arr[np.isfinite(arr)] < 0).any():
        raise bad_value("ratios", list(arr), "ratios of two durations, >= 0")
    q25, _, q75 = quartiles(arr)
    if reference_q75 is not None and not (reference_q75 < BOUNDARY):
        return NOT_JUDGED
    if q75 < BOUNDARY:
        return RUNS_AHEAD
    if q25 > BOUNDARY:
        return WAITS if after < BOUNDARY else NOT_JUDGED
    return UNCLEAR


def verdicts(df: pd.DataFrame, reference: str, by: Sequence[str] = (), key: str = "variant") -> pd.DataFrame:
    """One row per (``by`` groups, ``key``): enqueue, blocked and after-enqueue ms per call (medians),
    the ratio's and the reference's quartiles, the verdict; ``reference``: the ``key`` of jax.jit."""
    for col in ("dispatch_s_per_call", "wall_s_per_call"):
        if col not in df:
            raise bad_value("df", sorted(df.columns), f"timing rows with a {col!r} column")
    data = df.assign(
        enqueue_over_blocked=df["dispatch_s_per_call"] / df["wall_s_per_call"],
        after_ms=1e3 * (df["wall_s_per_call"] - df["dispatch_s_per_call"]),
    )
    groups = data.groupby(list(by), sort=False) if by else [((), data)]
    rows = []
    for labels, part in groups:
        labels = labels if isinstance(labels, tuple) else (labels,)
        ref = part[part[key] == reference]
        ref_q75, ref_after = quartiles(ref["enqueue_over_blocked"])[2], ref["after_ms"].median()
        for name, sub in part.groupby(key, sort=False):
            ratio, after = sub["enqueue_over_blocked"], float(sub["after_ms"].median())
            q25, median, q75 = quartiles(ratio)
            verdict = judge(ratio, ref_q75, after / ref_after if ref_after > 0 else np.inf)
            rows.append(
                dict(zip(by, labels))
                | {key: name, "enqueue_ms_per_call": 1e3 * sub["dispatch_s_per_call"].median()}
                | dict(blocked_ms_per_call=1e3 * sub["wall_s_per_call"].median(), after_ms_per_call=after)
                | dict(ratio_median=median, ratio_q25=q25, ratio_q75=q75, reference_ratio_q75=ref_q75)
                | dict(pairs=int(ratio.notna().sum()), verdict=verdict)
            )
    return pd.DataFrame(rows)
