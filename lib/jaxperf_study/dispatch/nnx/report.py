"""summary.json and summary.md of notebook 11: the cost per call per Variable of each way to call
an NNX step, the accounting of one ``nnx.jit`` call's gap, the drop-in's ranges over every case,
whether calls run ahead, Flax's own benchmark and tests (and the project's goals, kept apart).

The per-Variable lines and the ranges are notebook 01's (:mod:`jaxperf_study.dispatch.report`,
:mod:`jaxperf_study.dispatch.per_leaf`) applied to the NNX cells: one vocabulary and one arithmetic,
each number the median over fresh processes with the range a rerun's median is expected in. The prose is
``templates/summary.md``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from jaxperf import runs_ahead, timing

from ... import goals as rule
from ... import pages as md
from ... import reruns
from .. import accounting as dispatch_accounting
from .. import per_leaf
from .. import report as dispatch_report
from .stages import CALLS

BASELINE = "nnx_split_jit"
DROP_IN = "cached_nnx_jit"
#: every path set against jax.jit on nnx.split state, graph mode first
PATHS = ("nnx_jit", "nnx_tree", "nnx_cached_partial", "nnx_jit_partial", DROP_IN, "nnx_split_leaves_jit")
LABELS = {
    "nnx_jit": "`nnx.jit` (graph mode)",
    "nnx_tree": "`nnx.jit` tree mode",
    "nnx_cached_partial": "`nnx.cached_partial`",
    "nnx_jit_partial": "`nnx.jit_partial`",
    DROP_IN: "`jaxperf.cached_nnx_jit`",
    "nnx_split_leaves_jit": "`jax.jit` on the split state's leaves",
    BASELINE: "`jax.jit` on `nnx.split` state",
}
FIT_CELLS = {"step": "noop", "kind": "mlp"}
#: the project's goal: the drop-in's time per call within 1.2x the baseline's (it/s >= 1/1.2; issue 63)
GOAL_PER_CALL = 1.2
#: the accounting's parts: stages of the staged nnx.jit call (:data:`jaxperf_study.dispatch.nnx.stages.STAGES`)
PARTS: dict[str, tuple[str, ...]] = {
    "graph walk (graphlib.flatten)": ("split: graph walk (graphlib.flatten)",),
    "split, the rest": ("split: the rest (pure pytrees)",),
    "graph rebuild and updates (graphlib.unflatten)": (
        "merge: graph rebuild and updates (graphlib.unflatten)",
    ),
    "merge and update context, the rest": (
        "merge: the rest",
        "enter the update context",
        "leave the update context",
    ),
    "inner jax.jit call's excess": (
        "inner jax.jit call (dispatch)",
        "wait for execution",
        "free the outputs",
    ),
}
INNER = "inner jax.jit call's excess"


def accounting(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (step, depth) and part: ms per call in the accounting's clock (the thread's CPU, or the
    wall time where that clock is too coarse: :func:`jaxperf_study.dispatch.accounting.clock`;
    median, quartiles) over the rounds of
    :func:`jaxperf_study.dispatch.nnx.stages.call_breakdown`; the inner call's excess is over the ``jax.jit``
    call on ``nnx.split`` state of the same round, the gap is the ordinary ``nnx.jit`` call's
    over that one, and unexplained is the gap minus the parts."""
    out = []
    rows = per_leaf.pooled(rows, "round")
    for (step, depth), part in rows.groupby(["step", "depth"], sort=False):
        rounds = dispatch_accounting.per_round(part, PARTS, CALLS, INNER)
        for name in [*PARTS, "unexplained", "gap"]:
            stats = timing.iqr_stats(rounds[name])
            out.append(
                {
                    "step": step,
                    "depth": depth,
                    "part": name,
                    "cpu_ms": stats["median"],
                    "cpu_ms_q25": stats["q25"],
                    "cpu_ms_q75": stats["q75"],
                }
            )
    return pd.DataFrame(out)


def waits(timings: pd.DataFrame) -> pd.DataFrame:
    """Runs ahead or waits, per path, on the heavy cell (the wide train step), every process's
    rounds together."""
    heavy = timings[timings["kind"] == "wide mlp"]
    if heavy.empty:
        return pd.DataFrame(columns=["method", "verdict"])
    return runs_ahead.verdicts(per_leaf.pooled(heavy), BASELINE, key="method")


def _test_totals(flax_tests: dict[str, Any] | None) -> dict[str, dict[str, int]] | None:
    """Passed, failed, error and skipped, summed over Flax's test files, ``shipped`` (as Flax
    ships ``nnx.jit``) and ``dropin`` (the drop-in patched in under that name)."""
    if not flax_tests:
        return None
    counts = pd.DataFrame(flax_tests["counts"])
    totals = counts.groupby("mode")[["passed", "failed", "error", "skipped"]].sum()
    names = {"nnx.jit": "shipped", "cached_nnx_jit": "dropin"}
    return {names[str(mode)]: {k: int(v) for k, v in row.items()} for mode, row in totals.iterrows()}


