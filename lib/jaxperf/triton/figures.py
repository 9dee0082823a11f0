"""Figures of the Triton compile study: compile time and SASS size vs T, the compile stages,
and the static estimate beside the reporter's measured ratio. Each returns ``(fig, data)``
(the plotted numbers) and is marked ``@plots.draws``, so a saved figure names its function."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .. import plots
from ..compilers.triton import estimate
from ..compilers.triton.toolchain import DEFAULT_TARGET, label
from ..jax20909 import vocab
from . import analysis
from .sweep import STATUS_OK

ISSUE = "jax-ml/jax#20909"


def _T_axis(ax: Any, sizes: Iterable[int]) -> None:
    """Log T axis ticked at the swept sizes, labelled as plain integers."""
    from matplotlib.ticker import FixedLocator, NullLocator

    sizes = sorted({int(t) for t in sizes})
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(t) for t in sizes], rotation=45 if len(sizes) > 4 else 0, fontsize=8)


def _kernels(frame: pd.DataFrame) -> list[str]:
    return [k for k in vocab.KERNELS if k in set(frame.kernel)]


def _placeholder(text: str) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    ax.text(0.5, 0.5, text, ha="center")
    ax.set_axis_off()
    return fig


@plots.draws
def compile_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Compile ms vs T per loop form (median line, IQR band), one panel per kernel; the
    reporter's A6000 compile column dashed beside the reporter's kernel."""
    ok = df[df.status == STATUS_OK]
    seed = analysis.seed_compile_ms()
    fig, axes = vocab.facets(len(_kernels(ok)), width=5.5, height=4.2)
    stats = []
    for ax, kernel in zip(axes, _kernels(ok)):
        part = ok[ok.kernel == kernel]
        order = vocab.frame_variant_order(part)
        s = plots.median_iqr_lines(
            ax, part, "T", "compile_ms", "variant", hue_order=order, logx=True, logy=True
        )
        stats.append(s.assign(kernel=kernel, source=f"this study ({label(target)})"))
        if kernel == "seed":
            for col, style, name in (("python", "--", "Python loop"), ("fori", ":", "fori_loop")):
                ax.plot(seed["T"], seed[col], style, color="black", lw=1.5, label=f"{ISSUE} A6000: {name}")
                stats.append(
                    pd.DataFrame(
                        {"variant": f"{ISSUE} A6000 {col}", "T": seed["T"], "median": seed[col].astype(float)}
                    ).assign(kernel=kernel, source=f"{ISSUE} ({vocab.SEED_SETUP})")
                )
        _T_axis(ax, set(part["T"]) | (set(seed["T"]) if kernel == "seed" else set()))
        ax.set(
            title=f"{kernel} kernel",
            xlabel="T (sequence length)",
            ylabel="compile ms (median, IQR band)\nJAX export + Triton ttir->cubin",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Compile time vs T per loop form: {label(target)}", fontsize=11)
    return fig, pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()


@plots.draws
def sass_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """SASS instructions vs T per loop form; hollow markers where no loop survives in SASS."""

    med = analysis.point_medians(df)
    med = med[med.status == STATUS_OK]
    fig, axes = vocab.facets(len(_kernels(med)), width=5.5, height=4.2)
    for ax, kernel in zip(axes, _kernels(med)):
        part = med[med.kernel == kernel]
        order = vocab.frame_variant_order(part)
        palette = plots.colors_for(order)
        for name in order:
            v = part[part.variant == name].sort_values("T")
            loop = v.loop_present.astype(bool)
            ax.plot(
                v["T"],
                v["sass_instructions"],
                color=palette[name],
                ls=plots.unroll_style(name),
                label=name,
                lw=1.2,
            )
            ax.scatter(v["T"][loop], v["sass_instructions"][loop], color=palette[name], s=22, zorder=3)
            ax.scatter(
                v["T"][~loop],
                v["sass_instructions"][~loop],
                facecolors="white",
                edgecolors=palette[name],
                s=22,
                zorder=3,
            )
        _T_axis(ax, part["T"])
        ax.set_yscale("log")
        ax.set(
            title=f"{kernel} kernel", xlabel="T (sequence length)", ylabel="SASS instructions (NOPs excluded)"
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"SASS size vs T ({label(target)}); hollow marker = no loop left in SASS", fontsize=11)
    cols = [
        "kernel",
        "variant",
        "T",
        "sass_instructions",
        "ptx_instructions",
        "registers",
        "spill_stores_bytes",
        "loop_present",
    ]
    return fig, med[cols].reset_index(drop=True)


def _stage_colors() -> dict[str, Any]:
    import seaborn as sns

    return dict(zip(analysis.STAGE_COLUMNS, sns.color_palette("Set2", n_colors=len(analysis.STAGE_COLUMNS))))


@plots.draws
def stage_breakdown(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Stacked bars: median ms per compile stage for each variant at each kernel's largest compiled T."""
    table = analysis.stage_table(df, include_short=False)
    if table.empty:
        return _placeholder("nothing compiled"), table
    colors = _stage_colors()
    fig, axes = vocab.facets(len(_kernels(table)), width=6.0, height=4.5)
    for ax, kernel in zip(axes, _kernels(table)):
        part = table[table.kernel == kernel].iloc[::-1]
        T = int(part["T"].iloc[0])
        left = np.zeros(len(part))
        for col in analysis.STAGE_COLUMNS:
            ax.barh(
                part["variant"], part[col], left=left, color=colors[col], label=analysis.STAGE_LABELS[col]
            )
            left += part[col].to_numpy(float)
        ax.set(title=f"{kernel} kernel, T={T}", xlabel="ms (median per stage)")
        absent = df[(df.kernel == kernel) & (df["T"] == T) & (df.status != STATUS_OK)].drop_duplicates(
            "variant"
        )
        if not absent.empty:
            ax.set_xlabel("ms (median per stage)\nnot compiled at this T:\n" + _compact(absent), fontsize=8)
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), framealpha=0.9)
    fig.suptitle(f"Compile stages at the largest T ({label(target)})", fontsize=11)
    return fig, table


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
def python_stages_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """The Python loop's compile stages vs T (log-log), one panel per kernel it compiled at two or more T for."""
    table = analysis.stages_by_T(df)
    kernels = [k for k in vocab.KERNELS if (table.kernel == k).sum() >= 2]
    if not kernels:
        return _placeholder("the Python loop compiled at fewer than two T"), table
    colors = _stage_colors()
    fig, axes = vocab.facets(len(kernels), width=5.5, height=4.2)
    for ax, kernel in zip(axes, kernels):
        part = table[table.kernel == kernel].sort_values("T")
        for col in analysis.STAGE_COLUMNS:
            ax.plot(
                part["T"], part[col], marker="o", ms=4, color=colors[col], label=analysis.STAGE_LABELS[col]
            )
        ax.plot(part["T"], part["compile_ms"], marker="s", ms=4, color="black", lw=1.5, label="total")
        _T_axis(ax, part["T"])
        ax.set_yscale("log")
        ax.set(
            title=f"{kernel} kernel: Python loop",
            xlabel="T (sequence length)",
            ylabel="ms per stage (median)",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Where the Python loop's compile time grows\n({label(target)})", fontsize=10)
    return fig, table


@plots.draws
def estimate_vs_T(rows: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Left: dynamic SASS instructions per kernel call vs T per form and target (static estimate).
    Right: the predicted fori/Python and scalar-carry/Python ratios per target beside the reporter's
    measured fori/Python ratio."""
    import matplotlib.pyplot as plt

    table = estimate.table(rows)
    ratios = estimate.ratios(rows)
    if table.empty:
        return _placeholder("nothing estimated"), table
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = dict(zip(sorted(table.target.unique()), ("-", "--", ":")))
    order = vocab.frame_variant_order(table)
    colors = plots.colors_for(order)
    for (target, variant), part in table.groupby(["target", "variant"], sort=False):
        part = part.sort_values("T")
        left.plot(
            part["T"],
            part["sass_dynamic_per_call"],
            styles[target],
            marker="o",
            ms=3,
            color=colors[variant],
            label=f"{variant} ({target})",
        )
    left.set_yscale("log")
    _T_axis(left, table["T"])
    left.set(
        xlabel="T (sequence length)",
        ylabel="SASS instructions issued per kernel call\n(warp instructions, static estimate)",
    )
    left.legend(fontsize=6, ncol=2)
    for column, color, name in (
        ("fori u=1 / python", "tab:blue", "fori_loop"),
        (f"{analysis.FIX} / python", "tab:green", analysis.FIX),
    ):
        for target, part in ratios.groupby("target") if column in ratios else ():
            right.plot(
                part["T"],
                part[column],
                styles[target],
                marker="o",
                color=color,
                label=f"{name}: predicted, {target}",
            )
    measured = pd.DataFrame(vocab.seed_records())
    right.plot(
        measured["T"], measured["ratio"], "s-", color="black", label=f"{ISSUE} measured (A6000, ms per call)"
    )
    right.set_yscale("log")
    _T_axis(right, set(ratios["T"]) | set(measured["T"]))
    right.set(
        xlabel="T (sequence length)", ylabel="form / Python loop\n(predicted: instructions; measured: ms)"
    )
    right.legend(fontsize=7)
    fig.suptitle(f"{estimate.LABEL}: the reporter's kernel", fontsize=10)
    return fig, ratios
