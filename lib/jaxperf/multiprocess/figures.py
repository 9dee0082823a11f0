"""The study's figures: scaling with the process count, and where a step's time goes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import plots
from .analysis import add_ms
from .methods import METHODS


@plots.draws
def plot_scaling(timings: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """it/s (top) and host CPU ms per call (bottom) vs processes, one column per step
    (noop, train), one line per method: median over every process and repeat, IQR band."""
    t = add_ms(timings)
    t = t[t["step"].isin(["noop", "train"])]
    steps = [s for s in ("noop", "train") if s in set(t["step"])]
    order = [m for m in METHODS if m in set(t["method"])]
    fig, axes = plt.subplots(2, len(steps), figsize=(5.5 * len(steps), 7.5), squeeze=False)
    frames = []
    for col, step in enumerate(steps):
        part = t[t["step"] == step]
        for row, (measure, label) in enumerate(
            [
                ("it_per_s", "it/s, each call blocked (median)"),
                ("cpu_ms_per_call", "host thread CPU ms / call (median)"),
            ]
        ):
            ax = axes[row][col]
            stats = plots.median_iqr_lines(
                ax, part, "processes", measure, "method", hue_order=order, logx=False
            )
            stats["measure"], stats["step"] = measure, step
            frames.append(stats)
            ax.set_xticks(sorted(part["processes"].unique()))
            ax.set_xlabel("processes (global devices fixed; each holds global/N)")
            ax.set_ylabel(label)
            ax.set_title(f"{step} step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, [METHODS.get(lbl, lbl) for lbl in labels], loc="upper center", ncol=3, fontsize=8)
    return fig, pd.concat(frames, ignore_index=True)


@plots.draws
def plot_split(split: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Wall ms per call of the train step without its all-reduce, of the all-reduce alone,
    and of the full step, per process count; one panel per method."""
    methods = list(dict.fromkeys(split["method"]))
    fig, axes = plt.subplots(1, len(methods), figsize=(5.5 * len(methods), 4.2), squeeze=False)
    parts = {
        "step_without_collective_ms": "step, no collective",
        "allreduce_alone_ms": "all-reduce alone",
        "step_with_allreduce_ms": "step with all-reduce",
    }
    long = split.melt(
        id_vars=["processes", "method"],
        value_vars=list(parts),
        var_name="part",
        value_name="wall_ms_per_call",
    )
    for ax, method in zip(axes[0], methods):
        data = long[long["method"] == method].pivot(
            index="processes", columns="part", values="wall_ms_per_call"
        )
        data[list(parts)].rename(columns=parts).plot.bar(ax=ax, rot=0)
        ax.set_title(METHODS.get(method, method))
        ax.set_xlabel("processes")
        ax.set_ylabel("wall ms per call (median)")
        ax.legend(fontsize=8)
    return fig, long
