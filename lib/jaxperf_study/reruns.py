"""The study's ranges (:func:`spread_of`): a value measured in several fresh processes with the range
a rerun's median is expected in, a value from one process with its quartiles. A range wider than
:data:`RESOLVED_WIDTH` times its median is quoted "not resolved", never as a number (:func:`quote`:
every summary and the README go through it). The tools time in one process and state quartiles."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from jaxperf.errors import bad_value
from jaxperf.timing import iqr_stats

#: the ``over`` of :func:`spread_of`: what ``lo`` and ``hi`` are
OVER = ("processes", "quartiles")


def spread_of(values: Any, process: Any = None) -> dict[str, Any]:
    """The study's one way to state a measured value with its spread. With ``process`` (each
    value's process number, as ``Study.measure(processes=n)`` records it): the median of the
    per-process medians, ``lo``/``hi`` where a rerun's is expected (:func:`rerun_range`), ``n`` the
    processes, ``over="processes"``. Without: the median, its quartiles, ``n`` the values,
    ``over="quartiles"``. ValueError for no values, or a ``process`` of another length."""
    if process is None:
        s = iqr_stats(values)
        return {"median": s["median"], "lo": s["q25"], "hi": s["q75"], "n": s["n"], "over": OVER[1]}
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("values=[] is not allowed: expected at least one measurement.")
    labels = np.asarray(process).ravel()
    if labels.size != arr.size:
        raise bad_value("process", f"{labels.size} labels", f"one process number per value ({arr.size})")
    medians = np.array([np.median(arr[labels == k]) for k in np.unique(labels)])
    lo, hi = rerun_range(medians)
    return {"median": float(np.median(medians)), "lo": lo, "hi": hi, "n": int(medians.size), "over": OVER[0]}


_INFLATION = [1.0]  # how much more than its processes' spread says a run's medians move between runs


def set_rerun_inflation(factor: float) -> None:
    """Widen every :func:`rerun_range` from now on by ``factor`` (>= 1; a study sets it from the
    rerun check's calibration): one run's processes share one window of the machine's state."""
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor >= 1:
        raise bad_value("factor", factor, "a number >= 1 (1: the processes' own spread)")
    _INFLATION[0] = float(factor)


def rerun_inflation() -> float:
    """The factor :func:`rerun_range` widens by (:func:`set_rerun_inflation`; 1 unless set)."""
    return _INFLATION[0]


def rerun_range(medians: Any, level: float = 0.95) -> tuple[float, float]:
    """Where the mean of a rerun's ``len(medians)`` per-process medians is expected: Student's t
    prediction interval mean +- t(n-1) * sd * sqrt(2/n) at ``level`` (log scale when every value
    is positive), its half-width times :func:`rerun_inflation`, widened to hold every value; one
    value gives itself. With inflation 1 and alike processes it holds a rerun's median about 95%
    of the time, where the [min, max] of three holds it about 60%."""
    x = np.asarray(medians, dtype=float).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        return float(np.min(x)), float(np.max(x))
    from scipy.stats import t  # jax's own dependency; only a spread over processes needs it

    log = bool(np.all(x > 0))
    y = np.log(x) if log else x
    half = float(t.ppf(0.5 + level / 2, x.size - 1) * y.std(ddof=1) * np.sqrt(2 / x.size)) * _INFLATION[0]
    lo, hi = (np.exp(y.mean() - half), np.exp(y.mean() + half)) if log else (y.mean() - half, y.mean() + half)
    return float(min(lo, x.min())), float(max(hi, x.max()))


#: the widest rerun range, as a multiple of its median, that a number is still quoted with
RESOLVED_WIDTH = 3.0
NOT_RESOLVED = "not resolved"
#: ``r<format><unit>``: a ranged number as :func:`quote` writes it (``r.2f×``, ``r.1f ms``)
RANGED = re.compile(r"^r(?P<spec>[,.\d]*[eEfgG%]?)(?P<unit>.*)$")


def resolved(median: Any, lo: Any, hi: Any) -> bool:
    """Whether a range may be quoted as a number: all three finite and ``hi - lo`` at most
    :data:`RESOLVED_WIDTH` times ``|median|``."""
    values = np.asarray([median, lo, hi], dtype=float)
    return bool(np.isfinite(values).all() and values[2] - values[1] <= RESOLVED_WIDTH * abs(values[0]))


def quote(stat: Any, spec: str) -> str:
    """``stat`` ({median, lo, hi}) as ``"2.71× [2.17, 3.35]"`` for ``spec`` ``"r.2f×"`` (a
    :data:`RANGED` spec: the number's format, then its unit, written after the median); a range
    :func:`resolved` refuses reads "not resolved" with why. ValueError naming ``spec`` or
    ``stat`` when either is not of that form."""
    m = RANGED.match(spec or "")
    if m is None:
        raise bad_value("spec", spec, 'r, a number format and a unit, e.g. "r.2f×" or "r.1f ms"')
    if not (isinstance(stat, dict) and {"median", "lo", "hi"} <= set(stat)):
        raise bad_value("stat", stat, "a {median, lo, hi} value (a measured number with its rerun range)")
    median, lo, hi = (stat[k] for k in ("median", "lo", "hi"))
    if not np.isfinite(np.asarray([median], dtype=float)).all():
        return "not measured"
    if not resolved(median, lo, hi):
        return f"{NOT_RESOLVED} (its processes disagree: their range is wider than {RESOLVED_WIDTH:g}× its median)"
    number = "{:" + m["spec"] + "}"
    return f"{number.format(median)}{m['unit']} [{number.format(lo)}, {number.format(hi)}]"


def spread(df: pd.DataFrame, value: str, by: Sequence[str] = ()) -> pd.DataFrame:
    """:func:`spread_of` of ``df[value]`` for each group of ``by`` (the whole frame when ``by`` is
    empty), over processes where ``df`` has a ``process`` column: columns ``by`` + median, lo, hi,
    n, over. ValueError naming a column that ``df`` lacks."""
    for name in (value, *by):
        if name not in df:
            raise bad_value("value" if name == value else "by", name, f"a column of {list(df.columns)}")
    has_process = "process" in df

    def one(part: pd.DataFrame) -> dict[str, Any]:
        return spread_of(part[value], part["process"] if has_process else None)

    if not by:
        return pd.DataFrame([one(df)])
    rows = [{**dict(zip(by, key, strict=True)), **one(part)} for key, part in df.groupby(list(by), sort=True)]
    return pd.DataFrame(rows, columns=[*by, "median", "lo", "hi", "n", "over"])
