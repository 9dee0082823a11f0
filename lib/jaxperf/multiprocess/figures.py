"""The study's figures: scaling with the process count, and where a step's time goes; one
row of panels per model (the MLP first), so models of different leaf counts never share an axis."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import plots
from .analysis import add_ms
from .methods import METHODS

MEASURES = [
    ("it_per_s", "it/s, each call blocked (median)"),
    ("cpu_ms_per_call", "host thread CPU ms / call (median)"),
]


def _models(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["model"]))


@plots.draws
def plot_scaling(timings: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """it/s and host CPU ms per call vs processes: per model, two rows (it/s, CPU ms), one
    column per step (noop, train), one line per method: median over every process and repeat,
    IQR band."""
    t = add_ms(timings)
    t = t[t["step"].isin(["noop", "train"])]
    steps = [s for s in ("noop", "train") if s in set(t["step"])]
    models = _models(t)
    order = [m for m in METHODS if m in set(t["method"])]
    rows = len(models) * len(MEASURES)
    fig, axes = plt.subplots(rows, len(steps), figsize=(5.5 * len(steps), 3.75 * rows), squeeze=False)
    frames = []
    for m, model in enumerate(models):
        for col, step in enumerate(steps):
            part = t[(t["step"] == step) & (t["model"] == model)]
            for r, (measure, label) in enumerate(MEASURES):
                ax = axes[m * len(MEASURES) + r][col]
                stats = plots.median_iqr_lines(
                    ax, part, "processes", measure, "method", hue_order=order, logx=False
                )
                stats["measure"], stats["step"], stats["model"] = measure, step, model
                frames.append(stats)
                ax.set_xticks(sorted(part["processes"].unique()))
                ax.set_xlabel("processes (global devices fixed; each holds global/N)")
                ax.set_ylabel(label)
                ax.set_title(f"{model}: {step} step")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, [METHODS.get(lbl, lbl) for lbl in labels], loc="upper center", ncol=3, fontsize=8)
    return fig, pd.concat(frames, ignore_index=True)


@plots.draws
def plot_split(split: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Wall ms per call of the train step without its all-reduce, of the all-reduce alone,
    and of the full step, per process count; one row of panels per model, one panel per method."""
    models = _models(split)
    methods = [m for m in METHODS if m in set(split["method"])]
    fig, axes = plt.subplots(
        len(models), len(methods), figsize=(5.5 * len(methods), 4.2 * len(models)), squeeze=False
    )
    parts = {
        "step_without_collective_ms": "step, no collective",
        "allreduce_alone_ms": "all-reduce alone",
        "step_with_allreduce_ms": "step with all-reduce",
    }
    long = split.melt(
        id_vars=["processes", "model", "method"],
        value_vars=list(parts),
        var_name="part",
        value_name="wall_ms_per_call",
    )
    for row, model in zip(axes, models):
        for ax, method in zip(row, methods):
            data = long[(long["method"] == method) & (long["model"] == model)].pivot(
                index="processes", columns="part", values="wall_ms_per_call"
            )
            if data.empty:
                ax.set_axis_off()
                continue
            data[list(parts)].rename(columns=parts).plot.bar(ax=ax, rot=0)
            ax.set_title(f"{model}: {METHODS.get(method, method)}")
            ax.set_xlabel("processes")
            ax.set_ylabel("wall ms per call (median)")
            ax.legend(fontsize=8)
    return fig, long
