"""The runs-ahead study's figures, one claim each; ``(figure, plotted data)`` from each,
colours from the study's one palette (:mod:`jaxperf.plots`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ... import plots
from ... import runs_ahead as rule
from .methods import PATCHED, label
from .seed_loop import REFERENCE, SLOW

SHORT = {
    REFERENCE: "jax.jit on params",
    SLOW: "eqx.filter_jit",
    PATCHED: "eqx.filter_jit, change patched in",
    "cached_filter_jit": "jaxperf.cached_filter_jit",
}
BOUND_STYLES = {
    "overlap_bound_it_per_s": ("--", "1 / max(H, D): overlapped"),
    "serial_bound_it_per_s": (":", "1 / (H + D): one after the other"),
}


def _color(method: str) -> str:
    return plots.color(method)


def _label(method: str) -> str:
    return SHORT.get(method, label(method))


@plots.draws
def plot_seed_loop(summary: pd.DataFrame, setup_label: str = "") -> tuple[plt.Figure, pd.DataFrame]:
    """it/s of the seed's loop against the loader's host time per batch, one panel per step:
    median and IQR per method, and the two bounds from H and D timed alone in the same run."""
    steps = list(dict.fromkeys(summary["step"]))
    fig, axes = plt.subplots(1, len(steps), figsize=(5.2 * len(steps), 4.0), squeeze=False)
    shown = []
    for ax, step in zip(axes[0], steps):
        part = summary[summary["step"] == step].sort_values("H_ms")
        bounds = part.drop_duplicates("cost_fraction").sort_values("H_ms")
        for column, (ls, text) in BOUND_STYLES.items():
            ax.plot(bounds["H_ms"], bounds[column], color="0.35", ls=ls, lw=1.2, label=text)
        for method, rows in part.groupby("method", sort=False):
            color = _color(method)
            ax.plot(
                rows["H_ms"], rows["it_per_s_median"], marker="o", ms=4, color=color, label=_label(method)
            )
            ax.fill_between(
                rows["H_ms"], rows["it_per_s_q25"], rows["it_per_s_q75"], color=color, alpha=0.18, lw=0
            )
        d = float(part["D_ms"].median())
        ax.axvline(d, color="0.6", lw=0.8, ls="-.")
        ax.annotate(
            f"H = D ({d:.1f} ms)",
            xy=(d, 0.0),
            xycoords=("data", "axes fraction"),
            xytext=(-3, 4),
            textcoords="offset points",
            ha="right",
            fontsize=7.5,
            color="0.35",
        )
        ax.set_title(f"{step} step" + (f" ({setup_label})" if setup_label else ""), fontsize=10)
        ax.set_xlabel("loader + transfer host time per batch, H (ms, median)", fontsize=9)
        ax.set_ylabel("loop it/s (median, IQR band)", fontsize=9)
        ax.set_ylim(bottom=0)
        shown.append(part.assign(panel=step))
    plots.legend_outside(axes[0][-1])
    fig.suptitle("The seed's loop: a call that waits adds the loader's time to the step's", fontsize=11)
    return fig, pd.concat(shown, ignore_index=True)


@plots.draws
def plot_verdicts(verdicts: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Enqueue time over blocked time per call, per method (median, IQR whiskers), with the
    verdict's boundary: left of it a method runs ahead, right of it it waits for each call."""
    data = verdicts.sort_values(["ratio_median"]).reset_index(drop=True)
    names = list(dict.fromkeys(data["method"]))
    fig, ax = plt.subplots(figsize=(7.5, 0.38 * len(names) + 1.6))
    for donated, marker, offset in ((False, "o", -0.12), (True, "s", 0.12)):
        rows = data[data["donated"] == donated]
        for r in rows.itertuples():
            y = names.index(r.method) + offset
            color = _color(r.method)
            ax.plot([r.ratio_q25, r.ratio_q75], [y, y], color=color, lw=2)
            face = color if not donated else "white"
            ax.plot(r.ratio_median, y, marker=marker, ms=6, color=color, mfc=face)
    ax.axvline(rule.BOUNDARY, color="0.35", ls="--", lw=1)
    ax.annotate(
        f"boundary {rule.BOUNDARY}",
        xy=(rule.BOUNDARY, 0.0),
        xycoords=("data", "axes fraction"),
        xytext=(-3, 4),
        textcoords="offset points",
        ha="right",
        fontsize=7.5,
        color="0.35",
    )
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([_label(n) for n in names], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(max(1e-3, float(np.nanmin(data["ratio_q25"])) / 2), 3.0)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("enqueue time / blocked time per call (median, IQR)", fontsize=9)
    handles = [
        Line2D([], [], marker="o", color="0.3", ls="", label="model and optimiser state kept"),
        Line2D([], [], marker="s", color="0.3", mfc="white", ls="", label="donated"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title("Which calls return before their step has run (left of the line)", fontsize=10)
    return fig, data
