"""Figures, headline numbers and the issue-ready summary of the dispatch study."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import plots, timing
from .dispatch import BASELINE, METHODS
from .records import markdown_table

FIX = "cached_filter_pmap"
SLOW = "filter_pmap"
GOAL_VS_PMAP = 0.95  # the fix's it/s vs jax.pmap on params, every size
GOAL_VS_FILTER = 2.5  # the fix's it/s vs eqx.filter_pmap, at >= GOAL_LEAVES leaves
GOAL_LEAVES = 100
SEED_NOTE = (
    "for scale: equinox#192 reported 8 it/s (filter_pmap) vs 25 it/s (pmap on params) on a TPU v3-8, 2022"
)


def _order(df: pd.DataFrame) -> list[str]:
    return [m for m in METHODS if m in set(df["method"])]


IT_MEASURES = {
    "it_per_s": "it/s, each call blocked",
    "loop_it_per_s": "it/s, pipelined loop (block once after the loop)",
}


def plot_it_per_s(df: pd.DataFrame):
    """The headline: it/s vs leaves per method (median line, IQR band); one row per
    measure (blocked calls, pipelined loop), one column per step."""
    steps = list(dict.fromkeys(df["step"]))
    measures = [m for m in IT_MEASURES if m in df]
    fig, axes = plt.subplots(
        len(measures), len(steps), figsize=(6.2 * len(steps), 4.4 * len(measures)), squeeze=False
    )
    stats = []
    for r, measure in enumerate(measures):
        for c, step in enumerate(steps):
            ax = axes[r][c]
            part = df[df["step"] == step]
            mlp = part[part["kind"] == "mlp"]
            s = plots.median_iqr_lines(
                ax, mlp, "leaves", measure, "method", hue_order=_order(part), logx=True, logy=True
            )
            stats.append(s.assign(step=step, kind="mlp", measure=measure))
            other = part[part["kind"] != "mlp"]
            if not other.empty:
                colors = {line.get_label(): line.get_color() for line in ax.get_lines()}
                t = (
                    other.groupby(["method", "leaves"])[measure]
                    .describe(percentiles=[0.25, 0.5, 0.75])[["25%", "50%", "75%", "count"]]
                    .set_axis(["q25", "median", "q75", "n"], axis=1)
                    .reset_index()
                )
                for _, row in t.iterrows():
                    ax.scatter(
                        row["leaves"],
                        row["median"],
                        marker="*",
                        s=110,
                        zorder=5,
                        color=colors.get(row["method"], "k"),
                        edgecolor="k",
                        linewidth=0.5,
                    )
                stats.append(t.assign(step=step, kind="transformer", measure=measure))
            ax.set_title(f"{step} step — {IT_MEASURES[measure]}", fontsize=10)
            ax.set_xlabel("array leaves per call (model + batch + Adam state); ★ = transformer", fontsize=9)
            ax.set_ylabel("it/s (median, IQR band)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles,
        [METHODS.get(label, label) for label in labels],
        loc="upper center",
        ncol=3,
        fontsize=8,
        bbox_to_anchor=(0.5, 1.0),
    )
    return fig, pd.concat(stats, ignore_index=True)


def plot_host_overhead(df: pd.DataFrame):
    """Host work per call: the dispatching thread's CPU time, and enqueue-only time."""
    long = pd.concat(
        [
            df.assign(measure="thread CPU µs per call (blocked calls)", us=df["cpu_us_per_call"]),
            df.assign(measure="enqueue-only µs per call (block after loop)", us=df["dispatch_us_per_call"]),
        ]
    )
    measures = list(dict.fromkeys(long["measure"]))
    steps = list(dict.fromkeys(df["step"]))
    fig, axes = plt.subplots(len(steps), 2, figsize=(12.5, 4.3 * len(steps)), squeeze=False)
    stats = []
    for r, step in enumerate(steps):
        for c, measure in enumerate(measures):
            part = long[(long["step"] == step) & (long["measure"] == measure) & (long["kind"] == "mlp")]
            s = plots.median_iqr_lines(
                axes[r][c], part, "leaves", "us", "method", hue_order=_order(part), logx=True, logy=True
            )
            stats.append(s.assign(step=step, measure=measure))
            axes[r][c].set_title(f"{measure} — {step} step (MLP sweep)", fontsize=10)
            axes[r][c].set_xlabel("array leaves per call")
            axes[r][c].set_ylabel("µs per call (median, IQR band)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(
        handles, [METHODS.get(label, label) for label in labels], loc="upper center", ncol=3, fontsize=8
    )
    return fig, pd.concat(stats, ignore_index=True)


