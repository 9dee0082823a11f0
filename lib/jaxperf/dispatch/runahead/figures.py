"""The runs-ahead study's figures, one claim each; ``(figure, plotted data)`` from each,
colours from the study's one palette (:mod:`jaxperf.plots`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ... import figure_rules, plots
from ... import runs_ahead as rule
from .methods import PATCHED, label
from .seed_loop import REFERENCE, SLOW

SHORT = {
    REFERENCE: "jax.jit on params",
    "jit_params": "jax.jit on params",
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


#: Drawn as lines with an IQR band: the reference and the method the study is about. The
#: other methods (the fixes) are hollow markers with IQR whiskers on top, so a fix that
#: ties with ``jax.jit`` shows as markers on its line instead of a line hidden under it.
LINES = (REFERENCE, SLOW)
MARKERS = ("s", "^", "D", "v")


def _step_panel(ax: plt.Axes, part: pd.DataFrame) -> None:
    """One step's loop: the two bounds, then each method's median it/s (and IQR) vs H."""
    bounds = part.drop_duplicates("cost_fraction").sort_values("H_ms")
    for column, (ls, text) in BOUND_STYLES.items():
        ax.plot(bounds["H_ms"], bounds[column], color="0.35", ls=ls, lw=1.2, label=text)
    methods = list(dict.fromkeys(part["method"]))
    ordered = [m for m in LINES if m in methods] + [m for m in methods if m not in LINES]
    for k, method in enumerate(ordered):
        rows = part[part["method"] == method].sort_values("H_ms")
        color = _color(method)
        if method in LINES:
            ax.plot(
                rows["H_ms"], rows["it_per_s_median"], marker="o", ms=4, color=color, label=_label(method)
            )
            ax.fill_between(
                rows["H_ms"], rows["it_per_s_q25"], rows["it_per_s_q75"], color=color, alpha=0.18, lw=0
            )
            continue
        marker = MARKERS[(k - len(LINES)) % len(MARKERS)]
        ax.vlines(rows["H_ms"], rows["it_per_s_q25"], rows["it_per_s_q75"], color=color, lw=1.2, zorder=3)
        ax.plot(
            rows["H_ms"], rows["it_per_s_median"], ls="", marker=marker, ms=7, mfc="none", mew=1.4,
            color=color, label=_label(method), zorder=3,
        )  # fmt: skip
    d = float(part["D_ms"].median())
    ax.axvline(
        d, color="0.6", lw=0.8, ls="-.", gid=figure_rules.REFERENCE_GID, label="H = D, the step's device time"
    )


@plots.draws
def plot_seed_loop(summary: pd.DataFrame, setup_label: str = "") -> tuple[plt.Figure, pd.DataFrame]:
    """it/s of the seed's loop against the loader's host time per batch H, one panel per step
    stacked over one H axis and one log it/s scale: the two bounds from H and D timed alone in
    the same run, ``jax.jit`` and ``eqx.filter_jit`` as median lines with IQR bands, the other
    methods as markers with IQR whiskers, and H = D marked."""
    steps = list(dict.fromkeys(summary["step"]))
    fig, axes = figure_rules.stacked(len(steps), row_height=2.6)
    shown = []
    for ax, step in zip(axes, steps):
        part = summary[summary["step"] == step]
        _step_panel(ax, part)
        ax.set_yscale("log")
        figure_rules.plain_log_ticks(ax, "y")
        ax.set_ylabel("loop it/s\n(median, IQR)")
        d = float(part["D_ms"].median())
        figure_rules.panel_title(
            ax, f"{step} step: D = {d:.1f} ms" + (f" ({setup_label})" if setup_label else "")
        )
        shown.append(part.assign(panel=step))
    axes[-1].set_xlabel("loader + transfer host time per batch, H (ms, median)")
    plots.legend_outside(axes[0])
    figure_rules.title(fig, "The seed's loop: a call that waits adds the loader's time to the step's")
    return fig, pd.concat(shown, ignore_index=True)


@plots.draws
def plot_verdicts(verdicts: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Enqueue time over blocked time per call, one row per method (median, IQR whiskers), the
    state kept and donated side by side, with the verdict's boundary: left of it a method runs
    ahead, right of it it waits for each call."""
    data = verdicts.sort_values(["ratio_median"]).reset_index(drop=True)
    names = list(dict.fromkeys(data["method"]))
    fig, ax = plt.subplots(figsize=(figure_rules.ROW_WIDTH_IN, 0.38 * len(names) + 2.4))
    for donated, marker, offset in ((False, "o", -0.12), (True, "s", 0.12)):
        rows = data[data["donated"] == donated]
        y = [names.index(m) + offset for m in rows["method"]]
        colors = [_color(m) for m in rows["method"]]
        # One artist per state: the rows are categories named on the y axis, not series.
        ax.hlines(y, rows["ratio_q25"], rows["ratio_q75"], colors=colors, lw=2)
        face = "white" if donated else colors
        ax.scatter(rows["ratio_median"], y, marker=marker, s=36, c=face, edgecolors=colors, zorder=3)
    ax.axvline(rule.BOUNDARY, color="0.35", ls="--", lw=1, gid=figure_rules.REFERENCE_GID)
    ax.set_yticks(range(len(names)), [_label(n) for n in names])
    ax.set_xscale("log")
    ax.set_xlim(max(1e-3, float(np.nanmin(data["ratio_q25"])) / 2), 3.0)
    figure_rules.plain_log_ticks(ax, "x")
    ax.set_xlabel("enqueue time / blocked time per call (median, IQR)")
    handles = [
        Line2D([], [], marker="o", color="0.3", ls="", label="kept"),
        Line2D([], [], marker="s", color="0.3", mfc="white", ls="", label="donated"),
        Line2D([], [], color="0.35", ls="--", label=f"boundary {rule.BOUNDARY}"),
    ]
    ax.legend(  # below the axis: the method names already fill the left of the figure
        handles=handles,
        title="model and optimiser state",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=3,
        frameon=False,
    )
    figure_rules.title(fig, "Which calls return before their step has run (left of the boundary)")
    return fig, data
