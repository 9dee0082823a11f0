"""Runs ahead or not, for every path of a heavy step: enqueue-only vs blocked time per call.

The heavy train step (an MLP whose device time is far above any path's host time per call)
is diagnosed by the engine a reader runs (:func:`jaxperf.diagnose`, through notebook 01's
cells, :func:`jaxperf.dispatch.cost.run_cell`): wrapped as ``eqx.filter_pmap`` over the
devices and as ``eqx.filter_jit`` on one, with and without donation, every path the engine
derives (the partitioned JAX calls, the drop-ins, the packed paths, Equinox with the proposed
change patched in) proved to compute the same outputs and next state, then timed interleaved:
per round, blocked calls (``wall_s_per_call``) and enqueued calls blocked once after the loop
(``dispatch_s_per_call``). :func:`jaxperf.runs_ahead.verdicts` judges each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ... import runs_ahead as verdict
from ..cost import FAMILIES, Cell, run_cell
from .config import PROBE_REFERENCE, ProbeConfig

#: a path's timing is read after this many seconds of rounds, or when every ratio is within 5%
PROBE_SECONDS = 10.0


@dataclass
class ProbeResult:
    timings: pd.DataFrame  # timing.compare's rows, with method and donated
    verdicts: pd.DataFrame  # one row per (method, donated), with the verdict
    failures: pd.DataFrame  # paths a cell did not time, with why


def run(config: ProbeConfig, n_devices: int, *, progress: Any = None) -> ProbeResult:
    """Diagnose the heavy step per family and donation, keep ``config.methods``, judge."""
    del n_devices  # the pmap family runs over every device, as notebook 01's cells do
    frames, failures = [], []
    for donated in config.donate:
        for family in FAMILIES:
            cell = Cell("train", config.spec, donated, family)
            timings, notes = run_cell(
                cell,
                precision=0.05,
                max_seconds=PROBE_SECONDS,
                min_rounds=config.repeats,
                calls_per_round=config.calls,
            )
            frames.append(timings)
            failures += [{"method": path, "donated": donated, "error": why} for path, why in notes.items()]
            if progress is not None:
                progress.update(1)
    df = pd.concat(frames, ignore_index=True)
    df = df[df["method"].isin(config.methods)].reset_index(drop=True)
    # Whether the step is heavy enough is jax.jit's to say (undonated when timed), for every row.
    ref = verdict.with_ratio(df[df["method"] == PROBE_REFERENCE])
    ref = ref[~ref["donated"]] if (~ref["donated"]).any() else ref
    judged = _judge_all(df, verdict.quartiles(ref["enqueue_over_blocked"])[2])
    return ProbeResult(df, judged, pd.DataFrame(failures, columns=["method", "donated", "error"]))


def _judge_all(df: pd.DataFrame, reference_q75: float) -> pd.DataFrame:
    """One row per (donated, method): enqueue, blocked and host-CPU ms per call (medians), the
    ratio's quartiles, the verdict and its margin, with one reference quartile for all."""
    rows = []
    data = verdict.with_ratio(df)
    for (donated, method), part in data.groupby(["donated", "method"], sort=False):
        label, margin = verdict.judge(part["enqueue_over_blocked"], reference_q75)
        q25, median, q75 = verdict.quartiles(part["enqueue_over_blocked"])
        rows.append(
            {
                "method": method,
                "donated": bool(donated),
                "enqueue_ms_per_call": 1e3 * float(part["dispatch_s_per_call"].median()),
                "blocked_ms_per_call": 1e3 * float(part["wall_s_per_call"].median()),
                "host_cpu_ms_per_call": 1e3 * float(part["cpu_s_per_call"].median()),
                "ratio_median": median,
                "ratio_q25": q25,
                "ratio_q75": q75,
                "reference_ratio_q75": reference_q75,
                "pairs": len(part),
                "verdict": label,
                "margin": margin,
            }
        )
    return pd.DataFrame(rows)
