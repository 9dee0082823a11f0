"""summary.json of notebook 01: the cost per call per leaf, one accounting, the fix's and the
packed path's ranges over every cell, and the project's own goals (kept apart).

Every number comes from the sweep's timings (:mod:`.cost`, one row per cell, path and round)
or the accounting's rounds (:mod:`.accounting`); nothing is typed in.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import goals as rule
from . import accounting, per_leaf
from .cost import BASELINE, FAMILIES, FIX, PACKED, SLOW

#: the it/s measures every range is stated in, with the words a summary uses for them
MEASURES = {
    "loop_it_per_s": "in a loop that blocks once at its end",
    "it_per_s": "with each call blocked",
}
#: Equinox's wrappers with the study's proposed change patched in (jaxperf.eqx_patch)
PATCHED = ("filter_pmap_patched", "filter_jit_patched")
#: the project's own goals (judged in <details> only): the fix vs the baseline, every cell;
#: the packed path vs the baseline with the same donation, the no-op step at the largest MLP
GOAL_FIX, GOAL_PACKED_NOOP = 0.95, 10.0
#: which cells a line is fitted on: the undonated no-op step on the MLPs
FIT_CELLS = {"step": "noop", "kind": "mlp", "donated": False}


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
    ``a + b * leaves`` (:func:`per_leaf.fit`) on the ``fit_cells``, and every cell set against
    the line."""
    out: dict[str, Any] = {}
    for method in methods:
        rounds = per_leaf.excess(timings, method)
        fitted = fit_rows(rounds, fit_cells)
        if fitted["leaves"].nunique() < 2:
            continue
        line = per_leaf.fit(fitted)
        cells = per_leaf.against_fit(rounds, line)
        out[method] = {
            **line,
            "cells_on_the_line": int(cells["on_the_line"].sum()),
            "cells_measured": len(cells),
            "by_cell": cells.to_dict(orient="records"),
        }
    return out


def _baseline_lines(timings: pd.DataFrame, lines: dict[str, Any]) -> dict[str, Any]:
    """Each baseline's own host CPU per call fitted per leaf (``jax.pmap`` / ``jax.jit`` on the
    partitioned state, the fit cells), and each method's slope as a multiple of its baseline's:
    the per-leaf cost in a unit that carries to another machine."""
    out: dict[str, Any] = {}
    for family, base in BASELINE.items():
        rows = fit_rows(timings[timings["method"] == base])
        if rows["leaves"].nunique() < 2:
            continue
        line = per_leaf.fit(rows.assign(excess_ms=1e3 * rows["cpu_s_per_call"]))
        relative = {
            m: lines[m]["b_us_per_leaf"] / line["b_us_per_leaf"]
            for m in lines
            if m in set(timings.loc[timings["family"] == family, "method"])
        }
        out[base] = {**line, "slope_multiple": relative}
    return out


def _by_kind(timings: pd.DataFrame, method: str) -> dict[str, Any]:
    """The per-leaf line per model family on the undonated no-op cells, each family's own cells
    set against it."""
    rounds = fit_rows(per_leaf.excess(timings, method), {"step": "noop", "donated": False})
    out = {}
    for kind, line in per_leaf.by_kind(rounds).items():
        cells = per_leaf.against_fit(rounds[rounds["kind"] == kind], line)
        out[kind] = {
            **line,
            "cells_on_the_line": int(cells["on_the_line"].sum()),
            "cells_measured": len(cells),
        }
    return out


