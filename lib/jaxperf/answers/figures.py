"""The jax#20909 figures of the answers: the reporter's fori_loop / Python loop ratio beside every
*measured* ratio of ms per call (one measure on the axis, each line labelled as what it is), and,
apart, the static estimates in their own units (instructions or bundles per call)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import figure_rules, plots
from .sources import KINDS, STATIC, shown

_LABEL = {  # the key's words: what each measured number is, short enough for one line
    "reporter A6000": "the reporter, RTX A6000, Pallas Triton (measured)",
    "H200": "NVIDIA H200, Pallas Triton (measured here)",
    "XLA:CPU": "XLA:CPU, plain jax.jit of his arithmetic (an analogue)",
    "XLA:CPU in his harness": "XLA:CPU in his own harness (an analogue)",
    "Pallas interpret": "Pallas interpreter (its own timings)",
}
_STYLE = {  # line style and marker per measured source: the reporter's solid and thick
    "reporter A6000": ("-", "o"),
    "H200": ("-", "D"),
    "XLA:CPU": ("--", "o"),
    "XLA:CPU in his harness": (":", "s"),
    "Pallas interpret": ("--", "^"),
}


def _color(source: str) -> str:
    return plots.color("XLA:CPU" if source.startswith("XLA:CPU") else source)


def _T_axis(ax: plt.Axes, Ts: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(Ts)
    ax.set_xticklabels([f"{t:g}" for t in Ts])
    ax.minorticks_off()


@plots.draws
def plot_seed_ratio(frame: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """fori_loop(unroll=1) over the Python loop vs T, measured ms per call only (the reporter's
    A6000, XLA:CPU as an analogue in plain jit and in his harness, the interpreter, a GPU where
    one ran), on a log ratio axis with plain ticks; the key says what each number is."""
    sources = shown(frame)
    data = frame[frame["source"].isin(sources)]
    fig, (ax, key_ax) = plt.subplots(2, 1, figsize=(8.8, 6.0), gridspec_kw={"height_ratios": [3.0, 1.1]})
    claims = []
    for source in sources:
        part = data[data["source"] == source].sort_values("T")
        style, marker = _STYLE.get(source, ("--", "o"))
        ax.plot(
            part["T"],
            part["ratio"],
            style,
            marker=marker,
            ms=5,
            color=_color(source),
            label=_LABEL.get(source, f"{source}: {KINDS[source]}"),
            lw=2.4 if source == "reporter A6000" else 1.5,
        )
        spread = part.dropna(subset=["q25", "q75"]) if "q25" in part else part.iloc[:0]
        if len(spread):  # the per-pair interquartile range, where the study took one
            ax.fill_between(spread["T"], spread["q25"], spread["q75"], color=_color(source), alpha=0.18, lw=0)
        last = part.iloc[-1]
        claims.append(f"{source} {last.ratio:.2f}x at T={int(last['T'])}")
    ax.axhline(1.0, color="0.6", lw=0.8, gid=figure_rules.REFERENCE_GID)  # 1x: no gap (a reference)
    _T_axis(ax, sorted(int(t) for t in data["T"].unique()))
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    ax.set_xlabel("T (sequence length): the loop runs T/64 steps in each of T/128 programs")
    ax.set_ylabel("fori_loop ÷ Python loop\n(ms per call, measured)")
    missing = "" if "H200" in sources else "; no GPU ran here"
    figure_rules.panel_title(
        ax, "jax#20909's gap, measured (shaded: interquartile range): " + "; ".join(claims) + missing
    )
    handles, labels = ax.get_legend_handles_labels()
    key_ax.axis("off")
    key_ax.legend(handles, labels, loc="center", fontsize=figure_rules.pt(fig), ncol=1, frameon=False)
    return fig, data.reset_index(drop=True)


@plots.draws
def plot_static(counts: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """The static estimates in their own units: per compiler, the work one call of the reporter's
    kernel issues in the Python loop and in fori_loop vs T (compiled on a CPU, not executed)."""
    sources = [s for s in STATIC if s in set(counts["source"])]
    fig, axes = plt.subplots(
        len(sources) or 1,
        1,
        figsize=(8.8, 1.6 + 2.6 * max(len(sources), 1)),
        squeeze=False,
        gridspec_kw={"hspace": 0.9},
    )
    colors = plots.colors_for(["python", "fori u=1"])
    Ts = sorted(int(t) for t in counts["T"].unique()) if len(counts) else [256]
    for ax, source in zip(axes[:, 0], sources):
        part = counts[counts["source"] == source]
        ratio = ""
        for loop, label in (("python", "Python loop"), ("fori u=1", "fori_loop")):
            line = part[part["loop"] == loop].sort_values("T")
            ax.plot(line["T"], line["work"], marker="o", ms=4, color=colors[loop], label=label)
        both = part.pivot_table(index="T", columns="loop", values="work").dropna()
        if {"python", "fori u=1"} <= set(both.columns) and len(both):
            T = int(both.index.max())
            ratio = f": fori_loop issues {both.loc[T, 'fori u=1'] / both.loc[T, 'python']:.1f}x at T={T}"
        absent = [t for t in Ts if t not in set(part["T"])]
        if absent:
            ratio += f" (not compiled at T={', '.join(str(t) for t in absent)})"
        ax.set_yscale("log")
        figure_rules.plain_log_ticks(ax, "y")
        ax.set_ylabel(STATIC[source].replace(" per call", "\nper call"))
        figure_rules.panel_title(ax, f"{source} ({KINDS[source].split(' (')[0]}){ratio}")
        ax.legend(loc="upper left", frameon=False)  # the lines rise to the right: the corner is empty
        _T_axis(ax, Ts)
        ax.set_xlabel("T (sequence length)")
    figure_rules.title(
        fig,
        "The reporter's kernel, static counts in each compiler's unit (compiled on a CPU, not executed: counts, not times)",
    )
    return fig, counts.reset_index(drop=True)
