"""The fix's cells (step, model, measure, donation) against a goal: how many met it, tied
and missed, and which missed, as summary.json keeps them and summary.md says them."""

from __future__ import annotations

from typing import Any

from .. import goals

#: the it/s measures as a sentence names them
MEASURE_SHORT = {"it_per_s": "blocked", "loop_it_per_s": "pipelined"}
CELL_KEYS = ("step", "model", "leaves", "measure", "donated")
PER_MEASURE = ("step", "model", "leaves")  # a per-measure verdict's cells: undonated, one measure


def missed_cells(
    cells: list[dict[str, Any]], verdict_key: str, ratio_key: str, keys: tuple[str, ...] = CELL_KEYS
) -> list[dict[str, Any]]:
    """The cells whose ``verdict_key`` is "not met", lowest median first: their ``keys`` and
    the ratio (median and quartiles) that missed."""
    missed = [g for g in cells if g.get(verdict_key) == goals.MISSED and g.get(ratio_key)]
    return [
        {k: g[k] for k in keys if k in g} | {"ratio": g[ratio_key]}
        for g in sorted(missed, key=lambda g: g[ratio_key]["median"])
    ]


def fix_cells(fix: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The fix's goal against pmap on params over every cell with a pmap pair: the verdict,
    how many met, tied and missed it, the lowest cell, and the cells that missed."""
    fix = [g for g in fix if g.get("over_pmap_params")]
    if not fix:
        return None
    low = min(fix, key=lambda g: g["over_pmap_params"]["median"])
    counted = goals.count(g["meets_vs_pmap"] for g in fix)
    return {
        "verdict": goals.every(g["meets_vs_pmap"] for g in fix),
        "meeting": counted[goals.MET],
        "ties": counted[goals.TIE],
        "missing": counted[goals.MISSED],
        "of": len(fix),
        "lowest": low["over_pmap_params"]["median"],
        "lowest_at": {k: low[k] for k in ("step", "model", "measure", "donated")},
        "missed_at": missed_cells(fix, "meets_vs_pmap", "over_pmap_params"),
    }


def vs_filter_cells(summary: dict[str, Any], measure: str) -> str:
    """How the cells judged on the fix's goal against ``filter_pmap`` came out (undonated,
    both steps, every model of at least the goal's leaves: the cells ``verdict`` is judged
    on), as "2 of 6 met, 1 a tie, 3 not met"."""
    found = [
        g["meets_vs_filter_pmap"]
        for g in summary.get("fix", [])
        if g["measure"] == measure and not g["donated"] and g.get("meets_vs_filter_pmap") is not None
    ]
    return count_text(goals.count(found), len(found))


def count_text(counted: dict[str, int], of: int) -> str:
    """ "N of M met, K a tie, J not met" (the tie and miss parts only where there are any)."""
    text = f"{counted[goals.MET]} of {of} met"
    if counted.get(goals.TIE):
        text += f", {counted[goals.TIE]} a tie"
    if counted.get(goals.MISSED):
        text += f", {counted[goals.MISSED]} not met"
    return text


def missed_text(cells: list[dict[str, Any]], most: int = 3) -> str:
    """The cells that missed a goal, lowest first, their quartiles to three decimals (a
    quartile of 0.949 must not read as the goal's 0.95): "; missed: train, mlp_depth1
    (14 leaves): 0.75× [0.692, 0.949]", then "and N more"."""
    if not cells:
        return ""
    shown = [
        f"{c['step']}, {c['model']}"
        + (f" ({c['leaves']} leaves)" if "leaves" in c else "")
        + (f", {MEASURE_SHORT.get(c['measure'], c['measure'])}" if "measure" in c else "")
        + (", donated" if c.get("donated") else "")
        + f": {c['ratio']['median']:.2f}× [{c['ratio']['q25']:.3f}, {c['ratio']['q75']:.3f}]"
        for c in cells[:most]
    ]
    more = f" and {len(cells) - most} more" if len(cells) > most else ""
    return "; missed: " + "; ".join(shown) + more
