"""Figures of the Triton compile study: compile time and SASS size vs T (the key loop forms,
then every unroll in a secondary figure). Each returns ``(fig, data)`` (the plotted numbers),
states its claim in its title from those numbers, and is marked ``@plots.draws``, so a saved
figure names its function. The compile stages and the static estimate are drawn by
:mod:`jaxperf.triton.stage_figures` (re-exported here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import figure_rules as rules
from .. import plots
from ..compilers.triton.toolchain import DEFAULT_TARGET, label
from ..jax20909 import shown, vocab
from . import analysis
from .stage_figures import (
    T_axis,
    estimate_instructions_vs_T,
    estimate_vs_T,
    kernels_of,
    placeholder,
    python_stages_vs_T,
    stage_breakdown,
)
from .sweep import STATUS_OK

__all__ = [
    "compile_vs_T",
    "compile_unrolls_vs_T",
    "sass_vs_T",
    "sass_unrolls_vs_T",
    "estimate_vs_T",
    "estimate_instructions_vs_T",
    "stage_breakdown",
    "python_stages_vs_T",
]

ISSUE = "jax-ml/jax#20909"
T_LABEL = "T (sequence length)"
REPORTER: dict[str, Any] = dict(color=plots.color("reporter A6000"), marker="s", ms=4, mfc="white", lw=1.3)


def key_variants(part: pd.DataFrame, *, with_hoisted: bool = True) -> list[str]:
    """The study's key variants (:func:`jaxperf.jax20909.shown.key_variants`): the Python
    loop, fori u=1, hoisted u=1 (unless ``with_hoisted=False``), the fix and the
    hand-unrolled loop at its largest unroll."""
    return [v for v in shown.key_variants(part) if with_hoisted or v != "hoisted u=1"]


def _ratio_claim(med: pd.DataFrame, value: str, variant: str, kernel: str) -> str:
    got = shown.ratio_at_largest_T(med[med.kernel == kernel], value, variant)
    return f"at T={got[0]}, {variant} {got[1]:.2f}x the Python loop" if got else "no Python loop to compare"


@plots.draws
def compile_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Compile ms vs T for the key loop forms (median line, IQR band), one row per kernel; the
    reporter's A6000 compile columns beside the reporter's kernel (every unroll:
    :func:`compile_unrolls_vs_T`)."""
    ok = df[df.status == STATUS_OK]
    seed = analysis.seed_compile_ms()
    kernels = kernels_of(ok)
    fig, axes = rules.stacked(len(kernels))
    stats = []
    for ax, kernel in zip(axes, kernels):
        part = ok[ok.kernel == kernel]
        order = key_variants(part, with_hoisted=False)
        s = plots.median_iqr_lines(
            ax, part[part.variant.isin(order)], "T", "compile_ms", "variant", hue_order=order, logx=True
        )
        stats.append(s.assign(kernel=kernel, source=f"this study ({label(target)})"))
        sizes = set(part["T"])
        if kernel == "seed":
            for col, ls, name in (("python", "--", "Python loop"), ("fori", ":", "fori_loop")):
                ax.plot(seed["T"], seed[col], ls=ls, label=f"reporter A6000: {name}", **REPORTER)
                stats.append(
                    pd.DataFrame({"variant": f"{ISSUE} A6000 {col}", "T": seed["T"], "median": seed[col]})
                    .astype({"median": float})
                    .assign(kernel=kernel, source=f"{ISSUE} ({vocab.SEED_SETUP})")
                )
            sizes |= set(seed["T"])
        med = s.rename(columns={"median": "compile_ms"})
        claim = _ratio_claim(med.assign(kernel=kernel), "compile_ms", "fori u=1", kernel)
        rules.panel_title(ax, f"{kernel} kernel: {claim}")
        ax.set_ylabel("compile ms (median)\nexport + ttir->cubin")
        plots.legend_outside(ax)
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
        T_axis(ax, set(ok["T"]) | set(seed["T"]))
    axes[-1].set_xlabel(T_LABEL)
    py = ok[(ok.kernel == "seed") & (ok.variant == "python")].groupby("T").compile_ms.median()
    claim = f"Compile ms vs T, {label(target)}"
    if len(py) >= 2:
        claim = (
            f"{label(target)}: the seed kernel's Python loop compiles {py.iloc[-1] / py.iloc[0]:.1f}x"
            f" slower at T={py.index[-1]} than at {py.index[0]} (the reporter's A6000:"
            f" {seed.python.iloc[-1] / seed.python.iloc[0]:.1f}x from {seed['T'].iloc[0]} to {seed['T'].iloc[-1]})"
        )
    rules.title(fig, claim)
    return fig, pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()


