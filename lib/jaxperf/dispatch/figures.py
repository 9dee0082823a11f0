"""The dispatch study's figures, one claim each. Each function takes the timing frame (or a
table from :mod:`jaxperf.dispatch.report`) and returns ``(figure, plotted data)``;
``@plots.draws`` records which function drew each figure. Colours come from the study's one
palette (:mod:`jaxperf.plots`); at most six method lines per panel. The figures of one call's
stages and of the inner call are in :mod:`jaxperf.dispatch.breakdown_figures` (re-exported)."""

from __future__ import annotations

import matplotlib.axes
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from .methods import BASELINE, FIX, METHODS, SLOW
from .report import FAST_GOAL_NOOP, GOAL_LEAVES, GOAL_VS_FILTER, GOAL_VS_PMAP, IT_MEASURES

#: the seed's numbers (equinox#192, TPU v3-8, 2022), drawn as labelled reference lines
SEED_IT_PER_S = {SLOW: 8.0, BASELINE: 25.0}
SEED_LABEL = {SLOW: "filter_pmap", BASELINE: "pmap on params"}
#: the first figure's methods: the seed's two paths, the fix and the packed path (donated, as it is meant)
HEADLINE = ((SLOW, False), (BASELINE, False), (FIX, False), ("packed_pmap", True), ("packed_jit", True))
#: the secondary figures group the methods so that no panel holds more than six lines
FAMILIES = {
    "pmap and its drop-ins": (SLOW, BASELINE, "pmap_static_argnums", FIX, "packed_pmap"),
    "jit over the devices": ("jit_named_sharding", "filter_jit_shard", "jit_shard_map", "packed_jit"),
    "one device": ("jit_single_device", "filter_jit", "cached_filter_jit"),
}


#: legend labels short enough to leave the panels their width
SHORT = {
    SLOW: "eqx.filter_pmap",
    BASELINE: "jax.pmap on params",
    "pmap_static_argnums": "jax.pmap, static argnums",
    FIX: "cached_filter_pmap (fix)",
    "packed_pmap": "packed_pmap",
    "jit_named_sharding": "jit + NamedSharding",
    "filter_jit_shard": "eqx.filter_jit + filter_shard",
    "jit_shard_map": "jit(shard_map)",
    "packed_jit": "packed_jit",
    "jit_single_device": "jax.jit, 1 device",
    "filter_jit": "eqx.filter_jit, 1 device",
    "cached_filter_jit": "cached_filter_jit, 1 device",
}


def label(method: str, donated: bool = False) -> str:
    return SHORT.get(method, METHODS.get(method, method)) + (", donated" if donated else "")


def _lines(
    ax: matplotlib.axes.Axes, data: pd.DataFrame, y: str, pairs: list[tuple[str, bool]]
) -> pd.DataFrame:
    """Median + IQR band of ``y`` vs leaves for each (method, donated), in palette colours."""
    stats = []
    for method, donated in pairs:
        part = data[(data["method"] == method) & (data["donated"] == donated)]
        if part.empty:
            continue
        s = part.groupby("leaves")[y].describe(percentiles=[0.25, 0.5, 0.75])[["25%", "50%", "75%", "count"]]
        s = s.set_axis(["q25", "median", "q75", "n"], axis=1).reset_index()
        color = plots.color(method)
        ls = "--" if donated and (method, False) in pairs else "-"
        ax.plot(
            s["leaves"], s["median"], marker="o", ms=3.5, color=color, ls=ls, label=label(method, donated)
        )
        ax.fill_between(s["leaves"], s["q25"], s["q75"], color=color, alpha=0.18, linewidth=0)
        stats.append(s.assign(method=method, donated=donated, measure=y))
    return pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()


def _leaves_axis(ax: matplotlib.axes.Axes, leaves: pd.Series) -> None:
    ax.set_xscale("log")
    ticks = sorted(leaves.unique())
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], fontsize=8)
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("array leaves per call", fontsize=9)


def _ratio_at_largest(df: pd.DataFrame, method: str, measure: str) -> tuple[int, float] | None:
    """(leaves, median it/s ratio over pmap on params) at the largest MLP, no donation."""
    mlp = df[(df["kind"] == "mlp") & (~df["donated"])]
    if mlp.empty:
        return None
    top = mlp["leaves"].max()
    mine = mlp[(mlp["leaves"] == top) & (mlp["method"] == method)].set_index("repeat")[measure]
    base = mlp[(mlp["leaves"] == top) & (mlp["method"] == BASELINE)].set_index("repeat")[measure]
    ratio = (mine / base).dropna()
    return (int(top), float(ratio.median())) if len(ratio) else None


