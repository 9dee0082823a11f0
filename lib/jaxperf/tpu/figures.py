"""Figures of the TPU compile study (compiled for TPU on a CPU, not executed). Each states
its claim in its title from the numbers it plots and shows the key variants
(:func:`shown_variants`, at most six lines per panel with the reporter's); every unroll of
every form is in :func:`plot_static_unrolls_vs_T`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from ..jax20909 import vocab
from .sweep import OK

T_LABEL = "T (sequence length)"
NOT_RUN = "compiled for TPU on a CPU (libtpu), not executed"
REPORTER: dict[str, Any] = dict(color=plots.color("reporter A6000"), marker="s", ms=4, mfc="white", lw=1.2)


def shown_variants(df: pd.DataFrame, *, hand_unrolled: bool = True) -> list[str]:
    """The variants drawn, in the study's order: the reporter's two loops, fori_loop at the
    largest unroll (Mosaic TPU honours ``unroll``), the fix (scalar_carry u=1) and, unless
    ``hand_unrolled=False``, the portable hand-unrolled loop at the largest unroll. Left out
    here (kept in the records and :func:`plot_static_unrolls_vs_T`): the other unrolls,
    hoisted, and pl.loop (it wraps fori_loop and compiles to the same bundles)."""
    top = int(df.unroll.max()) if len(df) else 1
    pairs = [("python", 1), ("fori", 1), ("fori", top), ("scalar_carry", 1)]
    pairs += [("hand_unrolled", top)] if hand_unrolled and top > 1 else []
    return vocab.variant_order(pairs)


def _shown(df: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
    return df[(df.status == OK) & df.variant.isin(shown_variants(df, **kwargs))]


def _ratios(part: pd.DataFrame, y: str, variants: Sequence[str]) -> str:
    """'at T=<largest with a Python loop>: <variant> <r>x, ... the Python loop' ('' if none)."""
    at = part.groupby(["variant", "T"])[y].median()
    both = [T for T in sorted(set(part["T"])) if ("python", T) in at]
    named = [v for v in dict.fromkeys(variants) if both and (v, both[-1]) in at]
    if not named:
        return ""
    T = both[-1]
    return (
        f"at T={T}: "
        + ", ".join(f"{v} {at[(v, T)] / at[('python', T)]:.1f}x" for v in named)
        + " the Python loop"
    )


def _growth(part: pd.DataFrame, y: str, unit: str) -> str:
    """'python <first> -> <last>; fori u=1 <first> -> <last> <unit>' over the swept T."""
    out = []
    for variant in ("python", "fori u=1"):
        v = part[part.variant == variant].groupby("T")[y].median()
        if len(v) >= 2:
            out.append(f"{variant} {v.iloc[0]:.0f} -> {v.iloc[-1]:.0f}")
    return "; ".join(out) + (f" {unit}" if out else "")


def _panels(
    df: pd.DataFrame, column: str, y: str, ylabel: str, order: Sequence[str], claim: Any
) -> tuple[plt.Figure, list[plt.Axes], pd.DataFrame]:
    """One row per value of ``column``: the ``order`` variants' medians (IQR band) vs T, one
    shared y scale, the legend right of the first row; ``claim(part)`` titles each row."""
    panels = list(dict.fromkeys(df[column]))
    fig, axes = rules.stacked(len(panels), row_height=2.2)
    stats = []
    for ax, panel in zip(axes, panels):
        part = df[df[column] == panel]
        shown = [v for v in order if v in set(part.variant)]
        drawn = plots.median_iqr_lines(ax, part, "T", y, "variant", hue_order=shown, logx=True, logy=True)
        stats.append(drawn.assign(**{column: panel}))
        rules.panel_title(ax, f"{panel}: {claim(part)}".rstrip(": "))
        ax.set(ylabel=ylabel, xlabel="")
        rules.plain_log_ticks(ax, "y")
    axes[-1].set_xlabel(T_LABEL)
    return fig, axes, pd.concat(stats) if stats else pd.DataFrame()


@plots.draws
def plot_compile_vs_T(records: pd.DataFrame, kernel: str = "seed") -> tuple[plt.Figure, pd.DataFrame]:
    """Median compile ms (IQR band over repeats) vs T, one row per TPU generation."""
    part = _shown(records[records.kernel == kernel])
    part = part.assign(generation="TPU " + part.generation)
    fig, axes, data = _panels(
        part,
        "generation",
        "compile_ms",
        "compile ms (median)",
        shown_variants(part),
        lambda p: _growth(p, "compile_ms", "ms"),
    )
    plots.legend_outside(axes[0])
    rules.title(fig, f"{kernel} kernel, {NOT_RUN}: compile ms vs T per TPU generation")
    return fig, data


@plots.draws
def plot_static_vs_T(points: pd.DataFrame, kernel: str = "seed") -> tuple[plt.Figure, pd.DataFrame]:
    """Static estimate of one kernel call (B=512) in ms vs T, one row per generation, with the
    reporter's executed A6000 times (dashed: Python loop, dotted: fori_loop)."""
    part = _shown(points[(points.kernel == kernel) & points.us_seed_batch.notna()], hand_unrolled=False)
    part = part.assign(ms_static=part.us_seed_batch / 1e3, generation="TPU " + part.generation)
    fig, axes, data = _panels(
        part,
        "generation",
        "ms_static",
        "ms per kernel call\n(static, B=512)",
        shown_variants(part, hand_unrolled=False),
        lambda p: _ratios(p, "ms_static", ("fori u=1", vocab.FIX)),
    )
    if kernel == "seed":
        reported = pd.DataFrame(vocab.SEED_ROWS, columns=vocab.SEED_COLUMNS)
        for ax in axes:
            ax.plot(
                reported["T"], reported.python_ms, ls="--", label="reporter A6000: Python loop", **REPORTER
            )
            ax.plot(reported["T"], reported.fori_ms, ls=":", label="reporter A6000: fori_loop", **REPORTER)
            ax.set_xticks(sorted(set(part["T"]) | set(reported["T"])))
            ax.tick_params(axis="x", labelrotation=45)
    plots.legend_outside(axes[0])
    rules.title(
        fig,
        f"{kernel} kernel: static estimate of one call ({NOT_RUN}) beside the reporter's A6000 measurement",
    )
    return fig, data


