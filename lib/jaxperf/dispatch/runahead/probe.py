"""Runs ahead or not, for every dispatch method: enqueue-only vs blocked time on a heavy step.

Each (method, donation) of :data:`jaxperf.dispatch.runahead.methods.ALL` (every dispatch method, and
``eqx.filter_jit`` with the proposed change) is built for the train step
on an MLP whose device time is far above any method's host time per call (a few
``width`` x ``width`` products per example, ``batch_per_device`` examples per device), proved
to compute the same (loss, params, opt_state) as ``jax.jit`` on params (one device), then
timed interleaved by :func:`jaxperf.timing.compare`: per repeat, ``calls`` blocked calls
(``wall_s_per_call``) and ``calls`` enqueued calls blocked once after the loop
(``dispatch_s_per_call``). :func:`jaxperf.runs_ahead.verdicts` judges each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ... import runs_ahead as verdict
from ... import timing
from ..methods import Runner, variant_name
from ..sweep import same_result, sync
from .config import ALL as ALL
from .config import REFERENCE, ProbeConfig
from .methods import build

ATOL = 1e-5


@dataclass
class ProbeResult:
    timings: pd.DataFrame  # timing.compare's rows, with method and donated
    verdicts: pd.DataFrame  # one row per variant (verdict.verdicts), with method and donated
    failures: pd.DataFrame  # (method, donated) pairs that could not run, with the error


def run(config: ProbeConfig, n_devices: int, *, progress: Any = None) -> ProbeResult:
    """Build, check against jax.jit on params, time, judge (module docstring)."""
    spec = config.spec
    model, opt_state = spec.build()
    x = spec.batch(n_devices)
    pairs = [(REFERENCE, False)] + [
        (m, d) for d in config.donate for m in config.methods if (m, d) != (REFERENCE, False)
    ]
    runners: dict[str, Runner] = {}
    failures, reference = [], None
    for method, donated in pairs:
        try:
            runner = build(method, "train", model, opt_state, x, n_devices, donate=donated)
            got = runner.canonical(runner.call())
        except Exception as err:  # noqa: BLE001 -- recorded, shown in the notebook
            failures.append(
                {"method": method, "donated": donated, "error": f"{type(err).__name__}: {err}"[:300]}
            )
            continue
        reference = got if reference is None else reference
        # atol 1e-5: the mapped methods take the batch mean as a pmean of 8 shard means; one Adam
        # step magnifies that reassociation in near-zero gradient entries (5.6e-6 measured on this
        # model), while a missing all-reduce would move entries by about the learning rate, 1e-3.
        if not same_result(reference, got, atol=ATOL):
            raise AssertionError(
                f"method {variant_name(method, donated)!r} does not compute the same pytree as jax.jit"
            )
        runners[variant_name(method, donated)] = runner
    if False not in config.donate:
        runners.pop(REFERENCE)  # built as the reference only
    df = timing.compare(
        {name: r.call for name, r in runners.items()},
        config.timing,
        sync=sync,
        progress=progress,
        model=spec.name,
        width=config.width,
    )
    df.insert(
        df.columns.get_loc("variant") + 1,
        "method",
        df["variant"].map({n: r.method for n, r in runners.items()}),
    )
    df.insert(
        df.columns.get_loc("method") + 1,
        "donated",
        df["variant"].map({n: r.donated for n, r in runners.items()}),
    )
    # Whether the step is heavy enough is jax.jit's to say (undonated when timed), for every row.
    ref = verdict.with_ratio(df[df["method"] == REFERENCE])
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