def _seed_line(ax: matplotlib.axes.Axes, y: float, label: str, *, color: str, va: str) -> None:
    """The seed's it/s as a reference line labelled at its left end: there the curves (few
    leaves, fast calls) run far above the seed's TPU numbers, where at the right end this
    CPU's curves cross them (a label there was drawn across the data)."""
    ax.axhline(y, color=color, ls=":", lw=1.1, zorder=1, gid=rules.REFERENCE_GID)
    offset = (3, -2 if va == "top" else 2)
    ax.annotate(
        label, (0.0, y), offset, ("axes fraction", "data"), "offset points",
        ha="left", va=va, fontsize=7.5, color=color,
    )  # fmt: skip


@plots.draws
def plot_it_per_s(df: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """The first equinox#192 figure: it/s vs array leaves on the seed's no-op step for
    filter_pmap, pmap on params, the drop-in fix and the packed path, in the seed's
    pipelined loop (left) and with each call blocked (right); the seed's TPU numbers marked."""
    noop = df[(df["step"] == "noop") & (df["kind"] == "mlp")]
    measures = [m for m in ("loop_it_per_s", "it_per_s") if m in noop]
    # Stacked, one measure a row: each panel gets the notebook's width, the legend its right.
    fig, flat = rules.stacked(len(measures), row_height=2.6)
    axes = [flat]
    stats = []
    pairs = [p for p in HEADLINE if p[0] in set(noop["method"])]
    for ax, measure in zip(axes[0], measures):
        stats.append(_lines(ax, noop, measure, pairs))
        for method, rate in SEED_IT_PER_S.items():
            _seed_line(
                ax,
                rate,
                f"#192, TPU v3-8: {SEED_LABEL[method]} {rate:g} it/s",
                color=plots.color(method),
                va="top",  # under its line: the curves come down to the seed's numbers from above
            )
        ax.set_yscale("log")
        _leaves_axis(ax, noop["leaves"])
        ax.set_title(IT_MEASURES[measure], fontsize=10)
        ax.set_ylabel("it/s (median, IQR)")
    for ax in axes[0][:-1]:
        ax.set_xlabel("")
    found = _ratio_at_largest(noop, SLOW, measures[0]) if measures else None
    claim = (
        f"eqx.filter_pmap: {found[1]:.2f}x the it/s of jax.pmap on params at {found[0]} leaves (pipelined)"
        if found
        else "it/s vs array leaves"
    )
    rules.title(fig, f"No-op step of equinox#192 on this backend: {claim}")
    plots.legend_outside(axes[0][0])
    return fig, pd.concat(stats, ignore_index=True)


def _family_grid(df: pd.DataFrame, y: str, ylabel: str, steps: list[str]) -> tuple[plt.Figure, pd.DataFrame]:
    families = {k: [m for m in v if m in set(df["method"])] for k, v in FAMILIES.items()}
    families = {k: v for k, v in families.items() if v}
    fig, axes = plt.subplots(
        len(families), len(steps), figsize=(10, 3.1 * len(families) + 0.6), sharey="col", squeeze=False
    )
    stats = []
    mlp = df[df["kind"] == "mlp"]
    for r, (family, methods) in enumerate(families.items()):
        for c, step in enumerate(steps):
            ax = axes[r][c]
            part = mlp[mlp["step"] == step]
            s = _lines(ax, part, y, [(m, False) for m in methods])
            stats.append(s.assign(step=step, family=family))
            ax.set_yscale("log")
            _leaves_axis(ax, mlp["leaves"])
            ax.set_title(f"{family}, {step} step", fontsize=9.5)
            ax.set_ylabel(ylabel if c == 0 else "", fontsize=9)
            if c == len(steps) - 1:
                plots.legend_outside(ax)
    return fig, pd.concat(stats, ignore_index=True)


@plots.draws
def plot_methods(df: pd.DataFrame, measure: str = "loop_it_per_s") -> tuple[plt.Figure, pd.DataFrame]:
    """Every method's it/s vs leaves (no donation), grouped so that a panel holds at most six
    lines: pmap and its drop-ins, jit over the devices, one device; no-op and train step."""
    steps = list(dict.fromkeys(df["step"]))
    fig, data = _family_grid(df, measure, "it/s (median, IQR band)", steps)
    fig.suptitle(f"Every method, {IT_MEASURES[measure]}, no donation", fontsize=10.5)
    return fig, data


@plots.draws
def plot_host_overhead(df: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Host work per call vs leaves (the dispatching thread's CPU time over blocked calls, no
    donation), grouped as :func:`plot_methods`."""
    steps = list(dict.fromkeys(df["step"]))
    fig, data = _family_grid(df, "cpu_us_per_call", "thread CPU µs per call", steps)
    fig.suptitle(
        "Host CPU per call grows with the leaves for every method that walks the pytree", fontsize=10.5
    )
    return fig, data


@plots.draws
def plot_donation(df: pd.DataFrame, measure: str = "loop_it_per_s") -> tuple[plt.Figure, pd.DataFrame]:
    """What donating model and optimiser state buys each method at the largest MLP: the
    per-repeat it/s ratio donated / not donated (median bar, IQR whisker), per step."""
    mlp = df[df["kind"] == "mlp"]
    top = mlp[mlp["leaves"] == mlp["leaves"].max()]
    rows = []
    for (step, method), part in top.groupby(["step", "method"], sort=False):
        on = part[part["donated"]].set_index("repeat")[measure]
        off = part[~part["donated"]].set_index("repeat")[measure]
        ratio = (on / off).dropna()
        if len(ratio):
            q25, med, q75 = np.percentile(ratio, [25, 50, 75])
            rows.append(
                {"step": step, "method": method, "median": med, "q25": q25, "q75": q75, "n": len(ratio)}
            )
    data = pd.DataFrame(rows)
    steps = list(dict.fromkeys(data["step"])) if not data.empty else []
    fig, axes = plt.subplots(1, max(len(steps), 1), figsize=(10, 4.2), sharey=True, squeeze=False)
    for ax, step in zip(axes[0], steps):
        part = data[data["step"] == step]
        order = [m for m in METHODS if m in set(part["method"])]
        part = part.set_index("method").loc[order]
        y = np.arange(len(order))
        plots.median_iqr_bars(ax, y, part, [plots.color(m) for m in order], alpha=0.85)
        ax.axvline(1.0, color="0.4", lw=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels([label(m) for m in order], fontsize=8)
        ax.set_xscale("log")
        plots.ratio_axis(ax, "x")
        ax.set_title(f"{step} step", fontsize=10)
        ax.set_xlabel("it/s donated ÷ not donated (per repeat)", fontsize=9)
    leaves = int(top["leaves"].iloc[0]) if not top.empty else 0
    fig.suptitle(
        f"Donating model and optimiser state, {IT_MEASURES[measure]}, MLP at {leaves} leaves", fontsize=10.5
    )
    return fig, data


@plots.draws
def plot_speedup(ratios: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """The fix and the packed path as per-pair it/s ratios (pipelined loop, MLP sweep): over
    jax.pmap on params without donation (the reporter's baseline, left) and the fix over
    eqx.filter_pmap (right), each goal drawn and labelled; one row per step."""
    data = ratios[(ratios["measure"] == "loop_it_per_s") & (ratios["kind"] == "mlp")]
    steps = list(dict.fromkeys(data["step"]))
    fig, axes = plt.subplots(
        len(steps), 2, figsize=(rules.ROW_WIDTH_IN, 3.0 * len(steps) + 0.9), sharey="col", squeeze=False
    )
    stats = []
    for r, step in enumerate(steps):
        part = data[data["step"] == step]
        left, right = axes[r]
        pairs = [(FIX, False), ("packed_pmap", True), ("packed_jit", True)]
        s = _lines(left, part[part["over"] == "pmap_params_undonated"], "ratio", pairs)
        stats.append(s.assign(step=step, over="pmap_params_undonated"))
        plots.reference_line(left, GOAL_VS_PMAP, f"fix goal ≥ {GOAL_VS_PMAP}x", color=plots.color(FIX))
        if step == "noop":
            plots.reference_line(
                left, FAST_GOAL_NOOP, f"packed goal ≥ {FAST_GOAL_NOOP:g}x", color=plots.color("packed_jit")
            )
        s = _lines(right, part[(part["over"] == SLOW) & (~part["donated"])], "ratio", [(FIX, False)])
        stats.append(s.assign(step=step, over=SLOW))
        plots.reference_line(
            right, GOAL_VS_FILTER, f"goal ≥ {GOAL_VS_FILTER}x at ≥ {GOAL_LEAVES} leaves", color="0.3"
        )
        for ax, over in ((left, "jax.pmap on params"), (right, "eqx.filter_pmap")):
            ax.axhline(1.0, color="0.6", lw=0.8)
            ax.set_yscale("log")
            plots.ratio_axis(ax)
            _leaves_axis(ax, part["leaves"])
            ax.set_title(f"{step} step", fontsize=9.5)
            ax.set_ylabel(f"it/s ÷ {over}\n(per pair, median, IQR)", fontsize=9)
        if r < len(steps) - 1:
            left.set_xlabel("")
            right.set_xlabel("")
        if r == 0:  # one legend for the figure, above the panels: the left panel holds every method
            handles, labels = left.get_legend_handles_labels()
            fig.legend(
                handles,
                labels,
                loc="upper center",
                ncols=len(labels),
                bbox_to_anchor=(0.5, 0.95),
                fontsize=rules.pt(fig),
                frameon=False,
            )
    fig.suptitle("The fix and the packed path in the seed's pipelined loop", fontsize=10.5)
    return fig, pd.concat(stats, ignore_index=True)


# the call-breakdown figures, kept in their own module; the notebook reaches them here
from .breakdown_figures import BREAKDOWN_GROUPS, plot_breakdown, plot_inner_call  # noqa: E402, F401
