"""Verdicts from interleaved timings, for :func:`jaxperf.diagnosis.diagnose` and the studies. A speed
ratio is taken per pair (one round) and summarised by its median and IQR: **faster** /
**slower** when the whole IQR lies above / below 1; **a tie** when it holds 1 and its
relative half-width is within the precision target; else **not resolved** (more rounds, or a
quieter machine, could still separate them), never called a tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import timing

FASTER, SLOWER, TIE, UNRESOLVED = "faster", "slower", "a tie", "not resolved"
RATIO_COLUMNS = ["variant", "value", "median", "q25", "q75", "pairs", "rel_iqr", "verdict"]


def judge(q25: float, median: float, q75: float, precision: float) -> str:
    """One of :data:`FASTER`, :data:`SLOWER`, :data:`TIE`, :data:`UNRESOLVED`."""
    if q25 > 1:
        return FASTER
    if q75 < 1:
        return SLOWER
    width = (q75 - q25) / (2 * median) if median else float("inf")
    return TIE if width <= precision else UNRESOLVED


def ratio_text(row: dict[str, Any] | pd.Series) -> str:
    """ "1.93x [1.80, 2.10]", or "a tie: 1.01x [0.98, 1.03]", or "not resolved: ..."."""
    numbers = f"{row['median']:.2f}x [{row['q25']:.2f}, {row['q75']:.2f}]"
    return numbers if row["verdict"] in (FASTER, SLOWER) else f"{row['verdict']}: {numbers}"


def ratios(timings: pd.DataFrame, reference: str, precision: float, value: str) -> pd.DataFrame:
    """Per variant: the per-pair ``value`` ratio to ``reference`` (quartiles, pairs, IQR), judged."""
    paired = timing.pair_ratios(timings, reference, value)
    rows = []
    for name, part in paired[paired["variant"] != reference].groupby("variant", sort=False):
        q25, median, q75 = np.percentile(part["ratio"].to_numpy(dtype=float), [25, 50, 75])
        verdict = judge(q25, median, q75, precision)
        stats = (float(median), float(q25), float(q75), len(part), timing.relative_iqr(part["ratio"]))
        rows.append(dict(zip(RATIO_COLUMNS, (name, value, *stats, verdict))))
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)


def per_call(timings: pd.DataFrame) -> pd.DataFrame:
    """Per variant, medians and quartiles in ms per call: the host's time (``host_ms``,
    :func:`jaxperf.timing.host_column`), blocked wall (``blocked_ms``), enqueue (``enqueue_ms``), the
    wait (``wait_ms`` = blocked wall - host, per round), and pipelined ``loop_ms``."""
    host = timings[timing.host_column(timings, blocked=True)]
    data = timings.assign(
        host_ms=1e3 * host,
        blocked_ms=1e3 * timings["wall_s_per_call"],
        enqueue_ms=1e3 * timings["dispatch_s_per_call"],
        wait_ms=1e3 * (timings["wall_s_per_call"] - host),
        loop_ms=1e3 / timings["loop_it_per_s"],
    )
    rows = []
    for name, part in data.groupby("variant", sort=False):
        row: dict[str, Any] = {"variant": name}
        for col in ("host_ms", "blocked_ms", "enqueue_ms", "wait_ms", "loop_ms"):
            q25, median, q75 = np.percentile(part[col].to_numpy(dtype=float), [25, 50, 75])
            row.update({col: float(median), f"{col}_q25": float(q25), f"{col}_q75": float(q75)})
        rows.append(row)
    return pd.DataFrame(rows)


def bound(row: dict[str, Any] | pd.Series, device_ms: float) -> str:
    """Where a path's time per blocked call goes: host-bound when its host time exceeds
    ``device_ms``, the step's device time per call."""
    host = row["host_ms"]
    kind = "host-bound" if host > device_ms else "device-bound"
    device = f"about {device_ms:.3g} ms" if device_ms >= 0.01 else "less than 0.01 ms"
    return f"{kind}: {host:.3g} ms of host time per call against {device} of device time"