@plots.draws
def plot_static_unrolls_vs_T(
    points: pd.DataFrame, generation: str, kernel: str = "seed"
) -> tuple[plt.Figure, pd.DataFrame]:
    """Every unroll of every loop form (but pl.loop, which compiles to fori_loop's bundles):
    the static estimate of one call (B=512) vs T at one generation, one row per form."""
    part = points[(points.kernel == kernel) & (points.generation == generation) & (points.status == OK)]
    part = part[part.us_seed_batch.notna() & (part.loop_form != "pl_loop")]
    part = part.assign(ms_static=part.us_seed_batch / 1e3)
    forms = [f for f in vocab.UNROLLED_FORMS if f in set(part.loop_form)]
    fig, axes = rules.stacked(len(forms), row_height=2.2)
    frames = []
    for ax, form in zip(axes, forms):
        rows = part[(part.loop_form == form) | (part.variant == "python")]
        unrolls = sorted(set(rows[rows.loop_form == form].unroll))
        for name in vocab.frame_variant_order(rows):
            v = rows[rows.variant == name].sort_values("T")
            color = plots.color(name)
            if name != "python":  # the form's unrolls in shades of its colour; the Python loop stays black
                color = rules.unroll_shade(color, int(v.unroll.iloc[0]), unrolls)
            ax.plot(
                v["T"], v.ms_static, marker="o", ms=3.5, color=color, ls=plots.unroll_style(name), label=name
            )
        ends = [vocab.variant_name(form, unrolls[0]), vocab.variant_name(form, unrolls[-1])]
        rules.panel_title(ax, f"{form}: {_ratios(rows, 'ms_static', ends)}".rstrip(": "))
        ax.set_ylabel("ms per call\n(static, B=512)")
        plots.legend_outside(ax)
        frames.append(rows)
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
        rules.plain_log_ticks(ax, "x")
        ax.set_xticks(sorted(set(part["T"])))
    axes[-1].set_xlabel(T_LABEL)
    rules.title(
        fig, f"Every unroll, {kernel} kernel on TPU {generation}: static estimate of one call ({NOT_RUN})"
    )
    data = pd.concat(frames, ignore_index=True) if frames else part
    return fig, data[["generation", "kernel", "variant", "loop_form", "unroll", "T", "ms_static", "bundles"]]


@plots.draws
def plot_bundles_vs_T(points: pd.DataFrame, generation: str) -> tuple[plt.Figure, pd.DataFrame]:
    """Final-bundle count of each kernel vs T at one generation, one row per kernel."""
    part = _shown(points[(points.generation == generation) & points.bundles.notna()])
    part = part.assign(kernel=part.kernel + " kernel")
    fig, axes, data = _panels(
        part,
        "kernel",
        "bundles",
        "final bundles",
        shown_variants(part),
        lambda p: _growth(p, "bundles", "bundles"),
    )
    for ax in axes:
        plots.legend_outside(ax)
    rules.title(fig, f"TPU {generation} ({NOT_RUN}): final bundles vs T per kernel")
    return fig, data
