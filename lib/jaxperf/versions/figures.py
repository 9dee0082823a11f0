"""The version matrix's figure: filter_pmap's extra cost over ``jax.pmap`` on params,
per Equinox release (drawn from the table that ``report.tabulate`` builds)."""

from __future__ import annotations

import pandas as pd

from .bench import MODELS
from .releases import release_key


def plot_overhead_vs_release(table: pd.DataFrame):
    """Two stacked panels vs Equinox release: filter_pmap's extra host-CPU ms per call over
    ``jax.pmap`` on params (the measure the 0.10 verdict is judged by) and its it/s ratio to
    ``jax.pmap``; per-pair median with IQR bars, one line per model, the releases that share
    one JAX shaded (only there is a change Equinox's alone). Extra wall ms is in the table.

    Returns (figure, the plotted data).
    """
    from .. import figure_rules as rules
    from .. import plots

    data = table[table["model"] != "-"].copy()
    if data.empty:
        raise ValueError("table has no measured release: every environment failed (see its error column).")
    order = sorted(dict.fromkeys(data["release"]), key=release_key)
    data["x"] = data["release"].map({r: i for i, r in enumerate(order)})
    jax_of = dict(zip(data["release"], data["jax"]))
    jax_versions = list(dict.fromkeys(jax_of[r] for r in order))
    models = [m for m in MODELS if m in set(data["model"])]
    colors = plots.colors_for(models)
    fig, axes = rules.stacked(2, row_height=2.5, sharey=False)
    panels = [
        ("extra_cpu_ms", "extra host-CPU ms\nper call over jax.pmap"),
        ("filter_pmap_ratio", "filter_pmap it/s\n÷ jax.pmap it/s"),
    ]
    offsets = {m: (i - (len(models) - 1) / 2) * 0.08 for i, m in enumerate(models)}
    for row, (ax, (stem, label)) in enumerate(zip(axes, panels)):
        for jax_version in jax_versions:
            group = [i for i, r in enumerate(order) if jax_of[r] == jax_version]
            if len(group) > 1:
                ax.axvspan(min(group) - 0.4, max(group) + 0.4, color="0.93", zorder=0)
                if row == 0:
                    ax.text(
                        (min(group) + max(group)) / 2,
                        0.97,
                        f"one JAX ({jax_version}): Equinox's change alone",
                        transform=ax.get_xaxis_transform(),
                        ha="center",
                        va="top",
                        color="0.3",
                    )
        for model in models:
            part = data[data["model"] == model].sort_values("x")
            med, lo, hi = (part[f"{stem}_{k}"] for k in ("median", "q25", "q75"))
            ax.errorbar(
                part["x"] + offsets[model],
                med,
                yerr=[med - lo, hi - med],
                fmt="-o",
                color=colors[model],
                ms=4,
                lw=1.2,
                capsize=0,
                label=model,
            )
        if stem == "filter_pmap_ratio":
            plots.reference_line(ax, 1.0, "1 = as fast as jax.pmap", va="top")
        ax.set_ylabel(label)
        top = ax.get_ylim()[1] * 1.3  # headroom for the shaded group's label
        ax.set_ylim(bottom=0, top=max(top, 1.15) if stem == "filter_pmap_ratio" else top)
    axes[-1].set_xticks(range(len(order)))
    axes[-1].set_xticklabels([f"{r}\njax {jax_of[r]}" for r in order])
    axes[-1].set_xlim(-0.6, len(order) - 0.4)
    axes[-1].set_xlabel("Equinox release (and the JAX it ran on); per-pair median, IQR bars")
    plots.legend_outside(axes[0])
    rules.title(fig, "Equinox releases and filter_pmap's host cost (equinox#192; no-op step, 8 host devices)")
    cols = ["release", "jax", "model", "x"] + [
        f"{s}_{k}" for s, _ in panels for k in ("median", "q25", "q75")
    ]
    return fig, data[cols].reset_index(drop=True)


def plot_runahead_vs_release(verdict_table: pd.DataFrame):
    """Enqueue time over blocked time per call against Equinox release, for ``jax.jit`` and
    ``eqx.filter_jit`` (per-pair median, IQR bars), with the verdict's boundary: below it a
    call returns before its step has run, above it the call waits. Marker shape = JAX version.

    Returns (figure, the plotted data).
    """
    import matplotlib.pyplot as plt

    from .. import plots
    from .. import runs_ahead as rule

    data = verdict_table.copy()
    if data.empty:
        raise ValueError("verdict_table is empty: no release was measured (see the environments table).")
    order = sorted(dict.fromkeys(data["release"]), key=release_key)
    data["x"] = data["release"].map({r: i for i, r in enumerate(order)})
    markers = dict(zip(dict.fromkeys(data["jax"]), ["o", "s", "D", "^", "v", "P"]))
    colors = {"jax.jit": plots.color("jit_single_device"), "eqx.filter_jit": plots.color("filter_jit")}
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for (variant, jax_version), part in data.groupby(["variant", "jax"], sort=False):
        color = colors.get(variant, "0.3")
        ax.errorbar(
            part["x"],
            part["ratio_median"],
            yerr=[part["ratio_median"] - part["ratio_q25"], part["ratio_q75"] - part["ratio_median"]],
            fmt=markers[jax_version],
            color=color,
            ms=6,
            capsize=3,
            label=f"{variant} (jax {jax_version})",
        )
    plots.reference_line(ax, rule.BOUNDARY, f"boundary {rule.BOUNDARY}: above, each call waits")
    ax.set_yscale("log")
    ax.set_ylim(max(1e-4, float(data["ratio_q25"].min()) / 3), 3.0)
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order)
    ax.set_xlabel("Equinox release (each in its own environment)")
    ax.set_ylabel("enqueue time / blocked time per call\n(per-pair median, IQR bars)", fontsize=9)
    ax.set_title("Which Equinox release made eqx.filter_jit wait for every call", fontsize=10)
    plots.legend_outside(ax)
    return fig, data
