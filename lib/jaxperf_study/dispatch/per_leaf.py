"""What notebook 01's sweep says in the quantity that carries over: host CPU per call per leaf,
as a path's excess over the baseline's (``jax.pmap`` / ``jax.jit`` on the partitioned state) in
the same cell and round, fitted as ``a + b * leaves`` per process. A quantity measured once per
fresh process (``study.measure(processes=n)``) is quoted as the median of the per-process values
with the range a rerun's median is expected in; a range that holds the verdict's threshold is
not resolved.

The host's time per call is :func:`jaxperf.timing.host_column`'s: the dispatching thread's CPU
time while the loop enqueues, or, where that clock is too coarse for one call (a TPU host's moves
in 10 ms steps), the wall time while the loop enqueues."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from jaxperf import timing
from jaxperf.diagnosis import verdicts

from .. import reruns
from .cost import BASELINE

KEYS = ["step", "model", "kind", "leaves", "donated", "family"]


def host_column(rows: pd.DataFrame) -> str:
    """The records' host time per call (:func:`jaxperf.timing.host_column`)."""
    return timing.host_column(rows)


def pooled(rows: pd.DataFrame, key: str = "repeat") -> pd.DataFrame:
    """``rows`` of every process as the rounds of one run: ``key`` (a round number) made unique
    across processes, so that per-round pairs never mix two processes."""
    if "process" not in rows:
        return rows
    return rows.assign(**{key: rows["process"] * 1_000_000 + rows[key]})


def per_process(rows: pd.DataFrame) -> list[pd.DataFrame]:
    """``rows`` split by the ``process`` that measured them (one part when there is no such column)."""
    if "process" not in rows:
        return [rows]
    return [part for _, part in rows.groupby("process", sort=True)]


def spread(values: Any, threshold: float | None = None) -> dict[str, Any]:
    """:func:`jaxperf_study.reruns.spread_of` of per-process values (the median with the [lo, hi] of
    the values, ``n`` processes); with ``threshold``, ``resolved`` is False when [lo, hi] holds
    it (the processes disagree on its side). NaN everywhere when no value is finite."""
    arr = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if arr.size == 0:
        return {"median": float("nan"), "lo": float("nan"), "hi": float("nan"), "n": 0}
    out = reruns.spread_of(arr, process=np.arange(arr.size))
    if threshold is not None:
        out["resolved"] = not (out["lo"] <= threshold <= out["hi"])
    return out


def excess(timings: pd.DataFrame, method: str) -> pd.DataFrame:
    """Per cell and round: host CPU ms of the family's ``method`` path minus its baseline's."""
    rows = []
    for family, part in timings.groupby("family", sort=False):
        wanted = method if method in set(part["method"]) else None
        if wanted is None:
            continue
        index = [*KEYS, "repeat", *(["process"] if "process" in part else [])]
        cpu = part.assign(host_ms=1e3 * part[host_column(part)]).pivot_table(
            index=index, columns="method", values="host_ms"
        )
        if BASELINE[str(family)] not in cpu or wanted not in cpu:
            continue
        diff = (cpu[wanted] - cpu[BASELINE[str(family)]]).dropna().rename("excess_ms")
        rows.append(diff.reset_index())
    return (
        pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=[*KEYS, "repeat", "excess_ms"])
    )


