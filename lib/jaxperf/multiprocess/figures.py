"""The study's figures: scaling with the process count (it/s, then host CPU per call, for the
methods a reader of equinox#192 needs; the other methods in a secondary figure), and where
a step's time goes. Rows of panels are models (the MLP first), columns are steps; panels of
one measure share their y scale. Each title states its claim from the numbers drawn."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from .analysis import add_ms
from .methods import METHODS

MEASURES = {
    "it_per_s": "it/s, each call blocked\n(median)",
    "cpu_ms_per_call": "host thread CPU ms\nper call (median)",
}
BASELINE = "pmap_params"
#: the methods of the first figures: the baseline, the slow path, its fix (patched in and the
#: drop-in), and the fastest forms of each family
LEAD = (
    "pmap_params",
    "filter_pmap",
    "filter_pmap_fixed",
    "cached_filter_pmap",
    "jit_named_sharding",
    "packed_jit",
)
#: the rest, beside the forms they resemble and the baseline
MORE = ("pmap_params", "jit_named_sharding", "jit_shard_map", "packed_jit", "packed_pmap")
X_LABEL = "processes (global devices fixed)"
#: the legend's names: METHODS' long names do not fit beside the panels
SHORT = {
    "pmap_params": "jax.pmap on params",
    "filter_pmap": "eqx.filter_pmap",
    "filter_pmap_fixed": "eqx.filter_pmap + proposed fix",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap",
    "jit_named_sharding": "jax.jit + NamedSharding",
    "packed_jit": "packed fast path, jit form",
    "packed_pmap": "packed fast path, pmap form",
    "jit_shard_map": "jax.jit(jax.shard_map)",
}


def _models(frame: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(frame["model"]))


def _vs_baseline(part: pd.DataFrame, measure: str, method: str) -> tuple[int, float] | None:
    """(the largest process count, ``method``'s median over pmap_params' there), if both ran."""
    med = part.groupby(["method", "processes"])[measure].median()
    counts = sorted(p for m, p in med.index if m == BASELINE and (method, p) in med)
    if not counts:
        return None
    return counts[-1], float(med[(method, counts[-1])] / med[(BASELINE, counts[-1])])


def _ranges(ratios: dict[str, list[tuple[int, float]]]) -> str:
    """'at 4 processes, over pmap_params: cached_filter_pmap 0.97-1.02x, ...' (every panel)."""
    parts = []
    for method, got in ratios.items():
        if got:
            low, high = min(r for _, r in got), max(r for _, r in got)
            parts.append(
                f"{method} {low:.2f}x" if f"{low:.2f}" == f"{high:.2f}" else f"{method} {low:.2f}-{high:.2f}x"
            )
    counts = sorted({n for got in ratios.values() for n, _ in got})
    if not parts:
        return ""
    return f"at {counts[-1]} processes, over {BASELINE} in every panel: " + ", ".join(parts)


def _only_one_process(t: pd.DataFrame) -> list[str]:
    """Methods timed in one process only (they fail across processes)."""
    counts = t.groupby("method")["processes"].nunique()
    return [m for m in counts.index if counts[m] == 1 and t.processes.nunique() > 1]


@plots.draws
def plot_scaling(
    timings: pd.DataFrame, measure: str = "it_per_s", methods: Sequence[str] = LEAD
) -> tuple[plt.Figure, pd.DataFrame]:
    """``measure`` (it/s or host CPU ms per call) vs processes: one row of panels per model,
    one column per step (noop, train), one line per method in ``methods``: median over
    every process and repeat, IQR band; log y shared by every panel."""
    t = add_ms(timings)
    t = t[t["step"].isin(["noop", "train"]) & t["method"].isin(methods)]
    steps = [s for s in ("noop", "train") if s in set(t["step"])]
    models = _models(t)
    order = [m for m in methods if m in set(t["method"])]
    fig, axes, legend_axes = rules.grid_with_legend(len(models), len(steps), len(order), row_height=2.5)
    frames = []
    compared = [m for m in ("cached_filter_pmap", "filter_pmap_fixed", "packed_jit") if m in order][:2]
    ratios: dict[str, list[tuple[int, float]]] = {m: [] for m in compared}
    for m, model in enumerate(models):
        for col, step in enumerate(steps):
            ax = axes[m][col]
            part = t[(t["step"] == step) & (t["model"] == model)]
            stats = plots.median_iqr_lines(
                ax, part, "processes", measure, "method", hue_order=order, logx=False, logy=True
            )
            frames.append(stats.assign(measure=measure, step=step, model=model))
            for method in compared:
                got = _vs_baseline(part, measure, method)
                ratios[method] += [got] if got else []
            rules.panel_title(ax, f"{model}, {step} step")
            ax.set_ylabel(MEASURES[measure] if col == 0 else "")
            ax.set_xlabel(X_LABEL if m == len(models) - 1 else "")
            ax.set_xticks(sorted(t["processes"].unique()))
    for row in axes:
        for ax in row:
            rules.plain_log_ticks(ax, "y")
    rules.legend_in(legend_axes, axes[-1][0], labels=SHORT)
    claim = f"{MEASURES[measure].replace(chr(10), ' ')} vs processes; " + _ranges(ratios)
    alone = [m for m in _only_one_process(t) if m in order]
    if alone:
        claim += f"; {', '.join(alone)} ran in one process only (it fails across processes)"
    rules.title(fig, claim.rstrip("; "))
    return fig, pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@plots.draws
def plot_scaling_more(timings: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """The secondary methods (:data:`MORE`): it/s and host CPU ms per call vs processes, one
    row per (model, measure), one column per step."""
    t = add_ms(timings)
    t = t[t["step"].isin(["noop", "train"]) & t["method"].isin(MORE)]
    steps = [s for s in ("noop", "train") if s in set(t["step"])]
    models = _models(t)
    order = [m for m in MORE if m in set(t["method"])]
    fig, axes, legend_axes = rules.grid_with_legend(
        len(models) * len(MEASURES), len(steps), len(order), row_height=2.2, sharey=False
    )
    frames = []
    for m, model in enumerate(models):
        for r, measure in enumerate(MEASURES):
            row = axes[m * len(MEASURES) + r]
            for col, step in enumerate(steps):
                ax = row[col]
                part = t[(t["step"] == step) & (t["model"] == model)]
                stats = plots.median_iqr_lines(
                    ax, part, "processes", measure, "method", hue_order=order, logx=False, logy=True
                )
                frames.append(stats.assign(measure=measure, step=step, model=model))
                rules.panel_title(ax, f"{model}, {step} step")
                ax.set_ylabel(MEASURES[measure] if col == 0 else "")
                ax.set_xticks(sorted(t["processes"].unique()))
                rules.plain_log_ticks(ax, "y")
    for r in range(len(MEASURES)):  # one y range per measure, over every model and step
        _share([ax for row in axes[r :: len(MEASURES)] for ax in row])
    for ax in axes[-1]:
        ax.set_xlabel(X_LABEL)
    rules.legend_in(legend_axes, axes[-1][0], labels=SHORT)
    rules.title(
        fig,
        f"The other methods beside {BASELINE} and the forms they resemble: it/s and host CPU per call vs processes",
    )
    return fig, pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _share(panels: Sequence[plt.Axes]) -> None:
    """One y range for the panels of one measure."""
    lows, highs = zip(*(ax.get_ylim() for ax in panels))
    for ax in panels:
        ax.set_ylim(min(lows), max(highs))


@plots.draws
def plot_split(split: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Wall ms per call of the train step without its all-reduce, of the all-reduce alone,
    and of the full step, per process count; one row of panels per model, one panel per method."""
    models = _models(split)
    methods = [m for m in METHODS if m in set(split["method"])]
    fig, axes, legend_axes = rules.grid_with_legend(len(models), len(methods), 3, ncol=3, row_height=2.5)
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
    colors = plots.colors_for(list(parts.values()))
    counts = sorted(long["processes"].unique())
    width = 0.8 / len(parts)
    for r, (row, model) in enumerate(zip(axes, models)):
        for c, (ax, method) in enumerate(zip(row, methods)):
            data = long[(long["method"] == method) & (long["model"] == model)]
            if data.empty:  # a method that could not run this model: no panel
                ax.set_axis_off()
                continue
            for i, (part, name) in enumerate(parts.items()):
                bars = data[data.part == part].set_index("processes").reindex(counts)["wall_ms_per_call"]
                x = [j + (i - (len(parts) - 1) / 2) * width for j in range(len(counts))]
                ax.bar(x, bars.to_numpy(float), width=width, color=colors[name], label=name)
            ax.set_xticks(range(len(counts)), [str(n) for n in counts])
            rules.panel_title(ax, f"{model}: {METHODS.get(method, method)}")
            ax.set_xlabel("processes" if r == len(models) - 1 else "")
            ax.set_ylabel("wall ms per call\n(median)" if c == 0 else "")
    rules.legend_in(legend_axes, next(ax for row in axes for ax in row if ax.containers), ncol=3)
    alone, local = long[long.part == "allreduce_alone_ms"], long[long.part == "step_without_collective_ms"]
    claim = "Where the train step's time goes across processes"
    if len(alone) and len(local):
        claim += (
            f": the all-reduce alone takes {alone.wall_ms_per_call.min():.0f}-{alone.wall_ms_per_call.max():.0f} ms"
            f" per call, the step without it {local.wall_ms_per_call.min():.1f}-{local.wall_ms_per_call.max():.1f} ms"
        )
    rules.title(fig, claim)
    return fig, long
