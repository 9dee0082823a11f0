"""The loop study's figures: each draws one claim, stated in its title from the data it plots, and
returns ``(fig, data)``; :func:`planned` lists every figure of a run. Curves show the variants a
reader needs (:func:`key_variants`; every unroll is in the heatmap); the family's static counts
have a figure of their own, apart from every measured time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pandas as pd

from .. import figure_rules as rules
from .. import plots
from . import family
from .shown import key_variants, ratio_at_largest_T
from .sweep import MODE_LABELS
from .unroll_heatmap import plot_unroll_heatmap
from .vocab import FIX, seed_records

T_LABEL = "T (sequence length)"
# Each mode's palette colour (plots.SOURCE_COLORS; a harness mode's is its mode's, dashed).
MODE_SOURCES = {"xla": "XLA:CPU", "pallas_interpret": "Pallas interpret", "pallas": "H200"}
SHORT = {"xla": "XLA", "pallas_interpret": "Pallas interpret", "pallas": "compiled Pallas"}
REPORTER = "reporter A6000"


def _claim(medians: pd.DataFrame, value: str, variants: Sequence[str]) -> str:
    parts = []
    for name in variants:
        got = ratio_at_largest_T(medians, value, name)
        if got:
            parts.append((got[0], f"{name} {got[1]:.2f}x"))
    if not parts:
        return "no Python loop to compare"
    return f"at T={parts[0][0]}: " + ", ".join(p for _, p in parts) + " the Python loop"


def _rows_by_kernel(data: pd.DataFrame, value: str, ylabel: str, title: str) -> tuple[Any, pd.DataFrame]:
    """One row per kernel, the key variants' medians (IQR band) vs T, sharing x and y."""
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = rules.stacked(len(kernels))
    stats = []
    for ax, kernel in zip(axes, kernels):
        part = data[data.kernel == kernel]
        shown = key_variants(part)
        part = part[part.variant.isin(shown)]
        s = plots.median_iqr_lines(ax, part, "T", value, "variant", hue_order=shown, logx=True, logy=True)
        stats.append(s.assign(kernel=kernel))
        named = [v for v in ("fori u=1", FIX) if v in shown] or [v for v in shown if v != "python"][:1]
        claim = _claim(s.rename(columns={"median": value}), value, named)
        rules.panel_title(ax, f"{kernel} kernel: {claim}")
        ax.set(ylabel=ylabel, xlabel="")
        plots.legend_outside(ax)
    axes[-1].set_xlabel(T_LABEL)
    _tick_swept(axes, data["T"])
    for ax in axes:
        rules.plain_log_ticks(ax, "y")
    rules.title(fig, title)
    return fig, pd.concat(stats, ignore_index=True) if stats else pd.DataFrame()


def _tick_swept(axes: Sequence[Any], sizes: Any) -> None:
    swept = sorted({int(t) for t in sizes})
    for ax in axes:
        rules.plain_log_ticks(ax, "x")
        if len(swept) <= 10:
            ax.set_xticks(swept)


@plots.draws
def plot_ms_vs_T(
    timings: pd.DataFrame, mode: str, variants: Sequence[str] | None = None, sizes: pd.DataFrame | None = None
) -> tuple[Any, pd.DataFrame]:
    """ms per kernel call vs T, one row per kernel, the key variants (median line, IQR band);
    the title gives fori u=1 and the next variant over the Python loop at the largest T. ``sizes``
    (the sweep's variants: a ``batch`` per point) names the batch on the y axis; where it changes
    with T (a TPU's), the curve is ms per kernel call per batch row (/ B), each T's batch under its tick."""
    data = timings[timings["mode"] == mode]
    if variants is not None:
        data = data[data.variant.isin(variants)]
    keys, ylabel = ["mode", "kernel", "T", "variant"], "ms per kernel call\n(median, IQR band)"
    if sizes is not None and "batch" in sizes and len(data):
        data = data.drop(columns="batch", errors="ignore").merge(
            sizes[[*keys, "batch"]].dropna().drop_duplicates(keys), on=keys, how="left"
        )
        batches = sorted(data["batch"].dropna().unique())
        if len(batches) > 1:
            data = data.assign(ms_per_call=data.ms_per_call / data.batch)
        if batches:
            ylabel = (
                f"ms per kernel call, B={int(batches[0])}" if len(batches) == 1 else "ms per kernel call / B"
            )
            ylabel += "\n(median, IQR band)"
    title = f"{MODE_LABELS.get(mode, mode)}: ms per kernel call vs T"
    seed = data[data.kernel == "seed"]
    got = ratio_at_largest_T(
        seed.groupby(["variant", "T"], as_index=False).ms_per_call.median(), "ms_per_call", "fori u=1"
    )
    if got:
        title += f"; seed kernel at T={got[0]}: fori u=1 takes {got[1]:.2f}x the Python loop's time (ratio of medians)"
    fig, stats = _rows_by_kernel(data, "ms_per_call", ylabel, title)
    if " / B" in ylabel:  # each T's batch under its tick
        by_T = data.groupby("T")["batch"].first()
        fig.axes[-1].set_xticks(list(by_T.index), [f"{int(T)}\nB={int(b)}" for T, b in by_T.items()])
    return fig, stats


