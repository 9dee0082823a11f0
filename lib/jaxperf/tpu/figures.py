"""Figures of the TPU compile study (compiled for TPU on a CPU, not executed)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from .. import plots
from ..jax20909 import vocab
from .sweep import OK


def shown_variants(df: pd.DataFrame) -> list[str]:
    """The variants drawn (all are in the records): the reporter's two, fori_loop at the largest
    unroll, and each portable fix (:data:`~jaxperf.jax20909.vocab.PORTABLE_FORMS`) at unroll 1 and
    the largest unroll, in the study's order. Left out: hand_unrolled at unroll 1 (a plain
    fori_loop) and pl.loop (it wraps fori_loop and compiles to the same bundles)."""
    top = int(df.unroll.max()) if len(df) else 1
    pairs = [("python", 1), ("fori", 1), ("fori", top)]
    pairs += [
        (form, u) for form in vocab.PORTABLE_FORMS for u in (1, top) if (form, u) != ("hand_unrolled", 1)
    ]
    return vocab.variant_order(pairs)


def _shown(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df.status == OK) & df.variant.isin(shown_variants(df))]


LEGEND_COLUMN_INCHES = 1.6  # one legend entry at fontsize 8 ("hand_unrolled u=8" and its marker)


def _legend(fig: plt.Figure) -> plt.Figure:
    """One legend above the panels, in as few rows as the figure's width allows (at most 5 columns)."""
    if fig.axes:
        handles, labels = fig.axes[0].get_legend_handles_labels()
        fit = int(fig.get_size_inches()[0] // LEGEND_COLUMN_INCHES)
        fig.legend(handles, labels, loc="upper center", ncol=max(1, min(len(labels), 5, fit)), fontsize=8)
    return fig


def _panels(
    df: pd.DataFrame, column: str, y: str, ylabel: str, title: str
) -> tuple[plt.Figure, pd.DataFrame]:
    panels = list(dict.fromkeys(df[column]))
    fig, axes = vocab.facets(len(panels), width=4.6, height=3.8)
    stats = []
    for ax, panel in zip(axes, panels):
        part = df[df[column] == panel]
        order = [v for v in shown_variants(df) if v in set(part.variant)]
        drawn = plots.median_iqr_lines(ax, part, "T", y, "variant", hue_order=order, logx=True)
        stats.append(drawn.assign(**{column: panel}))
        ax.set_title(f"{title} {panel}")
        ax.set_xlabel("T (sequence length)")
        ax.set_ylabel(ylabel)
    return fig, pd.concat(stats) if stats else pd.DataFrame()


@plots.draws
def plot_compile_vs_T(records: pd.DataFrame, kernel: str = "seed") -> tuple[plt.Figure, pd.DataFrame]:
    """Median compile ms (IQR band over repeats) vs T, one panel per TPU generation."""
    part = _shown(records[records.kernel == kernel])
    fig, data = _panels(part, "generation", "compile_ms", "compile ms (median, IQR)", f"{kernel}, TPU")
    return _legend(fig), data


@plots.draws
def plot_static_vs_T(points: pd.DataFrame, kernel: str = "seed") -> tuple[plt.Figure, pd.DataFrame]:
    """Static estimate of one kernel call (B=512) in ms vs T, one panel per generation,
    with the reporter's executed A6000 times (dashed: Python loop, dotted: fori_loop)."""
    part = _shown(points[(points.kernel == kernel) & points.us_seed_batch.notna()])
    part = part.assign(ms_static=part.us_seed_batch / 1e3)
    fig, data = _panels(
        part, "generation", "ms_static", "ms per kernel call (static, B=512)", f"{kernel}, TPU"
    )
    if kernel == "seed":
        reported = pd.DataFrame(vocab.SEED_ROWS, columns=vocab.SEED_COLUMNS)
        for ax in fig.axes[: len(set(part.generation))]:
            ax.plot(reported["T"], reported.python_ms, "k--", lw=1, label="A6000 Python (reporter)")
            ax.plot(reported["T"], reported.fori_ms, "k:", lw=1, label="A6000 fori (reporter)")
            ax.set_yscale("log")
    return _legend(fig), data


@plots.draws
def plot_bundles_vs_T(points: pd.DataFrame, generation: str) -> tuple[plt.Figure, pd.DataFrame]:
    """Final-bundle count of each kernel vs T at one generation: the Python loop's program
    grows with T, the loop forms' stay flat."""
    part = _shown(points[(points.generation == generation) & points.bundles.notna()])
    fig, data = _panels(part, "kernel", "bundles", f"final bundles (TPU {generation})", "kernel")
    return _legend(fig), data
