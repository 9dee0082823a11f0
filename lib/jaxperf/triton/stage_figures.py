"""Figures of the Triton compile study's stages and static estimate: where compile time goes
at the largest T, how the Python loop's stages grow with T, and the estimated fori/Python
ratio beside the reporter's measured one (with the instruction counts behind it). Each
returns ``(fig, data)``, states its claim in its title and is marked ``@plots.draws``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .. import figure_rules as rules
from .. import plots
from ..compilers.triton import estimate
from ..compilers.triton.toolchain import DEFAULT_TARGET, label
from ..jax20909 import vocab
from . import analysis
from .sweep import STATUS_OK

ISSUE = "jax-ml/jax#20909"
T_LABEL = "T (sequence length)"
TARGET_STYLES = ("-", "--", ":")  # per target, in sorted order (sm_86 solid, sm_90 dashed)


def T_axis(ax: Any, sizes: Iterable[int]) -> None:
    """Log T axis ticked at the swept sizes, labelled as plain integers."""
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

    sizes = sorted({int(t) for t in sizes})
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(sizes, [str(t) for t in sizes], rotation=45 if len(sizes) > 4 else 0)


def kernels_of(frame: pd.DataFrame) -> list[str]:
    return [k for k in vocab.KERNELS if k in set(frame.kernel)]


def placeholder(text: str) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.text(0.5, 0.5, text, ha="center")
    ax.set_axis_off()
    return fig


def _stage_colors() -> dict[str, Any]:
    import seaborn as sns

    return dict(zip(analysis.STAGE_COLUMNS, sns.color_palette("Set2", n_colors=len(analysis.STAGE_COLUMNS))))


def _compact(rows: pd.DataFrame) -> str:
    """One line per status ('does not lower: fori u=2,4; pl_loop u=2,4') for the absent variants."""
    parts = []
    for status, by_status in rows.groupby("status", sort=False):
        forms = []
        for form, group in by_status.groupby("loop_form", sort=False):
            unrolls = ",".join(str(u) for u in sorted(group.unroll))
            forms.append(form if form == "python" else f"{form} u={unrolls}")
        parts.append(f"{status}: " + "; ".join(forms))
    return "\n".join(parts)


@plots.draws
def stage_breakdown(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Stacked bars: median ms per compile stage for each variant at each kernel's largest
    compiled T, one row of the figure per kernel (bars as tall as the kernel has variants)."""
    table = analysis.stage_table(df, include_short=False)
    if table.empty:
        return placeholder("nothing compiled"), table
    import matplotlib.pyplot as plt

    colors = _stage_colors()
    kernels = kernels_of(table)
    heights = [1.0 + 0.24 * (table.kernel == k).sum() for k in kernels]
    fig, axes = plt.subplots(
        len(kernels),
        1,
        figsize=(rules.ROW_WIDTH_IN, 1.4 + sum(heights)),
        height_ratios=heights,
        squeeze=False,
    )
    biggest = []
    for [ax], kernel in zip(axes, kernels):
        part = table[table.kernel == kernel].iloc[::-1]
        T = int(part["T"].iloc[0])
        left = np.zeros(len(part))
        for col in analysis.STAGE_COLUMNS:
            ax.barh(
                part["variant"], part[col], left=left, color=colors[col], label=analysis.STAGE_LABELS[col]
            )
            left += part[col].to_numpy(float)
        top = part.loc[part.compile_ms.idxmax()]
        biggest.append(f"{kernel} {top.variant} {top.compile_ms:.0f} ms ({top['largest stage']})")
        rules.panel_title(ax, f"{kernel} kernel, T={T}")
        ax.tick_params(axis="y", labelsize=rules.pt(fig, 8))
        absent = df[(df.kernel == kernel) & (df["T"] == T) & (df.status != STATUS_OK)].drop_duplicates(
            "variant"
        )
        note = (
            ("\nnot compiled at this T: " + _compact(absent).replace("\n", "; ")) if not absent.empty else ""
        )
        ax.set_xlabel("ms (median per stage)" + note, fontsize=rules.pt(fig, 8))
    plots.legend_outside(axes[0][0])
    rules.title(
        fig,
        f"Compile stages at the largest T ({label(target)}); slowest, largest stage: " + "; ".join(biggest),
    )
    return fig, table