def _line(leaves: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    b, a = np.polyfit(leaves, values, 1)
    return float(a), float(b)


def fit_per_process(rounds: pd.DataFrame) -> dict[str, Any]:
    """``excess_ms = a + b * leaves`` through each process's cell medians, quoted as the median
    line with the [lo, hi] of ``a`` (ms) and ``b`` (µs per leaf) over the processes."""
    fits = []
    for part in per_process(rounds):
        medians = part.groupby("leaves")["excess_ms"].median()
        if len(medians) >= 2:
            fits.append(_line(medians.index.to_numpy(dtype=float), medians.to_numpy(dtype=float)))
    if not fits:
        raise ValueError(
            f"rounds cover leaves={sorted(rounds['leaves'].unique())}: a cost per leaf needs two leaf counts or more"
        )
    a, b = spread([f[0] for f in fits]), spread([1e3 * f[1] for f in fits])
    return {
        "a_ms": a["median"],
        "a_ms_lo": a["lo"],
        "a_ms_hi": a["hi"],
        "b_us_per_leaf": b["median"],
        "b_us_per_leaf_lo": b["lo"],
        "b_us_per_leaf_hi": b["hi"],
        "processes": b["n"],
        "leaves": [int(x) for x in sorted(rounds["leaves"].unique())],
    }


def against_fit(rounds: pd.DataFrame, line: dict[str, Any]) -> pd.DataFrame:
    """Each cell's measured excess (median, quartiles) beside the line's prediction at its leaves."""
    grouped = rounds.groupby(KEYS, sort=False)["excess_ms"]
    out = grouped.quantile([0.25, 0.5, 0.75]).unstack()
    out.columns = ["excess_ms_q25", "excess_ms", "excess_ms_q75"]
    out = out.reset_index()
    out["predicted_ms"] = line["a_ms"] + 1e-3 * line["b_us_per_leaf"] * out["leaves"]
    slack = 1e-9 + 1e-6 * out["predicted_ms"].abs()  # a line through exact medians lands on them
    out["on_the_line"] = (out["excess_ms_q25"] - slack <= out["predicted_ms"]) & (
        out["predicted_ms"] <= out["excess_ms_q75"] + slack
    )
    return out


def ranges(timings: pd.DataFrame, method: str, over: str, value: str, precision: float) -> dict[str, Any]:
    """``method`` over ``over`` (both of one family, the same donation) in every cell where both
    ran: the per-pair ratio of ``value`` per cell (median, quartiles, verdict), the min and max
    of the cells' medians, and how many cells are faster / slower / a tie / not resolved."""
    rows = []
    for labels, part in pooled(timings).groupby(KEYS, sort=False):
        names = dict(zip(part["method"], part["variant"]))
        if method not in names or over not in names:
            continue
        both = part[part["method"].isin([method, over])]
        table = verdicts.ratios(both, names[over], precision, value)
        row = table[table["variant"] == names[method]].iloc[0].to_dict()
        medians = []
        for proc in per_process(both):
            mine = verdicts.ratios(proc, names[over], precision, value)
            medians.append(float(mine.loc[mine["variant"] == names[method], "median"].iloc[0]))
        found = spread(medians, 1.0)
        row.update({k: found[k] for k in ("median", "lo", "hi")}, processes=found["n"])
        if row["verdict"] in (verdicts.FASTER, verdicts.SLOWER) and not found["resolved"]:
            row["verdict"] = verdicts.UNRESOLVED  # the processes disagree on the side of 1
        rows.append({**dict(zip(KEYS, labels)), **row})
    cells = pd.DataFrame(rows)
    if cells.empty:
        return {"cells": cells, "n": 0}
    counts = cells["verdict"].value_counts().to_dict()
    return {
        "cells": cells,
        "n": len(cells),
        "min": float(cells["median"].min()),
        "max": float(cells["median"].max()),
        "counts": {
            k: int(counts.get(k, 0))
            for k in (verdicts.FASTER, verdicts.SLOWER, verdicts.TIE, verdicts.UNRESOLVED)
        },
    }


def host_ratio(timings: pd.DataFrame, method: str, cells: dict[str, Any]) -> list[dict[str, Any]]:
    """Per cell matching ``cells`` (column -> value): ``method``'s host CPU per call over its
    family's baseline's, the median of per-round ratios in each process, quoted as
    :func:`spread` over the processes (threshold 1): the form of the cost that carries to
    another machine, where a per-leaf line may not."""
    data = timings
    for key, value in cells.items():
        data = data[data[key] == value]
    out = []
    for family, part in data.groupby("family", sort=False):
        base = BASELINE[str(family)]
        if not {method, base} <= set(part["method"]):
            continue
        for labels, cell in part.groupby(KEYS, sort=True):
            medians = []
            for proc in per_process(cell):
                cpu = proc.pivot_table(index="repeat", columns="method", values=host_column(proc))
                if method in cpu and base in cpu:
                    both = cpu[[method, base]].dropna()
                    medians.append(float((both[method] / both[base]).median()))
            out.append({**dict(zip(KEYS, labels)), **spread(medians, 1.0)})
    return out


#: the sizes a model family's line is drawn through, at least: two points make any line
LINE_SIZES = 3


def by_kind(rounds: pd.DataFrame) -> dict[str, Any]:
    """One :func:`fit_per_process` per model family (``kind``) over that family's cells in
    ``rounds``; a family measured at fewer than :data:`LINE_SIZES` sizes is left out (two points
    make a line whatever the cost's shape)."""
    return {
        str(kind): fit_per_process(part)
        for kind, part in rounds.groupby("kind", sort=True)
        if part["leaves"].nunique() >= LINE_SIZES
    }