def own_lines(timings: pd.DataFrame) -> dict[str, Any]:
    """Per path (the baseline included): its own host time per call fitted as ``a + b *
    Variables`` on the no-op cases, per process (:func:`jaxperf_study.dispatch.per_leaf.fit_per_process`),
    not over a baseline: a path cheaper per Variable than the baseline would read as a negative excess."""
    rows = dispatch_report.fit_rows(timings, FIT_CELLS)
    out = {}
    for method in (*PATHS, BASELINE):
        part = rows[rows["method"] == method]
        if part["leaves"].nunique() >= 2:
            out[method] = per_leaf.fit_per_process(
                part.assign(excess_ms=1e3 * part[per_leaf.host_column(part)])
            )
    return out


def headline(
    timings: pd.DataFrame,
    notes: pd.DataFrame,
    stage_rows: pd.DataFrame,
    overhead: pd.DataFrame,
    flax_tests: dict[str, Any] | None,
    *,
    precision: float,
    quick: bool,
) -> dict[str, Any]:
    """Everything summary.md states, as data."""
    lines = dispatch_report.cost_lines(timings, PATHS, FIT_CELLS)
    summary: dict[str, Any] = {
        "study": "nnx",
        "quick": quick,
        "precision": precision,
        "per_variable": {m: {k: v for k, v in line.items() if k != "by_cell"} for m, line in lines.items()},
        "per_variable_cells": {m: line["by_cell"] for m, line in lines.items()},
        "own_per_variable": own_lines(timings),
        "variables": sorted(int(v) for v in timings.loc[timings["kind"] == "mlp", "leaves"].unique()),
        "ranges": {
            f"{m}/{BASELINE}": dispatch_report.ranges_of(
                timings[timings["kind"] == "mlp"], m, BASELINE, precision
            )
            for m in PATHS
        },
        "waits": waits(timings).to_dict(orient="records"),
        "processes": int(timings["process"].nunique()) if "process" in timings else 1,
        "runs": dispatch_report._per_case(timings, "run"),  # the intro's words, as the dispatch study's
        "rerun_inflation": reruns.rerun_inflation(),
        "clock": {
            "cpu_tick_ms": 1e3 * float(timings["cpu_tick_s"].max()) if "cpu_tick_s" in timings else None,
            "host_column": per_leaf.host_column(timings),
            "host": timing.host_measure(timings),
        },
        "accounting": accounting(stage_rows).to_dict(orient="records"),
        "accounting_clock": dispatch_report.ACCOUNTING_CLOCKS[dispatch_accounting.clock(stage_rows)]
        if len(stage_rows)
        else None,
        "flax_benchmark": overhead.drop(columns="process", errors="ignore")
        .drop_duplicates()
        .to_dict(orient="records"),
        "flax_tests": flax_tests,
        "flax_tests_totals": _test_totals(flax_tests),
        "not_timed": notes.to_dict(orient="records"),
    }
    summary["goals"] = {} if quick else goals(summary)
    return summary


def goals(summary: dict[str, Any]) -> dict[str, Any]:
    """The drop-in within 1.2x of ``jax.jit`` on split state per call in every case, both measures."""
    out = {}
    for measure, found in summary["ranges"][f"{DROP_IN}/{BASELINE}"].items():
        verdicts = [rule.judge(c, 1 / GOAL_PER_CALL) for c in found["by_cell"]]
        out[f"{DROP_IN} time per call <= {GOAL_PER_CALL}x {BASELINE}, {measure}, every case"] = {
            "verdict": rule.every(verdicts),
            "count": rule.count(verdicts),
        }
    return out


def render(summary: dict[str, Any], info: Any) -> str:
    """summary.md: the answer bullets of ``templates/summary.md``, then every case, the
    accounting and Flax's tests folded."""
    intro = [
        md.smoke_notice(summary["quick"]),
        md.fill(md.template("jaxperf_study.dispatch", "intro.md"), {**summary, "info": vars(info)}),
    ]
    filled = md.fill(md.template("jaxperf_study.dispatch.nnx", "summary.md"), summary)
    bullets = ["- " + b.strip() for b in ("\n" + filled).split("\n- ") if b.strip()]
    folded = md.details(
        "Benchmark goals (the project's own)",
        [f"- {md.escape(name)}: **{rule.text(g['verdict'], False)}**" for name, g in summary["goals"].items()]
        or ["- not judged (smoke run)"],
    )
    if summary["accounting"]:
        folded += md.details(
            f"The accounting, every part (ms per call, in {summary.get('accounting_clock') or 'no clock'})",
            md.table(pd.DataFrame(summary["accounting"])),
        )
    for key, found in summary["ranges"].items():
        cells = pd.DataFrame(found["loop_it_per_s"]["by_cell"])
        if len(cells):
            title = (
                f"{key} it/s, a loop that blocks once at its end: every case (median over processes; "
                "lo, hi: where a rerun's median is expected, 95%)"
            )
            folded += md.details(title, md.table(cells[["step", "leaves", "median", "lo", "hi", "verdict"]]))
    if summary.get("flax_tests"):
        folded += md.details(
            "Flax's tests per file, as shipped and with the drop-in",
            md.table(pd.DataFrame(summary["flax_tests"]["counts"])),
        )
    if summary["not_timed"]:
        folded += md.details("Paths not timed, and why", md.table(pd.DataFrame(summary["not_timed"])))
    return md.answer_page("Flax NNX: what nnx.jit costs per call, per Variable", intro, bullets, folded)
