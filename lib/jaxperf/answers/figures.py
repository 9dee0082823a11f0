"""The first jax#20909 figure: the reporter's fori_loop / Python loop ratio beside every
backend measured, estimated or predicted here, each line labelled as what it is."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import figure_rules, plots
from .sources import KINDS, shown


@plots.draws
def plot_seed_ratio(frame: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """fori_loop(unroll=1) over the Python loop vs T, one line per source (at most six), on
    a log ratio axis with plain ticks; the legend says what each number is."""
    # The key gets a row of its own below the x label: anchored under the axes, it slid over
    # the label once plots.save had raised the text to its notebook size.
    fig, (ax, key_ax) = plt.subplots(2, 1, figsize=(10, 6.6), gridspec_kw={"height_ratios": [3.0, 1.25]})
    sources = shown(frame)
    for source in sources:
        part = frame[frame["source"] == source].sort_values("T")
        style = "-" if source in ("reporter A6000", "H200") else "--"
        ax.plot(
            part["T"],
            part["ratio"],
            style,
            marker="o",
            ms=4,
            color=plots.color(source),
            label=f"{source}: {KINDS[source]}",
            lw=2.2 if source == "reporter A6000" else 1.4,
        )
    ax.axhline(1.0, color="0.6", lw=0.8, gid=figure_rules.REFERENCE_GID)  # 1x: no gap (a reference)
    ax.set_xscale("log", base=2)
    ticks = sorted(frame["T"].unique())
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], fontsize=8)
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    ax.set_xlabel("T (sequence length): the loop runs T/64 steps in each of T/128 programs", fontsize=9)
    ax.set_ylabel("fori_loop ÷ Python loop", fontsize=9)
    missing = "" if "H200" in sources else "; NVIDIA H200: not measured (no GPU was lent)"
    ax.set_title(f"jax#20909's gap, on every backend this study reached{missing}", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    key_ax.axis("off")
    key_ax.legend(handles, labels, loc="center", fontsize=8, ncol=1, frameon=False)
    return fig, frame[frame["source"].isin(sources)].reset_index(drop=True)