def plot_breakdown(stages: pd.DataFrame):
    """Stacked bars: median ms per stage of one eqx.filter_pmap call, per model."""
    med = (
        stages.groupby(["model", "leaves", "stage"], sort=False)["seconds"]
        .median()
        .mul(1e3)
        .rename("median_ms")
        .reset_index()
    )
    table = med.pivot_table(index=["leaves", "model"], columns="stage", values="median_ms", sort=True)
    table = table[[s for s in dict.fromkeys(stages["stage"]) if s in table.columns]]
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    bottom = np.zeros(len(table))
    labels = [f"{model}\n({leaves} leaves)" for leaves, model in table.index]
    for stage in table.columns:
        ax.bar(labels, table[stage].to_numpy(), bottom=bottom, label=stage)
        bottom += table[stage].to_numpy()
    ax.set_ylabel("ms per call (median of each stage)")
    ax.set_title("Where one eqx.filter_pmap call spends its time (stage timers)")
    ax.legend(fontsize=8)
    return fig, med


def speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Per-pair ratios of the fix over eqx.filter_pmap and over jax.pmap on params,
    for each it/s measure."""
    renamed = df.rename(columns={"method": "variant"})
    out = []
    for measure in [m for m in IT_MEASURES if m in df]:
        for base in (SLOW, BASELINE):
            r = timing.pair_ratios(renamed, base, measure, by=["step", "model"])
            r = r[r["variant"] == FIX][["step", "model", "kind", "leaves", "repeat", "ratio"]]
            out.append(r.assign(over=base, measure=measure))
    return pd.concat(out, ignore_index=True)


def plot_speedup(ratios: pd.DataFrame):
    """The fix's per-pair it/s ratio over eqx.filter_pmap and over jax.pmap on params, vs leaves."""
    steps = list(dict.fromkeys(ratios["step"]))
    fig, axes = plt.subplots(1, len(steps), figsize=(6.2 * len(steps), 4.8), squeeze=False)
    stats = []
    names = {SLOW: "÷ eqx.filter_pmap", BASELINE: "÷ jax.pmap on params"}
    for ax, step in zip(axes[0], steps):
        part = ratios[ratios["step"] == step].copy()
        part["series"] = (
            part["over"].map(names)
            + ", "
            + part["measure"].map({"it_per_s": "blocked", "loop_it_per_s": "pipelined"})
        )
        s = plots.median_iqr_lines(ax, part, "leaves", "ratio", "series", logx=True, logy=False)
        stats.append(s.assign(step=step))
        ax.axhline(1.0, color="0.5", lw=0.8)
        ax.axhline(GOAL_VS_PMAP, color="tab:orange", ls=":", lw=1, label=f"goal ≥ {GOAL_VS_PMAP} × pmap")
        ax.axhline(
            GOAL_VS_FILTER, color="tab:blue", ls=":", lw=1, label=f"goal ≥ {GOAL_VS_FILTER} × filter_pmap"
        )
        ax.set_title(f"cached_filter_pmap it/s ratio — {step} step")
        ax.set_xlabel("array leaves per call (MLP sweep and transformer)")
        ax.set_ylabel("per-pair it/s ratio (median, IQR band)")
        ax.legend(fontsize=7)
    return fig, pd.concat(stats, ignore_index=True)


def _stat_cols(series: pd.Series) -> dict[str, float]:
    s = timing.iqr_stats(series)
    return {"median": s["median"], "q25": s["q25"], "q75": s["q75"]}


def headline(df: pd.DataFrame, ratios: pd.DataFrame, failures: pd.DataFrame) -> dict[str, Any]:
    """summary.json's numbers: per (step, model, method) leaves, it/s and ratio to pmap,
    plus the goals, judged on each it/s measure."""
    rows = []
    for (step, model, method), part in df.groupby(["step", "model", "method"], sort=False):
        row = {"step": step, "model": model, "method": method, "leaves": int(part["leaves"].iloc[0])}
        for col in (
            "it_per_s",
            "loop_it_per_s",
            "ratio_to_pmap_params",
            "cpu_us_per_call",
            "dispatch_us_per_call",
        ):
            if col in part:
                row[col] = _stat_cols(part[col])
        rows.append(row)
    goals = []
    for (step, model, measure), part in ratios.groupby(["step", "model", "measure"], sort=False):
        vs_pmap = part[part["over"] == BASELINE]["ratio"]
        vs_filter = part[part["over"] == SLOW]["ratio"]
        leaves = int(part["leaves"].iloc[0])
        cpu = df[(df["step"] == step) & (df["model"] == model)].groupby("method")["cpu_us_per_call"].median()
        goals.append(
            {
                "step": step,
                "model": model,
                "leaves": leaves,
                "measure": measure,
                "fix_over_pmap_params": _stat_cols(vs_pmap),
                "fix_over_filter_pmap": _stat_cols(vs_filter),
                "meets_vs_pmap": bool(vs_pmap.median() >= GOAL_VS_PMAP),
                "meets_vs_filter_pmap": (
                    bool(vs_filter.median() >= GOAL_VS_FILTER) if leaves >= GOAL_LEAVES else None
                ),
                "host_cpu_filter_pmap_over_fix": float(cpu.get(SLOW, np.nan) / cpu.get(FIX, np.nan)),
            }
        )
    verdict = {}
    for measure in dict.fromkeys(g["measure"] for g in goals):
        mine = [g for g in goals if g["measure"] == measure]
        verdict[measure] = {
            "all_meet_vs_pmap": all(g["meets_vs_pmap"] for g in mine),
            "all_meet_vs_filter_pmap": all(g["meets_vs_filter_pmap"] in (True, None) for g in mine),
        }
    return {
        "baseline": BASELINE,
        "goals": {
            "fix_vs_pmap_params_min": GOAL_VS_PMAP,
            "fix_vs_filter_pmap_min": GOAL_VS_FILTER,
            "at_leaves_min": GOAL_LEAVES,
        },
        "results": rows,
        "fix": goals,
        "verdict": verdict,
        "unsupported": failures.to_dict(orient="records"),
    }


