"""Notebook 01's figures (and notebook 11's per-leaf one): one claim each, drawn from the
sweep's rounds and the accounting."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import figure_rules, plots
from ..figure_rules import pt
from . import accounting, per_leaf
from .cost import BASELINE, FIX, PACKED, SLOW

LABELS = {
    "filter_pmap": "eqx.filter_pmap",
    "filter_jit": "eqx.filter_jit",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap",
    "cached_filter_jit": "jaxperf.cached_filter_jit",
    "packed_pmap": "jaxperf.packed_pmap",
    "packed_jit": "jaxperf.packed_jit",
    "filter_pmap_patched": "eqx.filter_pmap, patched",
    "filter_jit_patched": "eqx.filter_jit, patched",
    "filter_pmap_recipe": "eqx.filter_pmap on flat leaves",
    "filter_jit_recipe": "eqx.filter_jit on flat leaves",
    "filter_jit_sharded": "eqx.filter_jit, sharded inputs",
    "jit_sharded": "jax.jit on params, sharded",
    "shard_map_jit": "jax.jit of jax.shard_map",
}
FAMILY_SHORT = {"pmap": "vs jax.pmap", "jit": "vs jax.jit"}


def _family(method: str) -> str:
    return "pmap" if "pmap" in method else "jit"


def _label(method: str) -> str:
    return LABELS.get(method, method)


def _leaves_axis(ax: Any, leaves: Any, log: bool = True) -> None:
    if not log:  # a linear axis keeps matplotlib's round ticks: the leaf counts' own would collide
        return
    ax.set_xscale("log")
    ticks = sorted(set(int(x) for x in leaves))
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()


@plots.draws
def plot_per_leaf(
    timings: pd.DataFrame,
    lines: dict[str, Any],
    extra: tuple[str, ...] = (),
    panels: dict[str, list[str]] | None = None,
    fit_cells: dict[str, Any] | None = None,
    claim: str = "Equinox's wrappers cost host time per call in proportion to the array leaves",
    xlabel: str = "array leaves in the arguments",
    own: bool = False,
    labels: dict[str, str] | None = None,
) -> tuple[plt.Figure, pd.DataFrame]:
    """Extra host time per call over the family's partitioned path (``own``: each path's
    own host time per call, on log axes), vs array leaves, on the cells of the fit (default the
    undonated no-op MLPs): medians and IQR per cell, the fitted line dashed. ``panels``: title
    -> methods, stacked over one y scale; by default one panel per path, each on its own y
    scale (a path costing 1 ms would lie flat on the 25 ms scale of ``eqx.filter_pmap``), the
    pmap family left and the jit family right; ``labels``: a legend name per method."""
    from .report import FIT_CELLS, fit_rows

    if panels is None:
        rows = [[SLOW[f], FIX[f], *[m for m in extra if f in m.split("_")[1]]] for f in ("pmap", "jit")]
        order = [m for pair in zip(*rows) for m in pair]  # row by row: pmap left, jit right
        panels = {f"{_label(m)}, {FAMILY_SHORT[_family(m)]}": [m] for m in order}
        fig, rows_of_axes = figure_rules.grid(len(order) // 2, 2, row_height=2.2, sharey=False)
        axes = [ax for row in rows_of_axes for ax in row]
    else:
        fig, axes = figure_rules.stacked(len(panels), row_height=2.6)  # rows over one leaves axis
    data = []
    for ax, (title, methods) in zip(axes, panels.items()):
        for method in methods:
            if own:
                mine = timings[timings["method"] == method]
                own_ms = 1e3 * mine[per_leaf.host_column(mine)]
                rounds = fit_rows(mine.assign(excess_ms=own_ms), fit_cells or FIT_CELLS)
            else:
                rounds = fit_rows(per_leaf.excess(per_leaf.pooled(timings), method), fit_cells or FIT_CELLS)
            if rounds.empty:
                continue
            stats = rounds.groupby("leaves")["excess_ms"].quantile([0.25, 0.5, 0.75]).unstack()
            stats.columns = ["q25", "median", "q75"]
            color = plots.color(method)
            name = (labels or {}).get(method, _label(method))
            ax.plot(stats.index, stats["median"], marker="o", ms=4, color=color, label=name)
            ax.fill_between(stats.index, stats["q25"], stats["q75"], color=color, alpha=0.2, lw=0)
            if method in lines and not own:  # a + b * leaves: straight on the linear leaf axis
                grid = np.linspace(float(stats.index.min()), float(stats.index.max()), 2)
                line = lines[method]
                ax.plot(grid, line["a_ms"] + 1e-3 * line["b_us_per_leaf"] * grid, ls="--", lw=1, color=color)
            data.append(stats.reset_index().assign(method=method, panel=title))
        if own:
            ax.set_yscale("log")
            figure_rules.plain_log_ticks(ax, "y")
        else:
            ax.axhline(0, color="0.6", lw=0.8)
        _leaves_axis(ax, pd.concat(data)["leaves"] if data else timings["leaves"], log=own)
        ax.set_title(title, fontsize=pt(fig), loc="left")
        measure = ("host time" if own else "extra host time") + ", ms per call"
        if len(methods) == 1 and len(panels) > 1 and not own:  # its own scale: the label names the path
            measure = f"{_label(methods[0]).split('.')[-1]}:\n{measure}"
        else:
            measure = measure.replace(", ", ",\n")
        ax.set_ylabel(measure, fontsize=pt(fig))
        if len(methods) > 1:  # one path per panel: its title names it
            plots.legend_outside(ax, frameon=False)
        ax.tick_params(labelsize=pt(fig))
    how = "median and IQR per point" + ("" if own else "; dashed: the fitted a + b x leaves")
    bottom = [ax for ax in axes if (spec := ax.get_subplotspec()) is not None and spec.is_last_row()]
    for ax in bottom:
        ax.set_xlabel(xlabel, fontsize=pt(fig))
    fig.suptitle(f"{claim}\n({how})", fontsize=pt(fig) + 1)
    fig.tight_layout()
    return fig, pd.concat(data, ignore_index=True) if data else pd.DataFrame()


@plots.draws
def plot_accounting(table: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Per model: the parts of one call's extra host time as shares of the gap, stacked with the
    unexplained rest to 100% (shares of means over one set of typical rounds: they add up)."""
    parts = [*accounting.PARTS, "unexplained"]
    models = list(dict.fromkeys(table["model"]))
    fig, ax = plt.subplots(figsize=(9, 1.6 + 0.7 * len(models)))
    colors = {**plots.colors_for(list(accounting.PARTS)), "unexplained": "0.75"}
    y = np.arange(len(models))[::-1]
    by = table.set_index(["model", "part"])
    left = np.zeros(len(models))
    for name in parts:
        values = np.array([100 * float(by.loc[(m, name), "share_of_gap"]) for m in models])
        ax.barh(y, values, left=left, height=0.5, color=colors[name], label=name)
        left += values
    ax.axvline(100, color="0.3", lw=0.8, gid=figure_rules.REFERENCE_GID)  # the whole gap
    leaves = table.groupby("model", sort=False)["leaves"].first()
    ax.set_yticks(y, [f"{m} ({leaves[m]} leaves)" for m in models], fontsize=pt(fig))
    ax.set_xlabel("share of the gap (filter_pmap - jax.pmap on params), %", fontsize=pt(fig))
    ax.legend(fontsize=pt(fig) - 1, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.tick_params(labelsize=pt(fig))
    ax.set_title("Where eqx.filter_pmap's extra host time per call goes", fontsize=pt(fig))
    fig.tight_layout()
    return fig, table


@plots.draws
def plot_ranges(
    summary_ranges: dict[str, Any], measure: str = "loop_it_per_s"
) -> tuple[plt.Figure, pd.DataFrame]:
    """The drop-in fixes (left) and the packed paths (right) over their baseline with the same
    donation, every cell: the per-pair it/s ratio (median of the per-process medians and their
    rerun range), one row per cell and family."""
    rows = []
    for key, found in summary_ranges.items():
        method, base = key.split("/")
        kind = "fix" if method in FIX.values() else "packed" if method in PACKED.values() else None
        if kind is None or base not in BASELINE.values():
            continue
        rows += [
            {**cell, "method": method, "baseline": base, "panel": kind} for cell in found[measure]["by_cell"]
        ]
    data = pd.DataFrame(rows)
    cells = data.drop_duplicates(["step", "model", "donated"])[["step", "model", "donated"]].reset_index(
        drop=True
    )
    y_of = {(r.step, r.model, r.donated): i for i, r in enumerate(cells.itertuples())}
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.32 * len(cells) + 2.0), sharey=True)
    titles = {"fix": "the drop-in fixes / their baseline", "packed": "the packed paths / their baseline"}
    for ax, panel in zip(axes, ("fix", "packed")):
        part = data[data["panel"] == panel]
        for offset, (method, sub) in zip((0.15, -0.15), part.groupby("method", sort=False)):
            y = (
                np.array([len(cells) - 1 - y_of[(r.step, r.model, r.donated)] for r in sub.itertuples()])
                + offset
            )
            err = [sub["median"] - sub["lo"], sub["hi"] - sub["median"]]
            ax.errorbar(
                sub["median"],
                y,
                xerr=err,
                fmt="o",
                ms=3,
                lw=1,
                color=plots.color(method),
                label=_label(method),
            )
        ax.axvline(1, color="0.5", lw=0.8)
        if part["hi"].max() / max(part["lo"].min(), 1e-9) > 5:
            ax.set_xscale("log")
        plots.ratio_axis(ax, "x")
        ax.set_title(titles[panel], fontsize=pt(fig))
        ax.legend(fontsize=pt(fig) - 1, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14))
        ax.tick_params(labelsize=pt(fig) - 1)
    names = [f"{r.step}, {r.model}{', donated' if r.donated else ''}" for r in cells.itertuples()]
    axes[0].set_yticks(np.arange(len(cells))[::-1], names, fontsize=pt(fig) - 1)
    from .report import MEASURES

    fig.suptitle(
        f"it/s ratio {MEASURES[measure]}, per case (median over processes; bars: where a rerun's is expected)",
        fontsize=pt(fig),
    )
    fig.tight_layout()
    return fig, data


