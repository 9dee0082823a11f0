"""summary.md of notebook 01: the answer to equinox#192 in five bullets a maintainer can paste
(the cost per call per leaf, what it means for a loop, where it goes, what to write instead,
the patch), then everything else folded: every cell, the accounting, the profile, the
project's goals, the issue-ready text."""

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


def per_leaf_text(line: dict[str, Any] | None, unit: str = "leaf") -> str:
    """For example "57 µs per leaf [56, 59] plus 0.58 ms per call"."""
    if not line:
        return "n/a"
    sign = "plus" if line["a_ms"] >= 0 else "minus"
    digits = 0 if abs(line["b_us_per_leaf"]) >= 10 else 1  # small costs keep a decimal
    b, q25, q75 = (line[k] for k in ("b_us_per_leaf", "b_us_per_leaf_q25", "b_us_per_leaf_q75"))
    slope = f"{b:.{digits}f} µs per {unit} [{q25:.{digits}f}, {q75:.{digits}f}]"
    if abs(line["a_ms"]) < 0.005:  # an intercept that rounds to 0.00 ms says nothing
        return slope
    return f"{slope} {sign} {abs(line['a_ms']):.2f} ms per call"


def range_text(found: dict[str, Any] | None) -> str:
    """For example "0.93–1.02× over 12 cases (3 faster, 1 slower, 8 not resolved)"."""
    if not found or not found.get("n"):
        return "n/a"
    counts = ", ".join(f"{n} {k}" for k, n in found["counts"].items() if n)
    return f"{found['min']:.2f}–{found['max']:.2f}× over {found['n']} cases ({counts})"


def _bullet_cost(s: dict[str, Any]) -> str:
    lines = s["per_leaf"]
    pmap, jit = lines.get("filter_pmap"), lines.get("filter_jit")
    cells = s["per_leaf_cells"].get("filter_pmap", [])
    on = sum(1 for c in cells if c["on_the_line"])
    return (
        f"- **The cost, per call per leaf** (the dispatching thread's CPU, this machine): "
        f"`eqx.filter_pmap` costs {per_leaf_text(pmap)} more than `jax.pmap` on the partitioned "
        f"state; `eqx.filter_jit` {per_leaf_text(jit)} more than `jax.jit` on it (lines fitted on the "
        f"undonated no-op MLPs of {', '.join(str(n) for n in (pmap or {}).get('leaves', []))} leaves; "
        f"{on} of {len(cells)} measured cases, the transformer, the train step and donation included, "
        "hold the `filter_pmap` line within their interquartile range)."
    )


def _bullet_loop(s: dict[str, Any]) -> str:
    implied = s["seed"]["implied"]
    big = max(implied, key=lambda r: r["leaves"]) if implied else None
    need = s["seed"]["leaves_to_explain"] or {}
    analogue = s["ranges"].get("filter_pmap/pmap_params", {}).get("loop_it_per_s")
    parts = [
        "- **What it means for a loop:** it/s falls once this extra host time exceeds the step's device time."
    ]
    if big:
        parts.append(
            f"Added to the seed's 25 it/s TPU loop (40 ms per step), {big['extra_host_ms']:.1f} ms at "
            f"{big['leaves']} leaves gives {big['it_per_s_if_host_bound']:.1f} it/s if those 40 ms were "
            f"host time, {big['it_per_s_if_device_bound']:.1f} if device time."
        )
    if need.get("if_host_bound"):
        parts.append(
            f"At this machine's per-leaf cost the seed's 8 vs 25 it/s needs about "
            f"{need['if_host_bound']:,.0f} leaves (host-bound) to {need['if_device_bound']:,.0f} (device-bound): "
            "so either the 2022 stack paid far more per leaf than this one does today, or the seed's "
            "model had that many leaves (it does not say)."
        )
    if analogue:
        parts.append(
            f"On 8 CPU devices sharing 2 cores (an analogue, not a TPU) `filter_pmap` runs at "
            f"{range_text(analogue)} the it/s of `jax.pmap` on params {MEASURES['loop_it_per_s']}."
        )
    return " ".join(parts)


