"""summary.md of notebook 01: the answer to equinox#192 in five bullets, their prose in
templates/summary.md (the cost, what it means for a loop, where it goes, what to write instead,
the patch), then everything else folded: every cell, the accounting, the profile, the
project's goals. The text to paste upstream is results/upstream/equinox-192.md."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import goals as rule
from .. import markdown as md
from .accounting import PARTS
from .report import MEASURES

NAMES = {
    "filter_pmap": "`eqx.filter_pmap`",
    "filter_jit": "`eqx.filter_jit`",
    "cached_filter_pmap": "`jaxperf.cached_filter_pmap`",
    "cached_filter_jit": "`jaxperf.cached_filter_jit`",
    "packed_pmap": "`jaxperf.packed_pmap`",
    "packed_jit": "`jaxperf.packed_jit`",
    "pmap_params": "`jax.pmap` on params",
    "jit_params": "`jax.jit` on params",
    "filter_pmap_patched": "patched `eqx.filter_pmap`",
    "filter_jit_patched": "patched `eqx.filter_jit`",
}


def _values(s: dict[str, Any]) -> dict[str, Any]:
    """The summary plus what the template quotes that is picked, not measured: the host-CPU ratio
    per method at the largest leaf count measured, the seed's bound there, the per-family lines
    and the accounting's shares, each as the one value the page quotes."""
    largest: dict[str, Any] = {}
    for method, cells in s.get("host_ratio", {}).items():
        if cells:
            top = max(cells, key=lambda c: c["leaves"])
            largest[method], largest["leaves"] = top, top["leaves"]
    families = "; ".join(
        f"{kind} {line['b_us_per_leaf']:.0f} µs per leaf [{line['b_us_per_leaf_q25']:.0f}, "
        f"{line['b_us_per_leaf_q75']:.0f}] ({line['cells_on_the_line']} of {line['cells_measured']} cases on the line)"
        for kind, line in s.get("per_leaf_by_kind", {}).get("filter_pmap", {}).items()
    )
    acc = pd.DataFrame(s["accounting"])
    part = acc[acc["leaves"] == s["accounting_leaves"]].set_index("part") if len(acc) else acc
    shares = ", ".join(f"{name} {part.loc[name, 'share_of_gap']:.0%}" for name in [*PARTS, "unexplained"])
    implied = s["seed"]["implied"]
    return {
        **s,
        "largest": largest,
        "families": families or "not fitted (one size per family)",
        "shares": shares,
        "seed_big": max(implied, key=lambda r: r["leaves"]) if implied else {},
        "seed_need": s["seed"]["leaves_to_explain"] or {},
    }


def _cells_table(s: dict[str, Any]) -> list[str]:
    out = []
    for key, found in s["ranges"].items():
        method, base = key.split("/")
        for measure, words in MEASURES.items():
            cells = pd.DataFrame(found[measure]["by_cell"])
            if cells.empty:
                continue
            cells["ratio"] = [md.ratio(c) for c in found[measure]["by_cell"]]
            table = cells[["step", "model", "leaves", "donated", "ratio", "verdict"]]
            title = f"{NAMES.get(method, method)} it/s ÷ {NAMES.get(base, base)}, {words}: every case"
            out += md.details(title, md.table(table))
    return out


def _goal_lines(s: dict[str, Any]) -> list[str]:
    lines = []
    for name, goal in s["goals"].items():
        verdict = rule.text(goal.get("verdict"), False)
        count = goal.get("count")
        extra = f" ({count['met']} met, {count['tie']} a tie, {count['not met']} not met)" if count else ""
        lines.append(f"- {md.escape(name)}: **{verdict}**{extra}")
    return lines or ["- not judged (smoke run)"]


def render(summary: dict[str, Any], info: Any) -> str:
    """summary.md: the five answer bullets (templates/summary.md), then the folded detail."""
    intro = [
        md.smoke_notice(summary["quick"]),
        f"Backend **{info.backend}**, {info.device_count} x {info.device_kind}. Numbers: median "
        "[interquartile range] over interleaved rounds; ratios per pair (same round), measured by "
        "`jaxperf.diagnose`, the same engine a reader runs on their own step. Host CPU is the "
        "dispatching thread's CPU time per blocked call.",
    ]
    filled = md.fill(md.template("jaxperf.dispatch", "summary.md"), _values(summary))
    bullets = ["- " + b.strip() for b in ("\n" + filled).split("\n- ") if b.strip()]
    acc = pd.DataFrame(summary["accounting"])
    folded = md.details("Benchmark goals (the project's own, judged on their spread)", _goal_lines(summary))
    if not acc.empty:
        shown = acc[
            ["model", "leaves", "part", "suspect", "cpu_ms", "cpu_ms_q25", "cpu_ms_q75", "share_of_gap"]
        ]
        folded += md.details("The accounting, every part (thread CPU ms per call)", md.table(shown))
    if summary["profile"]:
        folded += md.details(
            "cProfile: top functions by self time per filter_pmap call",
            md.table(pd.DataFrame(summary["profile"])),
        )
    folded += _cells_table(summary)
    if summary["not_timed"]:
        folded += md.details("Paths not timed, and why", md.table(pd.DataFrame(summary["not_timed"])))
    return md.answer_page(
        "equinox#192: what eqx.filter_pmap costs per call, per leaf", intro, bullets, folded
    )
