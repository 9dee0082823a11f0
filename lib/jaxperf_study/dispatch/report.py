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

from jaxperf import runs_ahead

from .. import goals as rule
from .. import pages as md
from .. import reruns
from . import accounting, per_leaf
from .cost import BASELINE, FAMILIES, FIX, PACKED, RECIPE, SLOW

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
#: the packed path vs the baseline with the same donation, the no-op step at the largest MLP
GOAL_FIX, GOAL_PACKED_NOOP = 0.95, 10.0
#: which cells a line is fitted on: the undonated no-op step on the MLPs
FIT_CELLS = {"step": "noop", "kind": "mlp", "donated": False}
#: the wide train step under eqx.filter_jit: its device time far above any path's host time
HEAVY = {"step": "train", "family": "jit"}


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
        {"leaves": int(n), **per_leaf.spread([p["excess_ms"].median() for p in per_leaf.per_process(part)])}
        for n, part in rounds.groupby("leaves", sort=True)
    ]


def _baseline_lines(timings: pd.DataFrame, methods: tuple[str, ...]) -> dict[str, Any]:
    """Each baseline's own host CPU per call per leaf (the fit cells), and each method's slope as
    a multiple of its baseline's, per process: the per-leaf cost in a unit that carries."""
    out: dict[str, Any] = {}
    for family, base in BASELINE.items():
        if family not in FAMILIES:
            continue
        rows = fit_rows(timings[timings["method"] == base])
        if rows["leaves"].nunique() < 2:
            continue
        own = rows.assign(excess_ms=1e3 * rows["cpu_s_per_call"])
        multiples: dict[str, Any] = {}
        for method in methods:
            rounds = fit_rows(per_leaf.excess(per_leaf.pooled(timings), method))
            if family not in set(rounds["family"]) or rounds["leaves"].nunique() < 2:
                continue
            values = []
            for p_base, p_method in zip(per_leaf.per_process(own), per_leaf.per_process(rounds)):
                b_base = per_leaf.fit_per_process(p_base)["b_us_per_leaf"]
                values.append(per_leaf.fit_per_process(p_method)["b_us_per_leaf"] / b_base)
            multiples[method] = per_leaf.spread(values)
        out[base] = {**per_leaf.fit_per_process(own), "slope_multiple": multiples}
    return out