def _unroll_panels(
    med: pd.DataFrame, value: str, ylabel: str, title: str, *, logy: bool = True
) -> tuple[Any, pd.DataFrame]:
    """One panel per (kernel, loop form swept over unrolls): the Python loop and each unroll."""
    pairs = [
        (k, f)
        for k in kernels_of(med)
        for f in vocab.UNROLLED_FORMS
        if med[(med.kernel == k) & (med.loop_form == f)].unroll.nunique() > 1
    ]
    if not pairs:
        return placeholder("no loop form compiled at more than one unroll"), med  # what was looked at
    fig, axes = rules.grid(len(pairs), 1, row_height=2.3)
    frames = []
    for [ax], (kernel, form) in zip(axes, pairs):
        part = med[(med.kernel == kernel) & ((med.loop_form == form) | (med.variant == "python"))]
        unrolls = sorted(set(part[part.loop_form == form].unroll))
        for name in vocab.frame_variant_order(part):
            v = part[part.variant == name].sort_values("T")
            ax.plot(
                v["T"],
                v[value],
                marker="o",
                ms=3.5,
                color=plots.color(name)
                if name == "python"
                else rules.unroll_shade(plots.color(name), int(v.unroll.iloc[0]), unrolls),
                ls=plots.unroll_style(name),
                label=name,
            )
        frames.append(part.assign(panel=f"{kernel}, {form}"))
        rules.panel_title(ax, f"{kernel} kernel, {form}: {_unroll_claim(part, value, form)}")
        ax.set_ylabel(ylabel)
        plots.legend_outside(ax)
    for [ax] in axes:
        if logy:
            rules.plain_log_ticks(ax, "y")
        T_axis(ax, med["T"])
    axes[-1][0].set_xlabel(T_LABEL)
    rules.title(fig, title)
    return fig, pd.concat(frames, ignore_index=True)


def _unroll_claim(part: pd.DataFrame, value: str, form: str) -> str:
    """'at T=<largest>, u=<top> <r>x u=1, the Python loop <p>x' for one panel of the sweep."""
    at = part[part["T"] == part[part.loop_form == form]["T"].max()].set_index("variant")[value]
    unrolls = sorted(set(part[part.loop_form == form].unroll))
    one, top = vocab.variant_name(form, unrolls[0]), vocab.variant_name(form, unrolls[-1])
    if one not in at or top not in at:
        return ""
    text = f"at T={int(part[part.loop_form == form]['T'].max())}, u={unrolls[-1]} is {at[top] / at[one]:.2f}x u={unrolls[0]}"
    return text + (f", the Python loop {at['python'] / at[one]:.2f}x" if "python" in at else "")


@plots.draws
def compile_unrolls_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Every unroll: compile ms (median) vs T per loop form swept over unrolls, with the Python loop."""
    med = analysis.point_medians(df)
    med = med[med.status == STATUS_OK]
    cols = ["kernel", "variant", "loop_form", "unroll", "T", "compile_ms"]
    fig, data = _unroll_panels(
        med[cols], "compile_ms", "compile ms (median)", f"Every unroll: compile ms vs T, {label(target)}"
    )
    return fig, data


@plots.draws
def sass_unrolls_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """Every unroll: SASS instructions vs T per loop form swept over unrolls, with the Python loop."""
    med = analysis.point_medians(df)
    med = med[med.status == STATUS_OK]
    cols = ["kernel", "variant", "loop_form", "unroll", "T", "sass_instructions", "loop_present"]
    title = f"Every unroll: SASS instructions vs T, {label(target)}"
    return _unroll_panels(med[cols], "sass_instructions", "SASS instructions", title)


@plots.draws
def sass_vs_T(df: pd.DataFrame, target: str = DEFAULT_TARGET) -> tuple[Any, pd.DataFrame]:
    """SASS instructions vs T for the key loop forms, one row per kernel; hollow markers where
    no loop survives in SASS (every unroll: :func:`sass_unrolls_vs_T`)."""
    med = analysis.point_medians(df)
    med = med[med.status == STATUS_OK]
    kernels = kernels_of(med)
    fig, axes = rules.stacked(len(kernels))
    for ax, kernel in zip(axes, kernels):
        part = med[med.kernel == kernel]
        order = key_variants(part)
        _sass_lines(ax, part, order)
        claim = _ratio_claim(med, "sass_instructions", "fori u=1", kernel)
        rules.panel_title(ax, f"{kernel} kernel: {claim}")
        ax.set_ylabel("SASS instructions\n(NOPs excluded)")
        plots.legend_outside(ax)
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
        T_axis(ax, med["T"])
    axes[-1].set_xlabel(T_LABEL)
    rules.title(fig, f"SASS size vs T, {label(target)}; hollow marker: no loop left in the SASS")
    cols = ["kernel", "variant", "T", "sass_instructions", "ptx_instructions", "registers"]
    return fig, med[cols + ["spill_stores_bytes", "loop_present"]].reset_index(drop=True)


def _sass_lines(ax: Any, part: pd.DataFrame, order: Sequence[str]) -> None:
    palette = plots.colors_for(list(order))
    for name in order:
        v = part[part.variant == name].sort_values("T")
        loop = v.loop_present.astype(bool)
        y = v["sass_instructions"]
        ax.plot(v["T"], y, color=palette[name], ls=plots.unroll_style(name), label=name, lw=1.4)
        ax.scatter(v["T"][loop], y[loop], color=palette[name], s=22, zorder=3)
        ax.scatter(v["T"][~loop], y[~loop], facecolors="white", edgecolors=palette[name], s=22, zorder=3)
