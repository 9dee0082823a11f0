"""The dispatch study's figures. Each function takes the timing frame (or a table
from :mod:`jaxperf.dispatch.report`) and returns ``(figure, plotted data)``;
``@plots.draws`` records which function drew each figure."""

from __future__ import annotations

from typing import Literal

import matplotlib.axes
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from .. import plots
from .methods import BASELINE, METHODS, SLOW
from .report import FAST_GOAL_NOOP, GOAL_VS_FILTER, GOAL_VS_PMAP, IT_MEASURES, MEASURE_SHORT

DONATED_STYLE: Literal["--"] = "--"


def _order(df: pd.DataFrame) -> list[str]:
    return [m for m in METHODS if m in set(df["method"])]


def _method_lines(ax: matplotlib.axes.Axes, data: pd.DataFrame, y: str, order: list[str]) -> pd.DataFrame:
    """Median + IQR per method vs leaves: solid without donation, dashed with (same colour)."""
    stats = []
    for donated, part in data.groupby("donated", sort=True):
        before = len(ax.get_lines())
        s = plots.median_iqr_lines(ax, part, "leaves", y, "method", hue_order=order, logx=True, logy=True)
        if donated:
            for line in ax.get_lines()[before:]:
                line.set_linestyle(DONATED_STYLE)
                line.set_label(f"_{line.get_label()} (donated)")  # keep the legend to one entry per method
        stats.append(s.assign(donated=bool(donated)))
    return pd.concat(stats, ignore_index=True)


def _legend(fig: plt.Figure, ax: matplotlib.axes.Axes, donated: bool) -> None:
    handles, labels = ax.get_legend_handles_labels()
    labels = [METHODS.get(label, label) for label in labels]
    if donated:
        handles.append(Line2D([], [], color="0.3", ls=DONATED_STYLE))
        labels.append("dashed: model and optimiser state donated")
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=8, bbox_to_anchor=(0.5, 1.0))


def _transformer_stars(ax: matplotlib.axes.Axes, other: pd.DataFrame, measure: str) -> pd.DataFrame:
    colors = {line.get_label(): line.get_color() for line in ax.get_lines()}
    t = (
        other.groupby(["method", "donated", "leaves"])[measure]
        .describe(percentiles=[0.25, 0.5, 0.75])[["25%", "50%", "75%", "count"]]
        .set_axis(["q25", "median", "q75", "n"], axis=1)
        .reset_index()
    )
    for _, row in t.iterrows():
        ax.scatter(
            row["leaves"],
            row["median"],
            marker="*" if not row["donated"] else "P",
            s=110,
            zorder=5,
            color=colors.get(row["method"], "k"),
            edgecolor="k",
            linewidth=0.5,
        )
    return t