def waits(timings: pd.DataFrame) -> list[dict[str, Any]]:
    """Runs ahead or waits, per path, on the heavy cell (:func:`jaxperf.runs_ahead.verdicts` on
    every process's rounds); a verdict the processes do not all share reads "unclear"."""
    heavy = fit_rows(timings, HEAVY)
    heavy = heavy[heavy["model"].str.contains("_width")]  # the wide model: a small one's train step is light
    if heavy.empty:
        return []
    pooled = runs_ahead.verdicts(per_leaf.pooled(heavy), BASELINE["jit"], key="method")
    each = [runs_ahead.verdicts(p, BASELINE["jit"], key="method") for p in per_leaf.per_process(heavy)]
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
) -> dict[str, Any]:
    """Everything summary.md states, as data."""
    light = timings[~(timings["step"].eq(HEAVY["step"]) & timings["model"].str.contains("_width"))]
    methods = tuple(
        m
        for m in (*SLOW.values(), *RECIPES, *FIX.values(), *PACKED.values(), *PATCHED)
        if m in set(light["method"])
    )
    lines = cost_lines(light, methods)
    acc = accounting.table(per_leaf.pooled(acc_rows, "round"))
    if "process" in profile:  # one row per function: its median over the processes
        keys = ["model", "leaves", "function"]
        profile = profile.drop(columns="process").groupby(keys, sort=False).median().reset_index()
    noop = {"step": "noop", "donated": False}
    families = {
        m: per_leaf.by_kind(fit_rows(per_leaf.excess(per_leaf.pooled(light), m), noop))
        for m in (*SLOW.values(), *PATCHED)
        if m in methods
    }
    seed_line = families.get(SLOW["pmap"], {}).get("transformer") or lines.get(SLOW["pmap"])
    excess = {m: excess_at(light, m) for m in methods}
    summary: dict[str, Any] = {
        "study": "dispatch",
        "quick": quick,
        "precision": precision,
        "processes": int(timings["process"].nunique()) if "process" in timings else 1,
        "rerun_inflation": reruns.rerun_inflation(),
        "cells": int(timings.groupby(["step", "model", "donated", "family"]).ngroups),
        "per_leaf": {m: {k: v for k, v in line.items() if k != "by_cell"} for m, line in lines.items()},
        "per_leaf_cells": {m: line["by_cell"] for m, line in lines.items()},
        "per_leaf_by_kind": families,
        "baseline_per_leaf": _baseline_lines(light, methods),
        "excess_ms": excess,
        "host_ratio": {
            m: per_leaf.host_ratio(light, m, noop)
            for m in (*SLOW.values(), *RECIPES, *PATCHED)
            if m in methods
        },
        "seed": {
            # the excess at each MLP size is the measured one (one value per quantity); the leaves
            # the seed needs come from the transformer's slope, the seed's own kind, where measured
            "implied": per_leaf.seed_implied(
                {c["leaves"]: c["median"] for c in excess.get(SLOW["pmap"], [])}
            ).to_dict(orient="records"),
            "slope_from": "transformer" if seed_line is not lines.get(SLOW["pmap"]) else "mlp",
            "leaves_to_explain": per_leaf.seed_leaves(seed_line) if seed_line else None,
        },
        "waits": waits(timings),
        "accounting": acc.to_dict(orient="records"),
        "accounting_adds_up": accounting.adds_up(acc),
        "accounting_leaves": int(acc["leaves"].max()) if len(acc) else None,
        "profile": profile.to_dict(orient="records"),
        "ranges": {},
        "not_timed": notes.to_dict(orient="records"),
    }
    for family in FAMILIES:  # each path over the baseline, and what each adds on top of the recipe
        fix, patched = FIX[family], f"{SLOW[family]}_patched"
        pairs = [(m, BASELINE[family]) for m in (SLOW[family], RECIPE[family], fix, PACKED[family], patched)]
        for method, base in pairs + [(m, RECIPE[family]) for m in (fix, patched)]:
            if {method, base} <= set(timings["method"]):
                summary["ranges"][f"{method}/{base}"] = ranges_of(timings, method, base, precision)
    summary["patch_suite"] = _patch_suite()
    summary["goals"] = goals(summary, quick, timings)
    return summary


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
    """The project's goals on this run (stated in <details>, never in the answer). The packed
    goal is judged on the largest no-op case (donated ones first) and carries where each call's
    time goes: the dispatching thread's CPU per call against the loop's time per call."""
    out: dict[str, Any] = {}
    if quick:
        return out
    for family in FAMILIES:
        key = f"{FIX[family]}/{BASELINE[family]}"
        for measure, r in summary["ranges"].get(key, {}).items():
            verdicts = [rule.judge(c, GOAL_FIX) for c in r.get("by_cell", [])]
            out[f"{key} >= {GOAL_FIX}x, {measure}, every cell"] = {
                "verdict": rule.every(verdicts),
                "count": rule.count(verdicts),
            }
        packed = summary["ranges"].get(f"{PACKED[family]}/{BASELINE[family]}", {}).get("loop_it_per_s", {})
        cells = [c for c in packed.get("by_cell", []) if c["step"] == "noop"]
        if cells:
            big = max(cells, key=lambda c: (c["donated"], c["leaves"]))
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
    """Per method in ``cell``: the dispatching thread's CPU ms per blocked call and the loop's ms
    per call (its it/s inverted), medians over the cell's rounds."""
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
                "host_cpu": float(1e3 * rows["cpu_s_per_call"].median()),
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
    count measured and the accounting's shares there."""
    largest = max((c["leaves"] for cells in s["host_ratio"].values() for c in cells), default=None)
    acc = [r for r in s["accounting"] if r["leaves"] == s["accounting_leaves"]]
    short = {"axis resolution": "axis", "inner jax.pmap call's excess": "inner"}  # template keys hold no dot
    at = {
        **{
            m: next((c for c in cells if c["leaves"] == largest), None)
            for m, cells in s["host_ratio"].items()
        },
        "excess": next((c for c in s["excess_ms"].get("filter_pmap", []) if c["leaves"] == largest), None),
        "seed": next((r for r in s["seed"]["implied"] if r["leaves"] == largest), None),
    }
    shares = {short.get(r["part"], r["part"]): r["share_pct"] for r in acc}
    return {**s, "largest": largest, "at": at, "shares": shares}


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
    bullets = ["- " + b.strip() for b in ("\n" + filled).split("\n- ") if b.strip()]
    return md.answer_page(
        "equinox#192: what eqx.filter_pmap costs per call, per leaf", intro, bullets, _folded(summary)
    )
