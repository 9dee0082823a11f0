"""The dispatch study's figures of one ``eqx.filter_pmap`` call: its stages beside the calls it
is compared with (:func:`plot_breakdown`), and its inner ``jax.pmap`` call rung by rung
(:func:`plot_inner_call`). Same conventions as :mod:`jaxperf.dispatch.figures`."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from .inner_call import RUNGS
from .methods import BASELINE, SLOW
from .stages import STAGES

#: The staged call's stages as the breakdown figure stacks them: Equinox's own pytree work, its
#: other bookkeeping, the inner pmap call, then the wait and freeing the outputs (each a sum of
#: :data:`STAGES` medians).
BREAKDOWN_GROUPS = {
    "partition + combine": ("partition", "combine"),
    "axis resolution, ShapeDtypeStruct, cache lookup": (
        "axis resolution",
        "ShapeDtypeStruct",
        "cache lookup",
    ),
    "inner pmap call (dispatch)": ("inner pmap call (dispatch)",),
    # what pmap on params pays as well: waiting for the program, then dropping its outputs
    "wait + free the outputs": ("wait for execution", "free the outputs"),
}
assert sorted(sum(BREAKDOWN_GROUPS.values(), ())) == sorted(STAGES)


@plots.draws
def plot_breakdown(stage_ms: pd.DataFrame, totals: pd.DataFrame) -> tuple[plt.Figure, pd.DataFrame]:
    """Per model (one panel each): one eqx.filter_pmap call stage by stage (stacked medians of
    the staged calls, Equinox's own stages in two groups), beside an ordinary filter_pmap call
    and jax.pmap on params measured in the same rounds (median bars, IQR whiskers).
    Horizontal, so each call's name reads in full. ``stage_ms`` from :func:`report.stage_table`,
    ``totals`` from :func:`stages.run_breakdowns`."""
    models = list(dict.fromkeys(stage_ms["model"]))
    fig, all_axes = plt.subplots(
        len(models) + 1,
        1,
        figsize=(10, 1.45 * len(models) + 2.0),
        squeeze=False,
        gridspec_kw={"height_ratios": [1.0] * len(models) + [0.55]},
    )
    axes, key_ax = all_axes[:-1], all_axes[-1][0]
    group_colors = dict(zip(BREAKDOWN_GROUPS, ("0.35", "0.68", "#9467bd", "#f0b3d0")))
    rows = ["filter_pmap, stage by stage", "filter_pmap call", "jax.pmap on params"]
    y = {name: float(len(rows) - 1 - k) for k, name in enumerate(rows)}
    for ax, model in zip(axes[:, 0], models):
        part = stage_ms[stage_ms["model"] == model].set_index("stage")
        tot = totals[totals["model"] == model].iloc[0]
        left = 0.0
        for group, members in BREAKDOWN_GROUPS.items():
            value = float(part.loc[[m for m in members if m in part.index], "median_ms"].sum())
            ax.barh(y[rows[0]], value, left=left, color=group_colors[group], label=group, height=0.6)
            left += value
        keys = (("whole_call_ms", SLOW), ("pmap_params_call_ms", BASELINE))
        calls = pd.DataFrame(
            [{q: float(tot[f"{key}_{q}"]) for q in ("median", "q25", "q75")} for key, _ in keys]
        )
        ys = [y[rows[1]], y[rows[2]]]
        plots.median_iqr_bars(ax, ys, calls, [plots.color(m) for _, m in keys], height=0.6, alpha=0.85)
        ax.set_yticks([y[r] for r in rows])
        ax.set_yticklabels(rows)
        ax.set_title(f"{model} ({int(part['leaves'].iloc[0])} leaves)", loc="left")
    axes[-1][0].set_xlabel("wall ms per blocked call (median; whiskers: interquartile range)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    key_ax.axis("off")  # a row of its own for the key, below the x label
    key_ax.legend(
        handles, labels, title="the staged call's stages", loc="center", ncol=2, fontsize=rules.pt(fig)
    )
    fig.suptitle("Where one eqx.filter_pmap call spends its time, beside the calls it is compared with")
    return fig, stage_ms


@plots.draws
def plot_inner_call(ladder: pd.DataFrame, explained: dict) -> tuple[plt.Figure, pd.DataFrame]:
    """The inner jax.pmap call's host CPU per call, rung by rung from jax.pmap on params to
    filter_pmap's own inner call (:mod:`jaxperf.dispatch.inner_call`), per model."""
    models = list(dict.fromkeys(ladder["model"]))
    fig, axes = plt.subplots(len(models), 1, figsize=(10, 3.1 * len(models) + 0.9), squeeze=False)
    stats = []
    for ax, model in zip(axes[:, 0], models):
        part = ladder[ladder["model"] == model]
        s = part.groupby("rung")["cpu_ms_per_call"].describe(percentiles=[0.25, 0.5, 0.75])
        s = s.loc[list(RUNGS), ["25%", "50%", "75%"]].set_axis(["q25", "median", "q75"], axis=1)
        y = np.arange(len(RUNGS))[::-1]
        colors = [plots.color(BASELINE), "0.65", "0.55", "0.45", plots.color(SLOW)]
        plots.median_iqr_bars(ax, y, s, colors, height=0.65)
        ax.set_yticks(y)
        ax.set_yticklabels([textwrap.fill(r, 26) for r in RUNGS], fontsize=8)
        e = explained[model]["excess_cpu_ms"]
        ax.set_title(
            f"{model}: inner call +{e['inner_over_pmap_params']['median']:.2f} ms over pmap on params\n"
            f"alone: per-leaf in_axes +{e['in_axes_pytree']['median']:.2f} ms, output trees "
            f"+{e['output_trees']['median']:.2f} ms; both +{e['both']['median']:.2f} ms",
            loc="left",
        )
        stats.append(s.reset_index().rename(columns={"index": "rung"}).assign(model=model))
    axes[-1][0].set_xlabel("dispatching thread's CPU ms per blocked call (median, IQR)", fontsize=9)
    fig.suptitle(
        "Why filter_pmap's inner jax.pmap call costs more than jax.pmap on params\n"
        "(bars: medians over repeats; the + numbers: medians of per-repeat differences)",
        fontsize=10.5,
    )
    return fig, pd.concat(stats, ignore_index=True)
