"""Figures: seaborn, median line with an interquartile band, log axes where a
sweep spans decades, a footer naming backend, device and versions; each figure
saved as PNG + SVG with a CSV of the same name holding the plotted data."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg", force=False)  # headless unless a notebook already chose a backend
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from . import provenance as _prov
from .records import _atomic_write

sns.set_theme(context="notebook", style="whitegrid")


def spans_decades(values: Any, decades: float = 1.5) -> bool:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return arr.size > 1 and np.log10(arr.max() / arr.min()) >= decades


def median_iqr_lines(
    ax: plt.Axes,
    data: pd.DataFrame,
    x: str,
    y: str,
    hue: str,
    *,
    hue_order: Sequence[str] | None = None,
    logx: bool | None = None,
    logy: bool | None = None,
) -> pd.DataFrame:
    """Median of ``y`` per (hue, x) as a line, its IQR as a band.

    Returns the plotted statistics (hue, x, median, q25, q75, n). Log axes
    default to on when the data spans 1.5 decades or more.
    """
    stats = (
        data.groupby([hue, x], sort=True)[y]
        .describe(percentiles=[0.25, 0.5, 0.75])[["25%", "50%", "75%", "count"]]
        .rename(columns={"25%": "q25", "50%": "median", "75%": "q75", "count": "n"})
        .reset_index()
    )
    order = list(hue_order) if hue_order is not None else list(dict.fromkeys(data[hue]))
    palette = dict(zip(order, sns.color_palette("tab10", n_colors=max(len(order), 1))))
    for name in order:
        part = stats[stats[hue] == name].sort_values(x)
        if part.empty:
            continue
        ax.plot(part[x], part["median"], marker="o", ms=4, label=str(name), color=palette[name])
        ax.fill_between(part[x], part["q25"], part["q75"], alpha=0.2, color=palette[name], linewidth=0)
    if logx if logx is not None else spans_decades(stats[x]):
        ax.set_xscale("log")
        # Tick the swept values themselves: log minor-tick labels (3x10^1, 4x10^1, ...) collide.
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        swept = sorted(stats[x].unique())
        if len(swept) <= 10:
            ax.set_xticks(swept)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    if logy if logy is not None else spans_decades(stats["median"]):
        ax.set_yscale("log")
    return stats


def add_footer(fig: plt.Figure, prov: dict[str, Any], extra: str = "") -> None:
    text = _prov.footer(prov) + (f"\n{extra}" if extra else "")
    fig.text(0.01, 0.005, text, fontsize=7, color="0.35", ha="left", va="bottom")


def save(
    fig: plt.Figure,
    figures_dir: Path,
    name: str,
    data: pd.DataFrame,
    prov: dict[str, Any],
    *,
    drawn_by: str,
    note: str = "",
) -> dict[str, Path]:
    """Save ``name``.png/.svg plus ``name``.csv (the plotted data) under ``figures_dir``.

    ``drawn_by`` names the function that drew the figure, recorded in the
    footer so a figure leads back to its code and data.
    """
    add_footer(
        fig, prov, extra=f"drawn by jaxperf.{drawn_by}; data: {name}.csv" + (f"; {note}" if note else "")
    )
    # Leave room at the top for a figure-level legend (tight_layout ignores those).
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1 - 0.8 / height if fig.legends else 1))
    figures_dir = Path(figures_dir)
    paths = {}
    for ext in ("png", "svg"):
        path = figures_dir / f"{name}.{ext}"
        tmp = figures_dir / f".{name}.tmp.{ext}"
        fig.savefig(tmp, dpi=130, format=ext)
        tmp.replace(path)
        paths[ext] = path
    paths["csv"] = _atomic_write(figures_dir / f"{name}.csv", data.to_csv(index=False).encode())
    return paths