@plots.draws
def plot_it_per_s(df: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """The headline: it/s vs leaves per method, with and without donation (median line,
    IQR band); one row per measure (blocked calls, pipelined loop), one column per step."""
    steps = list(dict.fromkeys(df["step"]))
    measures = [m for m in IT_MEASURES if m in df]
    fig, axes = plt.subplots(
        len(measures), len(steps), figsize=(6.6 * len(steps), 4.8 * len(measures)), squeeze=False
    )
    stats = []
    for r, measure in enumerate(measures):
        for c, step in enumerate(steps):
            ax, part = axes[r][c], df[df["step"] == step]
            s = _method_lines(ax, part[part["kind"] == "mlp"], measure, _order(part))
            stats.append(s.assign(step=step, kind="mlp", measure=measure))
            other = part[part["kind"] != "mlp"]
            if not other.empty:
                stats.append(
                    _transformer_stars(ax, other, measure).assign(
                        step=step, kind="transformer", measure=measure
                    )
                )
            ax.set_title(f"{step} step — {IT_MEASURES[measure]}", fontsize=10)
            ax.set_xlabel("array leaves per call (model + batch + Adam state); ★/✚ = transformer", fontsize=9)
            ax.set_ylabel("it/s (median, IQR band)")
    _legend(fig, axes[0][0], df["donated"].any())
    return fig, pd.concat(stats, ignore_index=True)


@plots.draws
def plot_host_overhead(df: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Host work per call vs leaves, every method with and without donation: the dispatching
    thread's CPU time (blocked calls), and enqueue-only time (block after the loop)."""
    measures = {
        "cpu_us_per_call": "thread CPU µs per call (blocked calls)",
        "dispatch_us_per_call": "enqueue-only µs per call (block after loop)",
    }
    steps = list(dict.fromkeys(df["step"]))
    fig, axes = plt.subplots(len(steps), 2, figsize=(13, 4.6 * len(steps)), squeeze=False)
    stats = []
    mlp = df[df["kind"] == "mlp"]
    for r, step in enumerate(steps):
        for c, (column, title) in enumerate(measures.items()):
            ax, part = axes[r][c], mlp[mlp["step"] == step]
            stats.append(_method_lines(ax, part, column, _order(part)).assign(step=step, measure=column))
            ax.set_title(f"{title} — {step} step (MLP sweep)", fontsize=10)
            ax.set_xlabel("array leaves per call")
            ax.set_ylabel("µs per call (median, IQR band)")
    _legend(fig, axes[0][0], df["donated"].any())
    return fig, pd.concat(stats, ignore_index=True)


@plots.draws
def plot_breakdown(stage_ms: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Stacked bars: median ms per stage of one eqx.filter_pmap call, per model
    (``stage_ms`` from :func:`jaxperf.dispatch.report.stage_table`)."""
    table = stage_ms.pivot_table(index=["leaves", "model"], columns="stage", values="median_ms", sort=True)
    table = table[[s for s in dict.fromkeys(stage_ms["stage"]) if s in table.columns]]
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    bottom = np.zeros(len(table))
    labels = [f"{model}\n({leaves} leaves)" for leaves, model in table.index]
    for stage in table.columns:
        ax.bar(labels, table[stage].to_numpy(), bottom=bottom, label=stage)
        bottom += table[stage].to_numpy()
    ax.set_ylabel("ms per call (median of each stage)")
    ax.set_title("Where one eqx.filter_pmap call spends its time (stage timers)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig, stage_ms


@plots.draws
def plot_speedup(ratios: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Per-pair it/s ratios of the fix and the packed paths over jax.pmap on params and over
    eqx.filter_pmap (same donation), pipelined loop, vs leaves; one panel per step and baseline."""
    data = ratios[(ratios["measure"] == "loop_it_per_s") & (ratios["kind"] == "mlp")]
    if data.empty:
        data = ratios[ratios["kind"] == "mlp"]
    steps = list(dict.fromkeys(data["step"]))
    fig, axes = plt.subplots(len(steps), 2, figsize=(13, 4.6 * len(steps)), squeeze=False)
    stats = []
    for r, step in enumerate(steps):
        for c, (over, name) in enumerate(((BASELINE, "jax.pmap on params"), (SLOW, "eqx.filter_pmap"))):
            ax, part = axes[r][c], data[(data["step"] == step) & (data["over"] == over)]
            if part.empty:
                continue
            s = _method_lines(ax, part, "ratio", _order(part))
            stats.append(s.assign(step=step, over=over))
            ax.axhline(1.0, color="0.5", lw=0.8)
            if over == BASELINE:
                ax.axhline(
                    GOAL_VS_PMAP, color="tab:orange", ls=":", lw=1, label=f"_fix goal ≥ {GOAL_VS_PMAP}×"
                )
                if step == "noop":
                    ax.axhline(FAST_GOAL_NOOP, color="tab:green", ls=":", lw=1, label="_packed goal")
            else:
                ax.axhline(GOAL_VS_FILTER, color="tab:blue", ls=":", lw=1, label="_fix goal")
            measure = MEASURE_SHORT[data["measure"].iloc[0]]
            ax.set_title(f"it/s ÷ {name} — {step} step, {measure}", fontsize=10)
            ax.set_xlabel("array leaves per call (MLP sweep)")
            ax.set_ylabel("per-pair ratio (median, IQR band)")
    _legend(fig, axes[0][0], data["donated"].any())
    return fig, pd.concat(stats, ignore_index=True)
