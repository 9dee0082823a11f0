"""What the seed's loop measured: bounds, overlap, per-pair ratios and the goals.

Per (step, loader cost, repeat), from the parts timed alone in the same repeat: H, the
loader and the transfer per batch; D, the step per call. The two bounds on a loop's
rate are ``1 / max(H, D)`` (host and device overlap fully) and ``1 / (H + D)`` (they
add up); a loop's **overlap** is ``(H + D - T) / min(H, D)`` for its time T per batch:
1 when it reaches the first bound, 0 at the second, below 0 when it is slower than
doing the two one after the other (contention); not defined (NaN) where the shorter of H
and D is under a tenth of the longer, as at loader cost 0 or on the no-op step. Ratios between methods are per pair
(same step, cost and repeat), summarised as median [q25, q75]; a ratio whose IQR holds 1
is a tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import goals as goals_
from ...timing import iqr_stats
from .config import FIX, LOADER_ALONE, REFERENCE, SLOW, STEP_ALONE

#: the goal's band of loader cost, as a share of the step's device time (H / D)
GOAL_BAND = (0.3, 1.0)
GOAL_VS_SLOW = 1.3

KEYS = ["step", "cost_fraction", "repeat"]
#: jax.jit's overlap (median, at H = D) from which a backend is said to show the cost of waiting
SHOWS_OVERLAP = 0.5
#: the overlap is reported only where the shorter of H and D is at least this share of the longer
MIN_SHARE = 0.1


def cells(timings: pd.DataFrame) -> pd.DataFrame:
    """One row per (step, cost, repeat, method): the loop's ms per batch and it/s, H and D
    of that repeat, both bounds, the overlap, and the per-pair it/s ratios to jax.jit on
    params and to eqx.filter_jit (NaN where that method was not timed)."""
    alone_d = timings[timings["variant"] == STEP_ALONE][["step", "repeat", "s_per_batch"]]
    alone_h = timings[timings["variant"] == LOADER_ALONE][KEYS + ["s_per_batch"]]
    loops = timings[~timings["variant"].isin([STEP_ALONE, LOADER_ALONE])]
    out = loops.merge(alone_h.rename(columns={"s_per_batch": "H_s"}), on=KEYS).merge(
        alone_d.rename(columns={"s_per_batch": "D_s"}), on=["step", "repeat"]
    )
    out = out.rename(columns={"variant": "method"})
    out["T_s"] = out["s_per_batch"]
    out["ms_per_batch"] = 1e3 * out["T_s"]
    out["H_ms"], out["D_ms"] = 1e3 * out["H_s"], 1e3 * out["D_s"]
    out["H_over_D"] = out["H_s"] / out["D_s"]
    out["overlap_bound_it_per_s"] = 1.0 / np.maximum(out["H_s"], out["D_s"])
    out["serial_bound_it_per_s"] = 1.0 / (out["H_s"] + out["D_s"])
    shorter, longer = np.minimum(out["H_s"], out["D_s"]), np.maximum(out["H_s"], out["D_s"])
    overlap = (out["H_s"] + out["D_s"] - out["T_s"]) / shorter
    # Nothing to overlap when one part is under a tenth of the other: the overlap is then noise over a tiny denominator.
    out["overlap"] = overlap.where(shorter >= MIN_SHARE * longer)
    for other, column in ((REFERENCE, "ratio_to_jit"), (SLOW, "ratio_to_filter_jit")):
        base = out[out["method"] == other][KEYS + ["it_per_s"]].rename(columns={"it_per_s": "_base"})
        if base.empty:
            out[column] = np.nan
            continue
        out = out.merge(base, on=KEYS, how="left")
        out[column] = out["it_per_s"] / out["_base"]
        out = out.drop(columns="_base")
    return out.drop(columns=["H_s", "D_s", "T_s", "s_per_batch"])


def _stat(values: pd.Series) -> dict[str, float]:
    values = values.dropna()
    if values.empty:
        return {"median": np.nan, "q25": np.nan, "q75": np.nan, "n": 0}
    return iqr_stats(values)


def table(per_cell: pd.DataFrame) -> pd.DataFrame:
    """One row per (step, cost, method): medians [q25, q75] of it/s, of the ratios and of
    the overlap; H, D and H/D (medians); both bounds (from the median H and D)."""
    rows = []
    for (step, fraction, method), part in per_cell.groupby(["step", "cost_fraction", "method"], sort=False):
        row: dict[str, Any] = {"step": step, "cost_fraction": fraction, "method": method}
        for column in ("it_per_s", "ratio_to_jit", "ratio_to_filter_jit", "overlap"):
            stats = _stat(part[column])
            row.update({f"{column}_{k}": stats[k] for k in ("median", "q25", "q75")})
        h, d = float(part["H_ms"].median()), float(part["D_ms"].median())
        row.update(
            H_ms=h,
            D_ms=d,
            H_over_D=float(part["H_over_D"].median()),
            overlap_bound_it_per_s=1e3 / max(h, d),
            serial_bound_it_per_s=1e3 / (h + d),
            pairs=int(part["it_per_s"].notna().sum()),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def jit_overlap(summary: pd.DataFrame, step: str = "train") -> dict[str, Any]:
    """How much jax.jit on params overlaps the loader with the step here: its overlap
    (median [q25, q75]) at the cost closest to H = D, and the largest median over costs > 0."""
    part = summary[
        (summary["method"] == REFERENCE) & (summary["step"] == step) & (summary["cost_fraction"] > 0)
    ]
    if part.empty:
        return {"measured": False}
    at = part.iloc[int(np.argmin(np.abs(np.log(part["H_over_D"].clip(lower=1e-9)))))]
    overlap = {k: float(at[f"overlap_{k}"]) for k in ("median", "q25", "q75")}
    return {
        "measured": True,
        "step": step,
        "at_H_over_D": float(at["H_over_D"]),
        "overlap": overlap,
        "best_median": float(part["overlap_median"].max()),
        # Where jax.jit itself overlaps less than half, a method that waits cannot lose much to
        # it: the loop cannot show the cost of waiting here (the verdict still can).
        "shows_overlap": bool(overlap["median"] >= SHOWS_OVERLAP),
    }


def goals(summary: pd.DataFrame, fix: str = FIX) -> dict[str, Any]:
    """The issue's goals for ``fix`` in the seed's loop: a tie with or better than jax.jit on
    params in every cell (the per-pair ratio's upper quartile at least 1), and at least
    1.3x eqx.filter_jit in every cell with 0.3 <= H/D <= 1, judged on each per-pair ratio's
    interquartile range (met / tie / not met; None when no train cell lies in the band).
    "not measured" when ``fix`` was not timed."""
    mine = summary[summary["method"] == fix]
    if mine.empty:
        return {"measured": False, "reason": f"{fix} was not timed in this run"}
    vs_jit = [
        {
            "step": r.step,
            "cost_fraction": r.cost_fraction,
            "median": r.ratio_to_jit_median,
            "q75": r.ratio_to_jit_q75,
        }
        for r in mine.itertuples()
    ]
    band = mine[
        (mine["H_over_D"] >= GOAL_BAND[0]) & (mine["H_over_D"] <= GOAL_BAND[1]) & (mine["step"] == "train")
    ]
    vs_slow = [
        {
            "step": r.step,
            "cost_fraction": r.cost_fraction,
            "H_over_D": r.H_over_D,
            "median": r.ratio_to_filter_jit_median,
            "q25": r.ratio_to_filter_jit_q25,
            "q75": r.ratio_to_filter_jit_q75,
        }
        for r in band.itertuples()
    ]
    return {
        "measured": True,
        "ties_or_beats_jit_everywhere": bool(all(c["q75"] >= 1.0 for c in vs_jit)),
        "vs_jit": vs_jit,
        "band": list(GOAL_BAND),
        "cells_in_band": len(vs_slow),
        # judged on each cell's spread (jaxperf.goals): "tie" when a range holds 1.3 and none
        # misses; None (n/a) when no train cell falls in the band: nothing there to judge
        "at_least_1_3x_filter_jit_in_band": goals_.every(goals_.judge(c, GOAL_VS_SLOW) for c in vs_slow)
        if vs_slow
        else None,
        "vs_filter_jit_in_band": vs_slow,
    }