@plots.draws
def plot_filter_pmap_ratio(timings: pd.DataFrame, analogue: bool) -> tuple[plt.Figure, pd.DataFrame]:
    """``eqx.filter_pmap`` / ``jax.pmap`` on params it/s, pipelined and blocked, per cell of the
    undonated no-op step (per pair, median over processes and rerun range); ``analogue``: the
    backend is not the seed's (8 forced CPU devices sharing 2 cores), and the title says so."""
    from .report import MEASURES

    rows, pmap = [], timings[timings["family"] == "pmap"]  # none in a part of jit cases alone
    for measure in MEASURES if len(pmap) else ():
        found = per_leaf.ranges(pmap, SLOW["pmap"], BASELINE["pmap"], measure, 0.05)["cells"]
        found = found[(found["step"] == "noop") & (~found["donated"])]
        rows.append(found.assign(measure=measure))
    data = (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(columns=["measure", "leaves", "median", "lo", "hi"])
    )
    fig, ax = plt.subplots(figsize=(7, 4.0))
    for measure, style in zip(MEASURES, ("-", "--")):
        part = data[data["measure"] == measure].sort_values("leaves")
        ax.errorbar(
            part["leaves"],
            part["median"],
            yerr=[part["median"] - part["lo"], part["hi"] - part["median"]],
            ls=style,
            marker="o",
            ms=3,
            color=plots.color("filter_pmap"),
            label=MEASURES[measure],
        )
    ax.axhline(8 / 25, color="0.35", ls=":", lw=1.1, label="the seed's 8 / 25 it/s on a TPU v3-8 (for scale)")
    _leaves_axis(ax, data["leaves"])
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("array leaves in the arguments", fontsize=pt(fig))
    ax.set_ylabel("eqx.filter_pmap / jax.pmap it/s", fontsize=pt(fig))
    ax.legend(fontsize=pt(fig) - 1, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    ax.tick_params(labelsize=pt(fig))
    title = (
        "An analogue: 8 forced CPU devices sharing 2 cores, not a TPU"
        if analogue
        else ("eqx.filter_pmap's it/s over jax.pmap on params's, the no-op step")
    )
    ax.set_title(title, fontsize=pt(fig))
    fig.tight_layout()
    return fig, data


@plots.draws
def plot_diagnosis(diagnosis: Any) -> tuple[Any, pd.DataFrame]:
    """(figure, data) of a diagnosis: it/s per path in the reader's loop (median, IQR), and where
    each path's time per blocked call goes (host time, waiting); the footer is ``study.figure``'s."""
    if not diagnosis.timed:  # a step that retraces, say: the headline is the whole answer
        fig, ax = plt.subplots(figsize=(6, 1.2))
        ax.axis("off")
        ax.text(0, 0.5, "Nothing was timed. " + diagnosis.headline()[0], wrap=True, va="center")
        return fig, pd.DataFrame(columns=["path"])
    table = diagnosis.table()
    per_call = diagnosis.per_call().set_index("variant").loc[table["path"]]
    quartiles = diagnosis.timings.groupby("variant")["loop_it_per_s"].quantile([0.25, 0.5, 0.75]).unstack()
    stats = quartiles.set_axis(["q25", "median", "q75"], axis=1).loc[table["path"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 0.5 * len(table) + 2.2), sharey=True)
    y, size = np.arange(len(table))[::-1], pt(fig)
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    left.barh(y, stats["median"], height=0.6, color=[cycle[i % len(cycle)] for i in range(len(y))])
    iqr = [stats["median"] - stats["q25"], stats["q75"] - stats["median"]]
    left.errorbar(stats["median"], y, xerr=iqr, fmt="none", ecolor="0.2", lw=1)
    left.set_yticks(y, list(table["path"]), fontsize=size)
    left.set_xlabel("it/s in your loop (median, IQR)", fontsize=size)
    host, wait = per_call["host_ms"].to_numpy(), np.clip(per_call["wait_ms"].to_numpy(), 0, None)
    right.barh(y, host, height=0.6, color="0.35", label="host time")
    right.barh(y, wait, left=host, height=0.6, color="0.75", label="waiting for the device")
    right.set_xlabel("ms per blocked call (medians)", fontsize=size)
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False, fontsize=size)
    for ax in (left, right):
        ax.tick_params(labelsize=size)
    fig.suptitle(
        f"{diagnosis.kind} step, {diagnosis.leaves} array leaves in its arguments", fontsize=size + 1
    )
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    data = stats.reset_index().rename(columns={"variant": "path"})
    data["host_ms"], data["wait_ms"] = host, wait
    return fig, data
