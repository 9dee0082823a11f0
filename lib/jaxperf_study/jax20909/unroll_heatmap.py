"""The loop study's unroll sweep as one heatmap: for each kernel a block of (loop form, T)
rows by unroll columns, each cell the variant's ms per call over the Python loop's (the
median per-repeat ratio of :func:`jaxperf_study.jax20909.analysis.headline`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from .sweep import MODE_LABELS
from .vocab import UNROLLED_FORMS


@plots.draws
def plot_unroll_heatmap(
    head: pd.DataFrame, mode: str, loop_forms: Sequence[str] = UNROLLED_FORMS
) -> tuple[Any, pd.DataFrame]:
    """The whole unroll sweep: ms per call / the Python loop's (median per-repeat ratio) for
    each (loop form, T) row and unroll column, one block per kernel; <1x: faster."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    data = head[(head["mode"] == mode) & head.loop_form.isin(loop_forms)]
    data = data[data["ms_vs_python"].notna()] if "ms_vs_python" in data else data.iloc[0:0]
    kernels = list(dict.fromkeys(data.kernel))
    blocks = []
    for kernel in kernels:
        part = data[data.kernel == kernel]
        forms = [f for f in loop_forms if f in set(part.loop_form)]
        grid = part.pivot_table(index=["loop_form", "T"], columns="unroll", values="ms_vs_python")
        grid = grid.reindex([(f, t) for f in forms for t in sorted(set(part["T"]))]).dropna(how="all")
        blocks.append((kernel, grid))
    # Each row of cells 0.34 in tall; each block's title and unroll ticks another 0.9 in.
    heights = [0.34 * max(len(g), 1) for _, g in blocks] or [1.0]
    fig = plt.figure(figsize=(8.0, 1.8 + sum(heights) + 0.9 * len(heights)))
    spec = fig.add_gridspec(max(len(blocks), 1), 2, height_ratios=heights, width_ratios=[1, 0.03])
    norm = LogNorm(vmin=0.25, vmax=4.0)
    cell_style: dict[str, Any] = dict(ha="center", va="center", fontsize=rules.pt(fig, 8))
    image = None
    for row, (kernel, grid) in enumerate(blocks):
        ax = fig.add_subplot(spec[row, 0])
        values = grid.to_numpy(float)
        image = ax.imshow(np.clip(values, 0.25, 4.0), cmap="RdBu_r", norm=norm, aspect="auto")
        for (i, j), v in np.ndenumerate(values):
            color = "white" if np.isfinite(v) and abs(np.log2(max(v, 1e-9))) > 1.2 else "black"  # dark cells
            ax.text(j, i, f"{v:.2f}" if np.isfinite(v) else "", color=color, **cell_style)
        ax.set_xticks(range(len(grid.columns)), [str(u) for u in grid.columns])
        ax.set_yticks(range(len(grid)), [f"{f}, T={t}" for f, t in grid.index], fontsize=rules.pt(fig, 8.5))
        ax.grid(False)
        best = part_best(head, mode, kernel, loop_forms)
        rules.panel_title(ax, f"{kernel} kernel{best}")
        ax.set_xlabel("unroll" if row == len(blocks) - 1 else "")
    if image is not None:
        bar = fig.colorbar(image, cax=fig.add_subplot(spec[:, 1]))
        bar.set_ticks([0.25, 0.5, 1, 2, 4], labels=["0.25x", "0.5x", "1x", "2x", "4x"])
        bar.ax.minorticks_off()
        bar.set_label("over the Python loop (>4x: 4x)")
    rules.title(
        fig, f"{MODE_LABELS.get(mode, mode)}: every unroll, ms per call over the Python loop's (<1x: faster)"
    )
    return fig, data[["mode", "kernel", "T", "loop_form", "unroll", "ms_per_call", "ms_vs_python"]]


def part_best(head: pd.DataFrame, mode: str, kernel: str, loop_forms: Sequence[str]) -> str:
    """``": best at T=<largest>: <variant> <ratio>x"`` for a kernel's heatmap title ('' if none)."""
    part = head[(head["mode"] == mode) & (head.kernel == kernel) & head.loop_form.isin(loop_forms)]
    part = part[part["ms_vs_python"].notna()] if "ms_vs_python" in part else part.iloc[0:0]
    if part.empty:
        return ""
    largest = part[part["T"] == part["T"].max()]
    row = largest.loc[largest.ms_vs_python.idxmin()]
    return f": best at T={int(row['T'])} is {row.variant} ({row.ms_vs_python:.2f}x)"