@plots.draws
def python_stages_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """The Python loop's compile stages vs T (log-log), one row per kernel it compiled at two or
    more T for; the title gives the total's growth and the stage that grew most."""
    table = analysis.stages_by_T(df)
    kernels = [k for k in vocab.KERNELS if (table.kernel == k).sum() >= 2]
    if not kernels:
        return placeholder("the Python loop compiled at fewer than two T"), table
    colors = _stage_colors()
    fig, axes = rules.stacked(len(kernels))
    claims = []
    for ax, kernel in zip(axes, kernels):
        part = table[table.kernel == kernel].sort_values("T")
        for col in analysis.STAGE_COLUMNS:
            ax.plot(
                part["T"], part[col], marker="o", ms=4, color=colors[col], label=analysis.STAGE_LABELS[col]
            )
        first, last = part.iloc[0], part.iloc[-1]
        growth = {col: last[col] / first[col] for col in analysis.STAGE_COLUMNS if first[col] > 0}
        most = max(growth, key=lambda c: growth[c])
        total = last.compile_ms / first.compile_ms
        span = f"T={int(first['T'])} to {int(last['T'])}"
        claims.append(f"{kernel} {total:.1f}x from {span}")
        largest = max(analysis.STAGE_COLUMNS, key=lambda c: last[c])
        rules.panel_title(
            ax,
            f"{kernel} kernel: total {first.compile_ms:.0f} -> {last.compile_ms:.0f} ms; largest at "
            f"T={int(last['T'])}: {analysis.STAGE_LABELS[largest].split(' (')[0]} ({last[largest]:.0f} ms); "
            f"fastest growing: {analysis.STAGE_LABELS[most].split(' (')[0]} ({growth[most]:.0f}x)",
        )
        ax.set_ylabel("ms per stage (median)")
    plots.legend_outside(axes[0])
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
        T_axis(ax, table["T"])
    axes[-1].set_xlabel(T_LABEL)
    rules.title(fig, f"Where the Python loop's compile time grows ({label(target)}): " + "; ".join(claims))
    return fig, table


def _measured() -> pd.DataFrame:
    return pd.DataFrame(vocab.seed_records())


@plots.draws
def estimate_vs_T(rows: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """The predicted fori/Python and fix/Python ratios per target (static estimate: SASS
    instructions issued per call) beside the reporter's measured fori/Python ratio."""
    ratios = estimate.ratios(rows)
    if ratios.empty:
        return placeholder("nothing estimated"), ratios
    fig, [ax] = rules.stacked(1, row_height=3.6)
    styles = dict(zip(sorted(ratios.target.unique()), TARGET_STYLES))
    claims = []
    for variant in ("fori u=1", analysis.FIX):
        column = f"{variant} / python"
        for target, part in ratios.groupby("target") if column in ratios else ():
            part = part.dropna(subset=[column]).sort_values("T")
            ax.plot(
                part["T"],
                part[column],
                styles[target],
                marker="o",
                ms=4,
                color=plots.color(variant),
                label=f"{variant}, {target} (predicted)",
            )
            if len(part) and target == max(styles):
                claims.append(
                    f"{variant} {part[column].iloc[-1]:.1f}x ({target}, T={int(part['T'].iloc[-1])})"
                )
    measured = _measured()
    ax.plot(
        measured["T"],
        measured["ratio"],
        "-",
        marker="s",
        color=plots.color("reporter A6000"),
        label="reporter: fori_loop (A6000, measured)",
    )
    claims.append(f"the reporter measured {measured.ratio.iloc[-1]:.1f}x (T={int(measured['T'].iloc[-1])})")
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    ax.set_ylim(bottom=min(0.7, ax.get_ylim()[0]))
    plots.reference_line(ax, 1.0, "1x: the Python loop's speed", va="top", fontsize=rules.pt(fig))
    T_axis(ax, set(ratios["T"]) | set(measured["T"]))
    ax.set(xlabel=T_LABEL, ylabel="form / Python loop\n(predicted: instructions;\nmeasured: ms)")
    plots.legend_outside(ax)
    rules.title(fig, f"{estimate.LABEL}, the reporter's kernel: predicted " + "; ".join(claims))
    return fig, ratios


@plots.draws
def estimate_instructions_vs_T(rows: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """SASS instructions issued per kernel call vs T per form (the static estimate behind
    :func:`estimate_vs_T`), one row per target."""
    table = estimate.table(rows)
    if table.empty:
        return placeholder("nothing estimated"), table
    targets = sorted(table.target.unique())
    fig, axes = rules.stacked(len(targets))
    for ax, target in zip(axes, targets):
        part = table[table.target == target]
        order = vocab.frame_variant_order(part)
        for name in order:
            v = part[part.variant == name].sort_values("T")
            ax.plot(
                v["T"],
                v["sass_dynamic_per_call"],
                marker="o",
                ms=3.5,
                color=plots.color(name),
                ls=plots.unroll_style(name),
                label=name,
            )
        rules.panel_title(ax, f"{target}")
        ax.set_ylabel("SASS instructions\nper kernel call")
        plots.legend_outside(ax)
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
        T_axis(ax, table["T"])
    axes[-1].set_xlabel(T_LABEL)
    rules.title(fig, f"{estimate.LABEL}: warp instructions issued per call of the reporter's kernel")
    return fig, table
