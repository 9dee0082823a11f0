"""Runs ahead or waits: a measured verdict per method, from enqueue-only vs blocked time.

Used by notebooks 01 and 11 and by the diagnosis (:mod:`jaxperf.diagnosis.verdicts`).

A call that returns once its step is enqueued lets a loop of N calls finish enqueueing
long before the N steps have run; a call that waits for its step cannot enqueue faster
than the steps run. So, on a step whose device time is well above its host time, the
ratio ``enqueue_s_per_call / blocked_s_per_call`` (both per call, taken back to back in
the same repeat: :func:`jaxperf.timing.compare`'s ``dispatch_s_per_call`` over its
``wall_s_per_call``) is far below 1 for a method that runs ahead and about 1 for one
that waits. Noise on a shared CPU moves both times together, so the ratio is steadier
than either.

The rule (:func:`judge`), on the per-pair ratios of one method, with one boundary,
:data:`BOUNDARY` = 0.5, halfway between the two cases (a ratio near 0 and a ratio near 1):

- **runs ahead** when the upper quartile of its ratios is below 0.5: in three pairs out
  of four, enqueueing took under half the blocked time;
- **waits for each call** when the lower quartile is above 0.5;
- **unclear** when the interquartile range straddles 0.5 (reported, never guessed);
- **not judged** when the step is too light to tell: the reference method, known to run
  ahead (``jax.jit``), must itself show an upper quartile below
  :data:`HEAVY_ENOUGH_BELOW` (0.25, half the boundary), i.e. its host work is at most a
  quarter of the blocked time; otherwise a method whose host work alone takes most of
  the step would look as if it waited.

The margin reported with a verdict is the distance of the deciding quartile from the
boundary (``0.5 - q75`` or ``q25 - 0.5``): how far the whole spread stays from the line
(NaN when unclear or not judged). A wide margin is what makes the verdict the same from
run to run on a noisy machine, where single times drift by tens of percent.
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
    """(verdict, margin) for one method's per-pair enqueue/blocked ratios (rule: module docstring).

    ``reference_q75`` is the reference method's upper quartile; when it is not below
    :data:`HEAVY_ENOUGH_BELOW` (or is NaN) the step is too light and the verdict is
    :data:`NOT_JUDGED`. Raises ValueError for a ratio that is negative, or for no finite ratio.
    """
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


def with_ratio(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (``timing.compare`` rows) with ``enqueue_over_blocked`` per row (one pair)."""
    for col in ("dispatch_s_per_call", "wall_s_per_call"):
        if col not in df:
            raise bad_value("df", sorted(df.columns), f"timing rows with a {col!r} column")
    out = df.copy()
    out["enqueue_over_blocked"] = out["dispatch_s_per_call"] / out["wall_s_per_call"]
    return out


def verdicts(df: pd.DataFrame, reference: str, by: Sequence[str] = (), key: str = "variant") -> pd.DataFrame:
    """One row per (``by`` groups, ``key``): enqueue and blocked ms per call and their
    ratio (median [q25, q75]), the verdict and its margin. ``reference`` is the ``key``
    value known to run ahead (jax.jit) that tells whether the step is heavy enough, in
    each group; a group without it is judged "not judged"."""
    data = with_ratio(df)
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
            row = dict(zip(by, labels))
            row.update(
                {
                    key: name,
                    "enqueue_ms_per_call": 1e3 * float(np.median(sub["dispatch_s_per_call"])),
                    "blocked_ms_per_call": 1e3 * float(np.median(sub["wall_s_per_call"])),
                    "ratio_median": median,
                    "ratio_q25": q25,
                    "ratio_q75": q75,
                    "reference_ratio_q75": ref_q75,
                    "pairs": int(ratio.notna().sum()),
                    "verdict": verdict,
                    "margin": margin,
                }
            )
            rows.append(row)
    return pd.DataFrame(rows)