def _accounting_rows(s: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(s["accounting"])


def _bullet_accounting(s: dict[str, Any]) -> str:
    acc = _accounting_rows(s)
    if acc.empty:
        return ""
    leaves = s["accounting_leaves"]
    part = acc[acc["leaves"] == leaves].set_index("part")
    gap = part.loc["gap"]
    pieces = ", ".join(f"{name} {part.loc[name, 'cpu_ms']:.1f} ms" for name in PARTS)
    adds = s["accounting_adds_up"][str(part.loc["gap", "model"])]
    rest = part.loc["unexplained"]
    growth = pd.DataFrame(s["accounting_growth"])
    grows = ""
    if len(growth):
        top = growth[growth["part"] != "gap"].sort_values("us_per_leaf", ascending=False).iloc[0]
        grows = f" Fastest-growing part: {top['part']}, {top['us_per_leaf']:.0f} µs per added leaf."
    per_leaf_fns = [p for p in s["profile"] if p.get("leaves") == leaves and p["calls_per_step"] >= leaves][
        :2
    ]
    prof = (
        " Called per leaf, cProfile's top self time: "
        + ", ".join(
            f"{md.escape(p['function'].split(' (')[0])} ({p['calls_per_step']:,.0f} calls, "
            f"{p['self_ms_per_step']:.1f} ms per call)"
            for p in per_leaf_fns
        )
        + "."
        if per_leaf_fns
        else ""
    )
    return (
        f"- **Where it goes** (one set of interleaved rounds, thread CPU, {leaves} leaves): the gap is "
        f"{md.fmt_stat({'median': gap['cpu_ms'], 'q25': gap['cpu_ms_q25'], 'q75': gap['cpu_ms_q75']}, 1)} ms per call; "
        f"{pieces}; unexplained {md.fmt_stat({'median': rest['cpu_ms'], 'q25': rest['cpu_ms_q25'], 'q75': rest['cpu_ms_q75']}, 1)} ms "
        f"({'the parts add up: its range holds 0' if adds else 'the parts do not add up: its range excludes 0'}).{grows}{prof}"
    )


def _bullet_fix(s: dict[str, Any]) -> str:
    r = s["ranges"]
    fix_p, fix_j = r.get("cached_filter_pmap/pmap_params", {}), r.get("cached_filter_jit/jit_params", {})
    pk_p, pk_j = r.get("packed_pmap/pmap_params", {}), r.get("packed_jit/jit_params", {})
    lines = s["per_leaf"]
    return (
        "- **What to write instead: partition once**, by hand as the seed did, or with the drop-ins. "
        f"`jaxperf.cached_filter_pmap` runs at {range_text(fix_p.get('loop_it_per_s'))} the it/s of `jax.pmap` "
        f"on params {MEASURES['loop_it_per_s']} (its extra host CPU: {per_leaf_text(lines.get('cached_filter_pmap'))}); "
        f"`jaxperf.cached_filter_jit` {range_text(fix_j.get('loop_it_per_s'))} `jax.jit` on params. "
        f"With many leaves, pack the state: `jaxperf.packed_pmap` {range_text(pk_p.get('loop_it_per_s'))}, "
        f"`jaxperf.packed_jit` {range_text(pk_j.get('loop_it_per_s'))} their baseline with the same donation."
    )


def _bullet_patch(s: dict[str, Any]) -> str:
    suite = s.get("patch_suite")
    if not suite or "filter_pmap_patched" not in s["per_leaf"]:
        return ""
    lines = s["per_leaf"]
    counts = suite["counts"]
    runs = "; ".join(
        f"{side} {counts[side]['passed']} passed, {counts[side]['failed']} failed"
        for side in ("unpatched", "patched")
    )
    return (
        "- **A patch Equinox could merge** (`results/equinox_patch/`, three diffs: `filter_pmap` keeps its "
        "partition per input structure, `filter_jit` rebuilds its output in one unflatten and waits only when it "
        f"holds an error check): patched `eqx.filter_pmap` costs {per_leaf_text(lines.get('filter_pmap_patched'))} "
        f"more than `jax.pmap` on params, patched `eqx.filter_jit` {per_leaf_text(lines.get('filter_jit_patched'))} "
        f"more than `jax.jit` on params; Equinox {suite['equinox']['release']}'s own test suite: {runs}"
        + (
            f" (failing only with the patch: {', '.join(f'`{t}`' for t in suite['only_patched'])}, "
            "see `results/equinox_patch/test_suite.md` for its reruns)."
            if suite["only_patched"]
            else " (no test fails only with the patch)."
        )
    )


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


def render(summary: dict[str, Any], info: Any, issue: str = "") -> str:
    """summary.md: the five answer bullets, then the folded detail."""
    intro = [
        md.smoke_notice(summary["quick"]),
        f"Backend **{info.backend}**, {info.device_count} x {info.device_kind}. Numbers: median "
        "[interquartile range] over interleaved rounds; ratios per pair (same round), measured by "
        "`jaxperf.diagnose`, the same engine a reader runs on their own step. Host CPU is the "
        "dispatching thread's CPU time per blocked call.",
    ]
    bullets = [
        _bullet_cost(summary),
        _bullet_loop(summary),
        _bullet_accounting(summary),
        _bullet_fix(summary),
        _bullet_patch(summary),
    ]
    acc = _accounting_rows(summary)
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
    if issue:
        folded += md.details("Issue-ready text for equinox#192", issue)
    return md.answer_page(
        "equinox#192: what eqx.filter_pmap costs per call, per leaf", intro, bullets, folded
    )
