"""summary.md of notebook 11: the answer for Flax NNX in at most five bullets, then the detail
folded: every case, the accounting, Flax's tests and benchmark, the goals, the issue text."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import goals as rule
from .. import markdown as md
from .issue import render as issue_text
from .report import BASELINE, DROP_IN, LABELS, PARTS


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


def _cost(s: dict[str, Any]) -> str:
    own = s["own_per_variable"]
    others = ", ".join(
        f"{LABELS[m]} {own[m]['b_us_per_leaf']:.1f}"
        for m in (
            "nnx_tree",
            "nnx_cached_partial",
            "nnx_jit_partial",
            BASELINE,
            "nnx_split_leaves_jit",
            DROP_IN,
        )
        if m in own
    )
    return (
        f"- **The cost, per call per Variable** (the dispatching thread's CPU on this machine, models of "
        f"{', '.join(str(v) for v in s['variables'])} Variables with their optimizer, the no-op step): `nnx.jit` in "
        f"graph mode costs {per_leaf_text(own.get('nnx_jit'), 'Variable')} of host CPU; in µs per Variable, {others}. "
        f"Over {LABELS[BASELINE]}, graph mode costs {per_leaf_text(s['per_variable'].get('nnx_jit'), 'Variable')} more."
    )


def _where(s: dict[str, Any]) -> str:
    acc = pd.DataFrame(s["accounting"])
    if acc.empty:
        return ""
    deepest = acc[acc["depth"] == acc["depth"].max()]
    step = "train" if "train" in set(deepest["step"]) else deepest["step"].iloc[0]
    part = deepest[deepest["step"] == step].set_index("part")
    gap, rest = part.loc["gap"], part.loc["unexplained"]
    pieces = ", ".join(f"{name} {part.loc[name, 'cpu_ms']:.1f} ms" for name in PARTS)
    holds = rest["cpu_ms_q25"] <= 0 <= rest["cpu_ms_q75"]
    return (
        f"- **Where it goes** (one accounting in thread CPU, the {step} step at depth {int(part['depth'].iloc[0])}): "
        f"the gap over {LABELS[BASELINE]} is {md.fmt_stat({'median': gap['cpu_ms'], 'q25': gap['cpu_ms_q25'], 'q75': gap['cpu_ms_q75']}, 1)} ms "
        f"per call: {pieces}; unexplained "
        f"{md.fmt_stat({'median': rest['cpu_ms'], 'q25': rest['cpu_ms_q25'], 'q75': rest['cpu_ms_q75']}, 1)} ms "
        f"({'the parts add up: its range holds 0' if holds else 'the parts do not add up: its range excludes 0'})."
    )


def _instead(s: dict[str, Any]) -> str:
    r = s["ranges"]
    loop = {m: r.get(f"{m}/{BASELINE}", {}).get("loop_it_per_s") for m in LABELS}
    blocked = r.get(f"{DROP_IN}/{BASELINE}", {}).get("it_per_s")
    waits = {w["method"]: w["verdict"] for w in s["waits"]}
    waiting = ", ".join(f"{LABELS[m]} {v}" for m, v in waits.items() if m in LABELS)
    return (
        f"- **What to write instead:** `jaxperf.cached_nnx_jit`, a drop-in for `nnx.jit` (graph-mode semantics), "
        f"runs at {range_text(loop[DROP_IN])} the it/s of {LABELS[BASELINE]} in a loop that blocks once at its end, "
        f"{range_text(blocked)} with each call blocked. Flax's own: `nnx.jit_partial` {range_text(loop['nnx_jit_partial'])}, "
        f"tree mode {range_text(loop['nnx_tree'])}, `nnx.cached_partial` {range_text(loop['nnx_cached_partial'])}; graph mode "
        f"{range_text(loop['nnx_jit'])}." + (f" On a wide train step: {waiting}." if waiting else "")
    )


def _flax(s: dict[str, Any]) -> str:
    parts = []
    tests = s.get("flax_tests")
    if tests:
        total = pd.DataFrame(tests["counts"]).groupby("mode")[["passed", "failed", "error", "skipped"]].sum()
        sides = "; ".join(
            f"{mode}: {int(row.passed)} passed, {int(row.failed + row.error)} failed"
            for mode, row in total.iterrows()
        )
        parts.append(
            f"Flax {tests.get('flax', '')}'s own `nnx.jit` tests, as shipped and with the drop-in under that name: {sides}"
        )
    bench = pd.DataFrame(s.get("flax_benchmark") or [])
    if len(bench):
        here = bench[bench["source"] == "this machine"]
        ratio = here.pivot_table(index="depth", columns="mode", values="us_per_step")
        if {"nnx", "jax"} <= set(ratio.columns):
            deep = ratio.index.max()
            parts.append(
                f"Flax's `benchmarks/nnx_graph_overhead.py` here at depth {deep}: nnx {ratio.loc[deep, 'nnx']:,.0f} vs jax "
                f"{ratio.loc[deep, 'jax']:,.0f} µs per step (its own timing method; published in Flax PR #4399 at depth 100: "
                "7,962 vs 1,790)"
            )
    return "- **Checked against Flax's own:** " + "; ".join(parts) + "." if parts else ""


def render(summary: dict[str, Any], info: Any) -> str:
    intro = [
        md.smoke_notice(summary["quick"]),
        f"Backend **{info.backend}**, {info.device_count} x {info.device_kind}. Numbers: median [interquartile "
        "range] over interleaved rounds, measured by `jaxperf.diagnose` (the engine of notebooks 01 and 10); "
        "ratios per pair (same round). The same mechanism as equinox#192: a Python walk of the module tree "
        "on every call.",
    ]
    bullets = [_cost(summary), _where(summary), _instead(summary), _flax(summary)]
    folded = md.details(
        "Benchmark goals (the project's own, judged on their spread)",
        [
            f"- {md.escape(name)}: **{rule.text(g['verdict'], False)}** ({g['count']['met']} met, {g['count']['tie']} a tie, {g['count']['not met']} not met)"
            for name, g in summary["goals"].items()
        ]
        or ["- not judged (smoke run)"],
    )
    acc = pd.DataFrame(summary["accounting"])
    if len(acc):
        folded += md.details("The accounting, every part (thread CPU ms per call)", md.table(acc))
    for key, found in summary["ranges"].items():
        cells = pd.DataFrame(found["loop_it_per_s"]["by_cell"])
        if len(cells):
            cells["ratio"] = [md.ratio(c) for c in found["loop_it_per_s"]["by_cell"]]
            method = key.split("/")[0]
            folded += md.details(
                f"{LABELS[method]} it/s ÷ {LABELS[BASELINE]}, a loop that blocks once at its end: every case",
                md.table(cells[["step", "leaves", "ratio", "verdict"]]),
            )
    if summary.get("flax_tests"):
        folded += md.details(
            "Flax's tests per file, as shipped and with the drop-in",
            md.table(pd.DataFrame(summary["flax_tests"]["counts"])),
        )
    if summary["not_timed"]:
        folded += md.details("Paths not timed, and why", md.table(pd.DataFrame(summary["not_timed"])))
    folded += md.details("Issue-ready text for Flax", issue_text(summary))
    return md.answer_page("Flax NNX: what nnx.jit costs per call, per Variable", intro, bullets, folded)