@plots.draws
def plot_compile_vs_T(variants_df: pd.DataFrame, mode: str) -> tuple[Any, pd.DataFrame]:
    """Compile ms (median of fresh compiles) vs T, one row per kernel, the key variants."""
    data = variants_df[(variants_df["mode"] == mode) & (variants_df["status"] == "timed")]
    title = f"{MODE_LABELS.get(mode, mode)}: compile ms vs T"
    py = data[(data.kernel == "seed") & (data.variant == "python")].sort_values("T")
    if len(py) >= 2:
        growth = py.compile_ms.iloc[-1] / py.compile_ms.iloc[0]
        title += (
            f"; the seed kernel's Python loop compiles {growth:.1f}x slower at T={int(py['T'].iloc[-1])}"
            f" than at T={int(py['T'].iloc[0])}"
        )
    fig, _ = _rows_by_kernel(data, "compile_ms", "compile ms (median)", title)
    return fig, data[["mode", "kernel", "T", "variant", "loop_form", "unroll", "lower_ms", "compile_ms"]]


def _short(mode: str) -> str:
    base = mode.removesuffix("_harness")
    return SHORT.get(base, base) + (" in the reporter's harness" if mode.endswith("_harness") else "")


def _source(mode: str) -> tuple[str, str]:
    """(palette source, line style) of a mode: a harness mode is its mode's colour, dashed."""
    base = mode.removesuffix("_harness")
    return MODE_SOURCES.get(base, base), "--" if base != mode else "-"


@plots.draws
def plot_seed_ratio(rows: Sequence[dict[str, Any]]) -> tuple[Any, pd.DataFrame]:
    """fori/Python execution ratio vs T: each mode measured here beside the reporter's A6000."""
    data = pd.DataFrame(list(rows))
    reporter = pd.DataFrame(seed_records()).assign(mode="reporter")
    cols = ["mode", "T", "ratio", "ratio_lo", "ratio_hi"]  # lo/hi: the rerun range, where measured so
    data = pd.concat(
        [
            data.reindex(columns=cols) if len(data) else pd.DataFrame(columns=cols),
            reporter.reindex(columns=cols),
        ],
        ignore_index=True,
    )
    fig, [ax] = rules.stacked(1, row_height=3.6)
    claims = []
    sources = {str(m): _source(str(m)) for m in dict.fromkeys(data["mode"]) if m != "reporter"}
    colors = plots.colors_for([s for s, _ in sources.values()] + [REPORTER])
    for mode, part in data.groupby("mode", sort=False):
        part = part.sort_values("T")
        if mode == "reporter":
            color, ls, label = colors[REPORTER], "-", "reporter: RTX A6000, jax 0.4.25"
        else:
            source, ls = sources[str(mode)]
            color, label = colors[source], MODE_LABELS.get(str(mode), str(mode))
        ax.plot(part["T"], part["ratio"], marker="o", ms=4, color=color, ls=ls, label=label)
        ranged = part.dropna(subset=["ratio_lo", "ratio_hi"])
        if len(ranged):
            ax.fill_between(
                ranged["T"], ranged["ratio_lo"], ranged["ratio_hi"], color=color, alpha=0.15, lw=0
            )
        if mode == "reporter":
            rules.label_end(ax, part["T"], part["ratio"], "reporter, A6000", color)
        last = part.iloc[-1]
        who = "the reporter" if mode == "reporter" else _short(str(mode))
        claims.append(f"{who} {last.ratio:.1f}x at T={int(last['T'])}")
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    ax.set_ylim(bottom=min(0.7, ax.get_ylim()[0]))
    plots.reference_line(ax, 1.0, "1x: the Python loop's speed", va="top", fontsize=rules.pt(fig))
    _tick_swept([ax], data["T"])
    ax.tick_params(axis="x", labelrotation=45)
    ax.set(xlabel=T_LABEL, ylabel="fori_loop / Python loop, ms per call\n(median; band: its rerun range)")
    plots.legend_outside(ax)
    rules.title(fig, "Seed kernel, fori_loop / Python loop: " + "; ".join(claims))
    return fig, data


