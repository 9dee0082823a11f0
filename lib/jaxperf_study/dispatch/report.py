"""summary.json and summary.md of notebook 01: the cost per call per leaf, what it means for
the seed's loop, one accounting, which paths wait for each call, the fixes' ranges over every
case, and the project's own goals (kept apart).

Every number comes from the records (the sweep's timings, :mod:`.cost`, and the accounting's
rounds, :mod:`.accounting`), each measured in several fresh processes: a number the answer
quotes is the median of its per-process values with their rerun range (:func:`per_leaf.spread`).
The prose is ``templates/summary.md``; Python computes only the numbers and the folded tables.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from jaxperf import runs_ahead, timing

from .. import goals as rule
from .. import pages as md
from .. import reruns
from . import accounting, per_leaf
from .cost import BASELINE, FAMILIES, FIX, PACKED, RECIPE, SLOW
from .predict import beside
from .vocab import SHARDED

#: the it/s measures every range is stated in, with the words a summary uses for them
MEASURES = {
    "loop_it_per_s": "in a loop that blocks once at its end",
    "it_per_s": "with each call blocked",
}
#: Equinox's wrappers with the study's proposed change patched in (jaxperf_study.dispatch.eqx_patch)
PATCHED = ("filter_pmap_patched", "filter_jit_patched")
#: Equinox's own low-overhead recipe (docs/tricks.md), which the drop-ins and the patch are set against too
RECIPES = tuple(RECIPE.values())
#: the project's own goals (judged in <details> only): the fix vs the baseline, every cell;
#: the packed path vs the baseline with the same donation, the no-op step at GOAL_PACKED_LEAVES
#: leaves (else the largest); the patched Equinox within 1.10x of the baseline, every cell
GOAL_FIX, GOAL_PACKED_NOOP, GOAL_PATCHED = 0.95, 10.0, 1 / 1.10
GOAL_PACKED_LEAVES = 392
#: which cells a line is fitted on: the undonated no-op step on the MLPs
FIT_CELLS = {"step": "noop", "kind": "mlp", "donated": False}
#: the train step under eqx.filter_jit whose device time is far above any path's host time: the
#: wide one (``_width``) or the one with accumulated microbatches (``_x``), donated or not
HEAVY = {"step": "train", "family": "jit"}


#: what the accounting's clock (:func:`accounting.clock`) is, in words
ACCOUNTING_CLOCKS = {
    "cpu_ms": "the dispatching thread's CPU time",
    "wall_ms": "wall time (the thread's CPU clock is too coarse for a stage here)",
}


def fit_rows(rounds: pd.DataFrame, fit_cells: dict[str, Any] = FIT_CELLS) -> pd.DataFrame:
    """The rows of the cells a line is fitted on (``fit_cells``: column -> value)."""
    mask = pd.Series(True, index=rounds.index)
    for key, value in fit_cells.items():
        mask &= rounds[key] == value
    return rounds[mask]


def cost_lines(
    timings: pd.DataFrame, methods: tuple[str, ...], fit_cells: dict[str, Any] = FIT_CELLS
) -> dict[str, Any]:
    """Per method: its excess host CPU per call over its family's baseline, fitted as
    ``a + b * leaves`` per process on the ``fit_cells`` (:func:`per_leaf.fit_per_process`),
    and every cell set against the median line."""
    out: dict[str, Any] = {}
    for method in methods:
        rounds = per_leaf.excess(per_leaf.pooled(timings), method)
        fitted = fit_rows(rounds, fit_cells)
        if fitted["leaves"].nunique() < 2:
            continue
        line = per_leaf.fit_per_process(fitted)
        out[method] = {**line, "by_cell": per_leaf.against_fit(rounds, line).to_dict(orient="records")}
    return out


def excess_at(timings: pd.DataFrame, method: str) -> list[dict[str, Any]]:
    """The measured excess host CPU (ms per call) at each leaf count of the fit cells: the one
    value the study quotes for it, the median of per-process medians with their rerun range."""
    rounds = fit_rows(per_leaf.excess(per_leaf.pooled(timings), method))
    return [
        {
            "leaves": int(n),
            **per_leaf.spread([p["excess_ms"].median() for p in per_leaf.per_process(part)]),
        }
        for n, part in rounds.groupby("leaves", sort=True)
    ]


def _baseline_lines(timings: pd.DataFrame) -> dict[str, Any]:
    """Each baseline's own host CPU per call per leaf on the fit cells: what a path's excess per
    leaf is set against, in the same unit."""
    out: dict[str, Any] = {}
    for family, base in BASELINE.items():
        rows = fit_rows(timings[timings["method"] == base])
        if family in FAMILIES and rows["leaves"].nunique() >= 2:
            own = rows.assign(excess_ms=1e3 * rows[per_leaf.host_column(rows)])
            out[base] = per_leaf.fit_per_process(own)
    return out


def heavy(timings: pd.DataFrame) -> pd.DataFrame:
    """The rows of the first :data:`HEAVY` cell (a small model's single-batch train step is light)."""
    rows = fit_rows(timings, HEAVY)
    rows = rows[rows["model"].str.contains("_width|_x")]
    return rows[rows["model"] == rows["model"].iloc[0]] if len(rows) else rows


def complete(timings: pd.DataFrame, notes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the rows of each cell from the runs that measured it in every one of their processes,
    ``notes`` with a row for each cell a run measured in fewer): a cell a deadline stopped in one
    process is not quoted from the others. Runs (a ``run`` column: the device commands whose
    records tools/device/unpack.sh merged, each of its own part or a rerun) are told apart."""
    if "process" not in timings or timings.empty:
        return timings, notes
    keys = [k for k in per_leaf.KEYS if k in timings]
    run = timings["run"] if "run" in timings else pd.Series(0, index=timings.index)
    data = timings.assign(_run=run)
    counts = data.groupby([*keys, "_run"], sort=False)["process"].transform("nunique")
    every = counts == data.groupby("_run")["process"].transform("nunique")
    short = data[~every].drop_duplicates([*keys, "_run"])[[*keys, "_run"]].rename(columns={"_run": "run"})
    why = "measured in fewer of its run's processes than the others (the run's time budget): that run's rows not quoted"
    extra = short.assign(path="every path", why=why)
    return timings[every], pd.concat(
        [notes, extra[[c for c in notes.columns if c in extra]]], ignore_index=True
    )


def cases(timings: pd.DataFrame) -> list[dict[str, Any]]:
    """Per cell and path, each the median over processes with its rerun range: it/s in the
    loop (pipelined) and with each call blocked, the host's time per call
    (:func:`per_leaf.host_column`), the time to enqueue a call, and the cell's device time per call: the partitioned path's blocked
    time less its enqueue time (the device's time plus the wait's own latency)."""
    out = []
    keys = [k for k in (*per_leaf.KEYS, "microbatches") if k in timings]
    for labels, cell in timings.groupby(keys, sort=False):
        base = cell[cell["method"] == BASELINE[str(cell["family"].iloc[0])]]
        device = [
            1e3 * (p["wall_s_per_call"] - p["dispatch_s_per_call"]).median()
            for p in per_leaf.per_process(base)
        ]
        host = per_leaf.host_column(cell)
        for method, rows in cell.groupby("method", sort=False):
            each = per_leaf.per_process(rows)
            row: dict[str, Any] = {**dict(zip(keys, labels)), "method": method}
            row["loop_it_per_s"] = per_leaf.spread([p["loop_it_per_s"].median() for p in each])
            row["it_per_s"] = per_leaf.spread([p["it_per_s"].median() for p in each])
            row["enqueue_ms"] = per_leaf.spread([1e3 * p["dispatch_s_per_call"].median() for p in each])
            row["device_ms"] = per_leaf.spread(device)
            row["host_cpu_ms"] = per_leaf.spread([1e3 * p[host].median() for p in each])
            out.append(row)
    return out


def waits(timings: pd.DataFrame) -> list[dict[str, Any]]:
    """Runs ahead or waits, per path, on the heavy cells (:func:`jaxperf.runs_ahead.verdicts` on
    every process's rounds); a verdict the processes do not all share reads "unclear"."""
    rows = heavy(timings)
    if rows.empty:
        return []
    pooled = runs_ahead.verdicts(per_leaf.pooled(rows), BASELINE["jit"], key="method")
    each = [runs_ahead.verdicts(p, BASELINE["jit"], key="method") for p in per_leaf.per_process(rows)]
    for i, method in enumerate(pooled["method"]):
        seen = {v.set_index("method").loc[method, "verdict"] for v in each if method in set(v["method"])}
        if seen != {pooled.loc[i, "verdict"]}:
            pooled.loc[i, "verdict"] = runs_ahead.UNCLEAR
    return pooled.to_dict(orient="records")


def ranges_of(timings: pd.DataFrame, method: str, over: str, precision: float) -> dict[str, Any]:
    """:func:`per_leaf.ranges` of ``method`` over ``over`` in each of :data:`MEASURES`."""
    out = {}
    for measure in MEASURES:
        found = per_leaf.ranges(timings, method, over, measure, precision)
        cells = found.pop("cells")
        out[measure] = {**found, "by_cell": cells.to_dict(orient="records") if len(cells) else []}
    return out


def headline(
    timings: pd.DataFrame,
    notes: pd.DataFrame,
    acc_rows: pd.DataFrame,
    profile: pd.DataFrame,
    *,
    precision: float,
    quick: bool,
    predictions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything summary.md states, as data; ``predictions`` (:func:`.predict.load`) set beside
    what was measured, case by case."""
    timings, notes = complete(timings, notes)
    light = timings[~(timings["step"].eq(HEAVY["step"]) & timings["model"].str.contains("_width"))]
    methods = tuple(
        m
        for m in (*SLOW.values(), *RECIPES, *FIX.values(), *PACKED.values(), *PATCHED, *SHARDED)
        if m in set(light["method"])
    )
    lines = cost_lines(light, methods)
    acc = accounting.table(per_leaf.pooled(acc_rows, "round")) if len(acc_rows) else pd.DataFrame()
    if "process" in profile:  # one row per function: its median over the processes
        keys = ["model", "leaves", "function"]
        profile = profile.drop(columns="process").groupby(keys, sort=False).median().reset_index()
    noop = {"step": "noop", "donated": False}
    families = {
        m: per_leaf.by_kind(fit_rows(per_leaf.excess(per_leaf.pooled(light), m), noop))
        for m in (*SLOW.values(), *PATCHED)
        if m in methods
    }
    measured = cases(timings)
    summary: dict[str, Any] = {
        "study": "dispatch",
        "quick": quick,
        "precision": precision,
        "processes": _per_case(timings, "process"),
        "runs": _per_case(timings, "run"),
        "rerun_inflation": reruns.rerun_inflation(),
        "cells": int(timings.groupby(["step", "model", "donated", "family"]).ngroups),
        # each path's pipelined loop, in calls: the seed's loop (at least 50 calls and 1 s), or in
        # records made before it, rounds of ``calls``
        "loop_calls": [int(timings[loop].min()), int(timings[loop].max())]
        if (loop := "loop_calls" if "loop_calls" in timings else "calls") in timings and len(timings)
        else [0, 0],
        "seed_loop": "loop_calls" in timings,
        "clock": {
            "cpu_tick_ms": 1e3 * float(timings["cpu_tick_s"].max()) if "cpu_tick_s" in timings else None,
            "host_column": per_leaf.host_column(timings),
            "host": timing.host_measure(timings),
        },
        "per_leaf": {m: {k: v for k, v in line.items() if k != "by_cell"} for m, line in lines.items()},
        "per_leaf_cells": {m: line["by_cell"] for m, line in lines.items()},
        "per_leaf_by_kind": families,
        "baseline_per_leaf": _baseline_lines(light),
        "excess_ms": {m: excess_at(light, m) for m in methods},
        "host_ratio": {
            m: per_leaf.host_ratio(light, m, noop)
            for m in (*SLOW.values(), *RECIPES, *PATCHED, *SHARDED)
            if m in methods
        },
        "cases": measured,
        "predicted": beside(measured, predictions) if predictions else None,
        "waits": waits(timings),
        "accounting": acc.to_dict(orient="records"),
        "accounting_adds_up": accounting.adds_up(acc) if len(acc) else {},
        "accounting_leaves": int(acc["leaves"].max()) if len(acc) else None,
        "accounting_clock": ACCOUNTING_CLOCKS[accounting.clock(acc_rows)] if len(acc_rows) else None,
        "profile": profile.to_dict(orient="records"),
        "ranges": {},
        "not_timed": notes.to_dict(orient="records"),
    }
    for family in FAMILIES:  # each path over the baseline, and what each adds on top of the recipe
        fix, patched = FIX[family], f"{SLOW[family]}_patched"
        paths = (
            SLOW[family],
            RECIPE[family],
            fix,
            PACKED[family],
            patched,
            *(SHARDED if family == "pmap" else ()),
        )
        pairs = [(m, BASELINE[family]) for m in paths]
        for method, base in pairs + [(m, RECIPE[family]) for m in (fix, patched)]:
            if {method, base} <= set(timings["method"]):
                summary["ranges"][f"{method}/{base}"] = ranges_of(timings, method, base, precision)
    summary["patch_suite"] = _patch_suite()
    summary["goals"] = goals(summary, quick, timings)
    return summary


def _per_case(timings: pd.DataFrame, column: str) -> str:
    """How many of ``column`` (processes, runs) measured each case: "3", or "3 to 6" where parts
    were run different numbers of times."""
    if column not in timings or timings.empty:
        return "1"
    keys = [k for k in per_leaf.KEYS if k in timings]
    counts = timings.groupby(keys, sort=False)[column].nunique()
    lo, hi = int(counts.min()), int(counts.max())
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def _patch_suite() -> dict[str, Any] | None:
    """The committed report of Equinox's test suite with and without the patch, with the tests
    that fail only with it; None when it was never run here."""
    from .eqx_patch import suite

    try:
        report = suite.load_report()
    except FileNotFoundError:
        return None
    failed = {
        side: {t["test"] for t in report["not_passed"][side] if t["outcome"] in ("failed", "error")}
        for side in ("unpatched", "patched")
    }
    return {
        "equinox": report["equinox"],
        "counts": report["counts"],
        "only_patched": sorted(failed["patched"] - failed["unpatched"]),
        "added": len(report.get("added", [])),
        "reruns": report.get("reruns", {}),
    }


def goals(summary: dict[str, Any], quick: bool, timings: pd.DataFrame | None = None) -> dict[str, Any]:
    """The project's goals on this run (stated in <details>, never in the answer): the drop-in
    and the patched Equinox against the baseline in every cell, and the packed path on the
    no-op step at :data:`GOAL_PACKED_LEAVES` leaves (else the largest), with where each call's
    time goes: host CPU per call against the loop's time per call."""
    out: dict[str, Any] = {}
    if quick:
        return out
    for family in FAMILIES:
        for method, goal in ((FIX[family], GOAL_FIX), (f"{SLOW[family]}_patched", GOAL_PATCHED)):
            key = f"{method}/{BASELINE[family]}"
            for measure, r in summary["ranges"].get(key, {}).items():
                verdicts = [rule.judge(c, goal) for c in r.get("by_cell", [])]
                out[f"{key} >= {goal:.2f}x, {measure}, every cell"] = {
                    "verdict": rule.every(verdicts),
                    "count": rule.count(verdicts),
                }
        packed = summary["ranges"].get(f"{PACKED[family]}/{BASELINE[family]}", {}).get("loop_it_per_s", {})
        cells = [c for c in packed.get("by_cell", []) if c["step"] == "noop"]
        if cells:
            big = max(cells, key=lambda c: (c["leaves"] == GOAL_PACKED_LEAVES, c["donated"], c["leaves"]))
            donated = "donated both" if big["donated"] else "neither donated"
            name = f"{PACKED[family]} >= {GOAL_PACKED_NOOP}x {BASELINE[family]} ({donated}), no-op, {big['leaves']} leaves"
            out[name] = {
                "verdict": rule.judge(big, GOAL_PACKED_NOOP),
                "ratio": {k: big[k] for k in ("median", "lo", "hi")},
            }
            if timings is not None:
                out[name]["per_call_ms"] = _per_call(timings, big, (PACKED[family], BASELINE[family]))
    return out


def _per_call(timings: pd.DataFrame, cell: dict[str, Any], methods: tuple[str, ...]) -> dict[str, Any]:
    """Per method in ``cell``: the host's ms per call (:func:`per_leaf.host_column`) and the loop's ms per call (its it/s inverted), over the cell's rounds."""
    at = timings[
        (timings["step"] == cell["step"])
        & (timings["model"] == cell["model"])
        & (timings["donated"] == cell["donated"])
    ]
    out = {}
    for m in methods:
        rows = at[at["method"] == m]
        if len(rows):
            out[m] = {
                "host_cpu": 1e3 * float(rows[per_leaf.host_column(rows)].median()),
                "in_the_loop": float(1e3 / rows["loop_it_per_s"].median()),
            }
    return out


def lines_table(lines: dict[str, Any]) -> pd.DataFrame:
    """One row per method: the fitted line's intercept (ms) and slope (µs per leaf), each the
    median over processes with their [lo, hi]."""
    columns = ["a_ms", "a_ms_lo", "a_ms_hi", "b_us_per_leaf", "b_us_per_leaf_lo", "b_us_per_leaf_hi"]
    return pd.DataFrame([{"method": m, **{c: line[c] for c in columns}} for m, line in lines.items()])


def _values(s: dict[str, Any]) -> dict[str, Any]:
    """The summary plus what the template quotes that is picked, not measured: the largest leaf
    count measured, the no-op cases at :data:`GOAL_PACKED_LEAVES` leaves (else the largest MLP),
    the train cases' lines (``templates/train.md``) and the accounting's shares."""
    largest = max((c["leaves"] for cells in s["host_ratio"].values() for c in cells), default=None)
    acc = [r for r in s["accounting"] if r["leaves"] == s["accounting_leaves"]]
    short = {"axis resolution": "axis", "inner jax.pmap call's excess": "inner"}  # template keys hold no dot
    at = {
        **{
            m: next((c for c in cells if c["leaves"] == largest), None)
            for m, cells in s["host_ratio"].items()
        },
        "excess": next((c for c in s["excess_ms"].get("filter_pmap", []) if c["leaves"] == largest), None),
    }
    noop = [c for c in s["cases"] if c["step"] == "noop" and c["kind"] == "mlp" and not c["donated"]]
    leaves = (
        GOAL_PACKED_LEAVES
        if any(c["leaves"] == GOAL_PACKED_LEAVES for c in noop)
        else max((c["leaves"] for c in noop), default=None)
    )
    picked: dict[str, Any] = {"leaves": leaves}
    for c in noop:
        if c["leaves"] == leaves:
            picked.setdefault(c["family"], {})[c["method"]] = c
    lines = []
    for (model, donated, family), rows in _train_cases(s["cases"]).items():
        mine, base = rows.get(SLOW[family]), rows.get(BASELINE[family])
        if mine and base:
            values = {"model": model, "leaves": mine["leaves"], "donated": ", donated" if donated else ""}
            values |= {"device_ms": base["device_ms"], "mine": mine, "base": base}
            values |= {"reader": f"eqx.{SLOW[family]}", "baseline": f"jax.{family}"}
            lines.append(md.fill(md.template("jaxperf_study.dispatch", "train.md"), values).rstrip())
    shares = {
        short.get(r["part"], r["part"]): {
            "median": r["share_pct"],
            "lo": r["share_pct_lo"],
            "hi": r["share_pct_hi"],
        }
        for r in acc
    }
    predicted = ""
    if s.get("predicted") and s["predicted"]["n"]:
        folds = [r["fold"] for r in s["predicted"]["rows"]]
        values = {**s["predicted"], "fold_min": min(folds), "fold_max": max(folds)}
        predicted = md.fill(md.template("jaxperf_study.dispatch", "predicted.md"), values).rstrip()
    return {
        **s,
        "largest": largest,
        "at": at,
        "shares": shares,
        "noop": picked,
        "train": "\n".join(lines),
        "predicted_line": predicted,
        "intercepts": intercepts(s.get("per_leaf_by_kind", {}).get("filter_pmap", {})),
        "loop_words": "in the seed's loop"
        if s.get("seed_loop")
        else "in short rounds, before the seed's loop (each path's loop this many calls, one round's wait a share of it)",
    }


def intercepts(lines: dict[str, Any]) -> str:
    """What each family's line says at zero leaves, and where that is not physical: a host time
    cannot be below zero, so an intercept whose whole range is below zero says the cost is not a
    line in leaves over those sizes."""
    said = []
    for kind, line in sorted(lines.items()):
        where = f"{kind}s {line['a_ms']:.2f} ms [{line['a_ms_lo']:.2f}, {line['a_ms_hi']:.2f}]"
        if line["a_ms_hi"] < 0:
            where += " (below zero in every process: not physical, so not a line in leaves over these sizes)"
        said.append(where)
    return "; ".join(said)


def _train_cases(cases: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(model, donated, family) -> {method: case} of the train cases, the heavy one left out."""
    out: dict[tuple, dict[str, Any]] = {}
    for c in cases:
        if c["step"] == "train" and "_width" not in c["model"]:
            out.setdefault((c["model"], c["donated"], c["family"]), {})[c["method"]] = c
    return out


def _where_time_goes(goal: dict[str, Any]) -> str:
    """ ", host CPU 0.88 ms of 1.95 ms per call in the loop (packed_pmap); ..." for a goal that
    carries per-call times: what dispatch alone could still give."""
    parts = [
        f"{m}: {t['host_cpu']:.2f} ms of host CPU per blocked call, {t['in_the_loop']:.2f} ms per call in the loop"
        for m, t in goal.get("per_call_ms", {}).items()
    ]
    return ("; " + "; ".join(parts)) if parts else ""


def _folded(s: dict[str, Any]) -> list[str]:
    """Every case, the accounting, the profile, the paths not timed and the goals, folded."""
    out: list[str] = []
    if s.get("cases"):
        q = reruns.quote
        table = pd.DataFrame(
            {
                "case": f"{c['step']}, {c['model']}{', donated' if c['donated'] else ''}",
                "path": c["method"],
                "it/s pipelined": q(c["loop_it_per_s"], "r,.0f"),
                "it/s blocked": q(c["it_per_s"], "r,.0f"),
                "host ms per call": q(c["host_cpu_ms"], "r.3g"),
                "enqueue ms per call": q(c["enqueue_ms"], "r.3g"),
                "device ms per call": q(c["device_ms"], "r.3g"),
            }
            for c in s["cases"]
        )
        out += md.details("Every case and path (median over processes [rerun range])", md.table(table))
    if s.get("predicted") and s["predicted"]["rows"]:
        rows = pd.DataFrame(s["predicted"]["rows"])
        rows["predicted it/s"] = [f"{lo:,.0f}-{hi:,.0f}" for lo, hi in rows.pop("predicted")]
        rows["measured it/s"] = rows.pop("measured").map(lambda x: f"{x:,.0f}")
        out += md.details(
            "Pipelined it/s measured beside predicted (fold: measured ÷ the nearer end; 1 inside)",
            md.table(rows),
        )
    for key, found in s["ranges"].items():
        for measure, words in MEASURES.items():
            cells = pd.DataFrame(found[measure]["by_cell"])
            if not cells.empty:
                shown = cells[["step", "model", "leaves", "donated", "median", "lo", "hi", "verdict"]]
                out += md.details(
                    f"{key} it/s, {words}: every case (median over processes; lo, hi: its rerun range)",
                    md.table(shown),
                )
    if s["accounting"]:
        acc = pd.DataFrame(s["accounting"])[["model", "leaves", "part", "suspect", "share_pct"]]
        out += md.details("The accounting, every part (share of the gap, %)", md.table(acc.dropna()))
    if s["profile"]:
        out += md.details(
            "cProfile: top functions by self time per filter_pmap call", md.table(pd.DataFrame(s["profile"]))
        )
    if s["not_timed"]:
        out += md.details("Paths not timed, and why", md.table(pd.DataFrame(s["not_timed"])))
    goals_lines = [
        f"- {md.escape(name)}: **{rule.text(g.get('verdict'), False)}**" + _where_time_goes(g)
        for name, g in s["goals"].items()
    ]
    return out + md.details(
        "Benchmark goals (the project's own)", goals_lines or ["- not judged (smoke run)"]
    )


def render(summary: dict[str, Any], info: Any) -> str:
    """summary.md: the answer bullets of ``templates/summary.md``, then the folded detail."""
    intro = [
        md.smoke_notice(summary["quick"]),
        md.fill(md.template("jaxperf_study.dispatch", "intro.md"), {**summary, "info": vars(info)}),
    ]
    filled = md.fill(md.template("jaxperf_study.dispatch", "summary.md"), _values(summary))
    filled = "\n".join(line for line in filled.splitlines() if line.strip())  # a case this run has not
    bullets = ["- " + b.strip() for b in ("\n" + filled).split("\n- ") if b.strip()]
    return md.answer_page(
        "equinox#192: what eqx.filter_pmap costs per call, per leaf", intro, bullets, _folded(summary)
    )
