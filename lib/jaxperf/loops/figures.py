"""The loop study's figures. Each function draws one claim and returns ``(fig, data)``;
:func:`draw_all` yields every figure of a run as ``(name, fig, data, note)``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import pandas as pd

from .. import plots
from ..jax20909.vocab import (
    PORTABLE_FORMS,
    UNROLLED_FORMS,
    facets,
    frame_variant_order,
    seed_records,
    variant_name,
)
from .sweep import MODE_LABELS


def key_variants(df: pd.DataFrame) -> list[str]:
    """The lines worth a curve: the Python loop, fori_loop(unroll=1), and each portable form at
    unroll 1 and at its largest unroll (every unroll is in the heatmap)."""
    portable = df[df.loop_form.isin(PORTABLE_FORMS)]
    largest = portable.groupby("loop_form")["unroll"].transform("max")
    keep = df[df.variant.isin(["python", "fori u=1"])]
    keep = pd.concat([keep, portable[(portable.unroll == 1) | (portable.unroll == largest)]])
    return frame_variant_order(keep)


def _log_axes(ax: Any, title: str, ylabel: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(title=title, xlabel="T (sequence length)", ylabel=ylabel)
    ax.legend(fontsize=7)


@plots.draws
def plot_ms_vs_T(
    timings: pd.DataFrame, mode: str, variants: Sequence[str] | None = None
) -> tuple[Any, pd.DataFrame]:
    """ms per kernel call vs T per variant (log-log, the reporter's curve); median line, IQR band."""
    data = timings[timings["mode"] == mode]
    data = data[data.variant.isin(key_variants(data) if variants is None else variants)]
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = facets(len(kernels))
    stats = []
    for ax, kernel in zip(axes, kernels):
        part = data[data.kernel == kernel]
        s = plots.median_iqr_lines(
            ax, part, "T", "ms_per_call", "variant", hue_order=frame_variant_order(part), logx=True, logy=True
        )
        stats.append(s.assign(kernel=kernel))
        ax.set(
            title=f"{kernel}: {MODE_LABELS[mode]}",
            xlabel="T (sequence length)",
            ylabel="ms per kernel call (median, IQR band)",
        )
        ax.legend(fontsize=7)
    return fig, pd.concat(stats, ignore_index=True)


@plots.draws
def plot_compile_vs_T(variants_df: pd.DataFrame, mode: str) -> tuple[Any, pd.DataFrame]:
    """Compile time (ms, median of fresh compiles) vs T per key variant, log-log."""
    data = variants_df[(variants_df["mode"] == mode) & (variants_df["status"] == "timed")]
    data = data[data.variant.isin(key_variants(data))]
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = facets(len(kernels))
    for ax, kernel in zip(axes, kernels):
        part = data[data.kernel == kernel]
        for name in frame_variant_order(part):
            v = part[part.variant == name].sort_values("T")
            ax.plot(v["T"], v["compile_ms"], marker="o", ms=4, label=name)
        _log_axes(ax, f"{kernel}: {MODE_LABELS[mode]}", "compile ms (median)")
    return fig, data[["mode", "kernel", "T", "variant", "loop_form", "unroll", "lower_ms", "compile_ms"]]


@plots.draws
def plot_unroll_heatmap(
    head: pd.DataFrame, mode: str, loop_forms: Sequence[str] = UNROLLED_FORMS
) -> tuple[Any, pd.DataFrame]:
    """Heatmap of T x unroll: median ms per call relative to the Python loop (<1: faster)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = head[(head["mode"] == mode) & head.loop_form.isin(loop_forms)]
    kernels = list(dict.fromkeys(data.kernel))
    forms = [f for f in loop_forms if f in set(data.loop_form)]
    fig, axes = plt.subplots(
        len(kernels), len(forms), figsize=(4.2 * len(forms), 3.4 * len(kernels)), squeeze=False
    )
    for i, kernel in enumerate(kernels):
        for j, form in enumerate(forms):
            part = data[(data.kernel == kernel) & (data.loop_form == form)]
            ax = axes[i][j]
            if part.empty or part["ms_vs_python"].isna().all():
                ax.set_axis_off()
                ax.set_title(f"{kernel}, {form}: no Python loop to compare", fontsize=8)
                continue
            grid = part.pivot_table(index="T", columns="unroll", values="ms_vs_python")
            sns.heatmap(
                grid, ax=ax, annot=True, fmt=".2f", cmap="RdBu_r", center=1.0, cbar=j == len(forms) - 1
            )
            ax.set(title=f"{kernel}, {form}", xlabel="unroll", ylabel="T")
    fig.suptitle(f"ms per call / Python loop's (median per-repeat ratio), {MODE_LABELS[mode]}")
    return fig, data[["mode", "kernel", "T", "loop_form", "unroll", "ms_per_call", "ms_vs_python"]]


@plots.draws
def plot_seed_ratio(rows: Sequence[dict[str, Any]]) -> tuple[Any, pd.DataFrame]:
    """fori/Python execution ratio vs T: each mode measured here beside the reporter's A6000."""
    data = pd.DataFrame(list(rows))
    reporter = pd.DataFrame(seed_records()).assign(mode="reporter (RTX A6000, jax 0.4.25)")
    data = pd.concat([data[["mode", "T", "ratio"]], reporter[["mode", "T", "ratio"]]], ignore_index=True)
    fig, [ax] = facets(1, width=6.0)
    for mode, part in data.groupby("mode", sort=False):
        part = part.sort_values("T")
        ax.plot(part["T"], part["ratio"], marker="o", ms=4, label=MODE_LABELS.get(str(mode), str(mode)))
    ax.axhline(1.0, color="0.6", lw=0.8)
    ax.set_xscale("log")
    ax.set(
        title="fori_loop / Python loop, ms per kernel call (seed)",
        xlabel="T (sequence length)",
        ylabel="ratio of medians",
    )
    ax.legend(fontsize=7)
    return fig, data


@plots.draws
def plot_ir_size(matrix: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Kernel IR lines vs T for the key variants, per compiler and kernel."""
    import matplotlib.pyplot as plt

    data = matrix[matrix.lowers].assign(
        variant=lambda d: [variant_name(f, u) for f, u in zip(d.loop_form, d.unroll)]
    )
    data = data[data.variant.isin(key_variants(data))]
    compilers = list(dict.fromkeys(matrix.compiler))
    kernels = list(dict.fromkeys(matrix.kernel))
    fig, axes = plt.subplots(
        len(kernels), len(compilers), figsize=(5 * len(compilers), 3.8 * len(kernels)), squeeze=False
    )
    for i, kernel in enumerate(kernels):
        for j, compiler in enumerate(compilers):
            ax = axes[i][j]
            part = data[(data.compiler == compiler) & (data.kernel == kernel)]
            if part.empty:
                ax.text(
                    0.5,
                    0.5,
                    "no variant lowers\n(errors in lowering_matrix.csv)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    color="0.4",
                )
                ax.set(title=f"{kernel}: {compiler}", xticks=[], yticks=[])
                continue
            for name in frame_variant_order(part):
                v = part[part.variant == name].sort_values("T")
                ax.plot(v["T"], v["ir_lines"], marker="o", ms=3, label=name)
            _log_axes(ax, f"{kernel}: {compiler}", "kernel IR lines")
    return fig, data[
        ["kernel", "compiler", "T", "loop_form", "unroll", "variant", "ir_lines", "loop_ops", "lower_s"]
    ]


def planned(
    matrix: pd.DataFrame,
    variants_df: pd.DataFrame,
    timings: pd.DataFrame,
    head: pd.DataFrame,
    seed_rows: Sequence[dict[str, Any]],
) -> list[tuple[str, Callable[[], tuple[Any, pd.DataFrame]], str]]:
    """Every figure of a run as ``(name, draw, note)``, drawn only when ``draw()`` is called
    (so a notebook can show progress over a known count while each is drawn and saved)."""
    plans: list[tuple[str, Callable[[], tuple[Any, pd.DataFrame]], str]] = []
    for mode in dict.fromkeys(timings["mode"]):
        note = MODE_LABELS[mode]
        plans.append((f"ms_per_call_vs_T_{mode}", partial(plot_ms_vs_T, timings, mode), note))
        plans.append((f"compile_ms_vs_T_{mode}", partial(plot_compile_vs_T, variants_df, mode), note))
        if "ms_vs_python" in head:
            plans.append((f"unroll_heatmap_{mode}", partial(plot_unroll_heatmap, head, mode), note))
    if seed_rows:
        note = "measured here beside the reporter's numbers"
        plans.append(("seed_ratio_vs_T", partial(plot_seed_ratio, seed_rows), note))
    if matrix["lowers"].any():
        note = "kernel IR from jax.export, no accelerator"
        plans.append(("ir_lines_vs_T", partial(plot_ir_size, matrix), note))
    return plans


def draw_all(
    matrix: pd.DataFrame,
    variants_df: pd.DataFrame,
    timings: pd.DataFrame,
    head: pd.DataFrame,
    seed_rows: Sequence[dict[str, Any]],
) -> Iterator[tuple[str, Any, pd.DataFrame, str]]:
    """Every figure of a run, drawn one at a time: ``(name, fig, data, note)``."""
    for name, draw, note in planned(matrix, variants_df, timings, head, seed_rows):
        yield (name, *draw(), note)