#: (form, column, marker, x shift, label) of the two loops in :func:`plot_family_per_step`
FAMILY_MARKS = (("python", "python", "o", -0.1, "Python loop"), ("fori u=1", "fori", "s", 0.1, "fori_loop"))


@plots.draws
def plot_family_per_step(frame: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Work per loop step, fori_loop and the Python loop, per kernel of the family, one panel per
    compiler in its own unit (static counts from compiled code; no measured time is drawn)."""
    data = frame[frame.kind.str.startswith("static")]
    targets = list(dict.fromkeys(data.source))
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = rules.stacked(max(len(targets), 1), row_height=2.1, sharey=False)
    colors = plots.colors_for(["python", "fori u=1"])
    for ax, target in zip(axes, targets):
        part = data[data.source == target].set_index("kernel").reindex(kernels)
        for form, column, marker, shift, label in FAMILY_MARKS:
            xs = [i + shift for i in range(len(kernels))]  # side by side: equal values stay visible
            ax.plot(xs, part[column], ls="none", marker=marker, ms=6, color=colors[form], label=label)
        ax.set_yscale("log")
        rules.plain_log_ticks(ax, "y")
        unit = str(part.unit.dropna().iloc[0]) if part.unit.notna().any() else ""
        ax.set_ylabel("bundles\nper step" if "bundles" in unit else "instructions\nper step")
        worst = part.ratio.max()
        claim = f": fori_loop up to {worst:.1f}x the Python loop's" if worst == worst else ""
        rules.panel_title(ax, f"{target} ({unit.removesuffix(' per loop step')}){claim}")
        for i, (python, fori) in enumerate(zip(part.python, part.fori)):  # an empty column says so
            if pd.isna(python) or pd.isna(fori):
                ax.text(i, 0.5, "no count", transform=ax.get_xaxis_transform(), ha="center", va="center",
                        fontsize="small", color="0.4")  # fmt: skip
        if ax is axes[0]:
            plots.legend_outside(ax)
    axes[-1].set_xticks(list(range(len(kernels))), kernels)
    axes[-1].set_xlim(-0.5, len(kernels) - 0.5)
    for _unit, part in data.groupby("unit"):  # one unit, one y scale
        values = pd.concat([part.fori, part.python]).astype(float)
        values = values[values > 0]
        for ax, target in zip(axes, targets):
            if len(values) and target in set(part.source):
                ax.set_ylim(values.min() / 1.6, values.max() * 1.6)
    counted = family.verdicts(data)  # what the drawn counts say, kernel by kernel
    claim = "; ".join(f"{k} {v['verdict']}" for k, v in counted.items() if v["verdict"] != "not read")
    rules.title(
        fig, f"Work per loop step in each compiler's unit (static counts, compiled on a CPU): {claim}"
    )
    return fig, data.reset_index(drop=True)


def planned(
    variants_df: pd.DataFrame,
    timings: pd.DataFrame,
    head: pd.DataFrame,
    seed_rows: Sequence[dict[str, Any]],
    family_frame: pd.DataFrame | None = None,
) -> list[tuple[str, Callable[[], tuple[Any, pd.DataFrame]], str]]:
    """Every figure of a run as ``(name, draw, note)``, drawn only when ``draw()`` is called
    (so a notebook can show progress over a known count while each is drawn and saved)."""
    plans: list[tuple[str, Callable[[], tuple[Any, pd.DataFrame]], str]] = []
    for mode in dict.fromkeys(timings["mode"]):
        note = MODE_LABELS[mode]
        plans.append(
            (f"ms_per_call_vs_T_{mode}", partial(plot_ms_vs_T, timings, mode, sizes=variants_df), note)
        )
        plans.append((f"compile_ms_vs_T_{mode}", partial(plot_compile_vs_T, variants_df, mode), note))
        if "ms_vs_python" in head:
            plans.append((f"unroll_heatmap_{mode}", partial(plot_unroll_heatmap, head, mode), note))
    if seed_rows:
        note = "measured here beside the reporter's numbers"
        plans.append(("seed_ratio_vs_T", partial(plot_seed_ratio, seed_rows), note))
    if family_frame is not None and family_frame.kind.str.startswith("static").any():
        note = "static counts from compiled code (compiled on a CPU, not executed)"
        plans.insert(0, ("family_per_step", partial(plot_family_per_step, family_frame), note))
    return plans