def _range(timings: pd.DataFrame, method: str, over: str, precision: float) -> dict[str, Any]:
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
    extra_methods: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Everything summary.md states, as data."""
    slow_and_fixes = (*SLOW.values(), *FIX.values(), *PACKED.values(), *PATCHED, *extra_methods)
    lines = cost_lines(timings, slow_and_fixes)
    acc = accounting.table(acc_rows)
    largest = int(acc["leaves"].max()) if len(acc) else None
    pmap_line = lines.get(SLOW["pmap"])
    families = {m: _by_kind(timings, m) for m in (*SLOW.values(), *PATCHED) if m in set(timings["method"])}
    seed_line = families.get(SLOW["pmap"], {}).get("transformer", pmap_line)
    measured = per_leaf.measured(pmap_line or {}, FIT_CELLS)
    summary: dict[str, Any] = {
        "study": "dispatch",
        "quick": quick,
        "precision": precision,
        "cells": int(timings.groupby(["step", "model", "donated", "family"]).ngroups),
        "stopped_by": timings.groupby(["step", "model", "donated", "family"])["stopped_by"]
        .first()
        .value_counts()
        .to_dict(),
        "per_leaf": {m: {k: v for k, v in line.items() if k != "by_cell"} for m, line in lines.items()},
        "per_leaf_cells": {m: line["by_cell"] for m, line in lines.items()},
        "per_leaf_by_kind": families,
        "baseline_per_leaf": _baseline_lines(timings, lines),
        "host_ratio": {
            m: per_leaf.host_ratio(timings, m, {"step": "noop", "donated": False})
            for m in (*SLOW.values(), *PATCHED)
            if m in set(timings["method"])
        },
        "seed": {
            # the excess at each MLP size is the measured median (one value per quantity), and
            # the leaves the seed needs come from the transformer's slope: the seed's own kind
            "implied": per_leaf.seed_implied(measured).to_dict(orient="records"),
            "slope_from": "transformer" if seed_line is not pmap_line else "mlp",
            "leaves_to_explain": per_leaf.seed_leaves(seed_line) if seed_line else None,
        },
        "accounting": acc.to_dict(orient="records"),
        "accounting_adds_up": accounting.adds_up(acc),
        "accounting_growth": accounting.growth(acc).to_dict(orient="records"),
        "accounting_leaves": largest,
        "profile": profile.to_dict(orient="records"),
        "ranges": {},
        "not_timed": notes.to_dict(orient="records"),
    }
    for family in FAMILIES:
        base = BASELINE[family]
        for method in (SLOW[family], FIX[family], PACKED[family], f"{SLOW[family]}_patched"):
            if method in set(timings["method"]):
                summary["ranges"][f"{method}/{base}"] = _range(timings, method, base, precision)
    summary["patch_suite"] = _patch_suite()
    summary["goals"] = goals(summary, quick)
    return summary


def _patch_suite() -> dict[str, Any] | None:
    """The committed report of Equinox's test suite with and without the patch, with the tests
    that fail only with it; None when it was never run here."""
    from ..eqx_patch import suite

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


def goals(summary: dict[str, Any], quick: bool) -> dict[str, Any]:
    """The project's goals on this run (stated in <details>, never in the answer)."""
    out: dict[str, Any] = {}
    if quick:
        return out
    for family in FAMILIES:
        key = f"{FIX[family]}/{BASELINE[family]}"
        found = summary["ranges"].get(key, {})
        for measure, r in found.items():
            verdicts = [rule.judge(c, GOAL_FIX) for c in r.get("by_cell", [])]
            out[f"{key} >= {GOAL_FIX}x, {measure}, every cell"] = {
                "verdict": rule.every(verdicts),
                "count": rule.count(verdicts),
            }
        packed = summary["ranges"].get(f"{PACKED[family]}/{BASELINE[family]}", {}).get("loop_it_per_s", {})
        cells = [c for c in packed.get("by_cell", []) if c["step"] == "noop" and c["donated"]]
        if cells:
            big = max(cells, key=lambda c: c["leaves"])
            out[
                f"{PACKED[family]} >= {GOAL_PACKED_NOOP}x {BASELINE[family]} (donated both), no-op, {big['leaves']} leaves"
            ] = {
                "verdict": rule.judge(big, GOAL_PACKED_NOOP),
                "ratio": {k: big[k] for k in ("median", "q25", "q75")},
            }
    return out


def lines_table(lines: dict[str, Any]) -> pd.DataFrame:
    """One row per method: the fitted line's intercept (ms) and slope (µs per leaf) with their
    quartiles, and how many measured cells fall on it."""
    columns = ["a_ms", "a_ms_q25", "a_ms_q75", "b_us_per_leaf", "b_us_per_leaf_q25", "b_us_per_leaf_q75"]
    rows = [
        {
            "method": m,
            **{c: line[c] for c in columns},
            "cells on the line": f"{line['cells_on_the_line']} of {line['cells_measured']}",
        }
        for m, line in lines.items()
    ]
    return pd.DataFrame(rows)