def _fmt(stat: dict[str, float], digits: int = 2) -> str:
    return f"{stat['median']:.{digits}f} [{stat['q25']:.{digits}f}, {stat['q75']:.{digits}f}]"


def markdown(summary: dict[str, Any], info: Any, stages_ms: pd.DataFrame, profile: pd.DataFrame) -> str:
    """An answer to equinox#192 with numbers, ready to paste into the issue."""
    res = pd.DataFrame(summary["results"])
    lines = [
        "## equinox#192: eqx.filter_pmap vs jax.pmap, measured",
        "",
        f"Backend **{info.backend}**, {info.device_count} x {info.device_kind}. Each cell: median "
        "[interquartile range] over interleaved repeats; ratios are per pair (same repeat) against "
        "`jax.pmap` over `eqx.partition(model, eqx.is_array)[0]`, partitioned once outside the loop.",
        "",
    ]
    for step in dict.fromkeys(res["step"]):
        part = res[res["step"] == step]
        table = []
        for model in dict.fromkeys(part["model"]):
            m = part[part["model"] == model].set_index("method")
            row = {"model": model, "leaves": int(m["leaves"].iloc[0])}
            for method in (BASELINE, SLOW, FIX):
                row[f"{method} it/s"] = _fmt(m.loc[method, "it_per_s"], 1) if method in m.index else "n/a"
            if "loop_it_per_s" in m.columns:
                row["pipelined it/s: pmap / filter_pmap / fix"] = " / ".join(
                    f"{m.loc[k, 'loop_it_per_s']['median']:.1f}" if k in m.index else "n/a"
                    for k in (BASELINE, SLOW, FIX)
                )
            row["filter_pmap / pmap"] = (
                _fmt(m.loc[SLOW, "ratio_to_pmap_params"]) if SLOW in m.index else "n/a"
            )
            row["fix / pmap"] = _fmt(m.loc[FIX, "ratio_to_pmap_params"]) if FIX in m.index else "n/a"
            table.append(row)
        lines += [f"### {step} step", "", markdown_table(pd.DataFrame(table)), ""]
    fix = pd.DataFrame(summary["fix"])
    lines += [
        "### The fix: `jaxperf.cached_filter_pmap` (partition once, reuse)",
        "",
        "Blocked = each call waits for its result; pipelined = a loop that blocks once at the "
        "end, as a training loop lets dispatch run ahead.",
        "",
        markdown_table(
            pd.DataFrame(
                {
                    "step": fix["step"],
                    "model": fix["model"],
                    "leaves": fix["leaves"],
                    "it/s measure": fix["measure"].map({"it_per_s": "blocked", "loop_it_per_s": "pipelined"}),
                    "fix ÷ pmap": [_fmt(s) for s in fix["fix_over_pmap_params"]],
                    "fix ÷ filter_pmap": [_fmt(s) for s in fix["fix_over_filter_pmap"]],
                    "filter_pmap ÷ fix host CPU": [f"{v:.2f}" for v in fix["host_cpu_filter_pmap_over_fix"]],
                }
            )
        ),
        "",
    ]
    for measure, v in summary["verdict"].items():
        label = {"it_per_s": "blocked it/s", "loop_it_per_s": "pipelined it/s"}.get(measure, measure)
        lines.append(
            f"- {label}: fix ≥ {GOAL_VS_PMAP}× pmap at every size **{'met' if v['all_meet_vs_pmap'] else 'not met'}**; "
            f"fix ≥ {GOAL_VS_FILTER}× filter_pmap at ≥ {GOAL_LEAVES} leaves "
            f"**{'met' if v['all_meet_vs_filter_pmap'] else 'not met'}**."
        )
    lines.append("")
    if not stages_ms.empty:
        lines += [
            "### Where one filter_pmap call spends its time (median ms per stage)",
            "",
            markdown_table(
                stages_ms.pivot_table(
                    index="stage", columns="model", values="median_ms", sort=False
                ).reset_index()
            ),
            "",
        ]
    if not profile.empty:
        lines += ["### cProfile: top self time per filter_pmap call", "", markdown_table(profile.head(8)), ""]
    if summary["unsupported"]:
        lines += [
            "### Methods that could not run a model",
            "",
            markdown_table(pd.DataFrame(summary["unsupported"])),
            "",
        ]
    return "\n".join(lines)
