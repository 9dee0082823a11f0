"""Figures of notebook 09: the compile column and the static estimate vs T, per loop form.

Each returns ``(fig, data)`` and is marked ``@plots.draws``. Colours and line styles come from
:mod:`jaxperf.plots` (one colour per loop form, one dash per unroll, across the study)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from .. import figure_rules as rules
from .. import plots
from ..jax20909 import compile_facts, vocab
from . import analysis

ISSUE = "jax-ml/jax#20909"
# The compile figure's forms (with the reporter's two curves: six lines); every form is in the tables.
SHOWN = ("python", "fori u=1", "hand_unrolled u=4", "scalar_carry u=1")


def _style(variant: str) -> dict[str, Any]:
    return dict(color=plots.color(variant), ls=plots.unroll_style(variant))


def _T_axis(ax: Any, sizes: Any) -> None:
    """A log2 T axis with a plain label at each T swept, upright (rotated labels collided)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    sizes = sorted({int(t) for t in sizes})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    labels: list[str] = []
    last = 0.0
    for t in sizes:  # a label where it stands two octaves from the last one, so none collide
        keep = not labels or math.log2(t) - last >= 2
        labels.append(str(t) if keep else "")
        last = math.log2(t) if keep else last
    ax.set_xticklabels(labels)


@plots.draws
def compile_vs_T(compiled: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Compile ms (lowering + XLA/Mosaic GPU compile) vs T per loop form, the reporter's A6000
    compile column (Triton, 2024) beside it."""
    import matplotlib.pyplot as plt

    ok = compiled[compiled.status == "ok"]
    fig, ax = plt.subplots(figsize=(8.8, 4.6))
    rows = []
    for variant in [v for v in vocab.frame_variant_order(ok) if v in SHOWN]:
        part = ok[ok.variant == variant].sort_values("T")
        ax.plot(part["T"], part["compile_total_ms"], marker="o", ms=4, label=variant, **_style(variant))
        rows.append(
            part[["variant", "T", "lower_ms", "compile_ms", "compile_total_ms"]].assign(source="Mosaic GPU")
        )
    seed = pd.DataFrame(vocab.seed_records())
    for col, style, name in (
        ("python_compile_ms", (0, (2, 2)), "Python loop"),
        ("fori_compile_ms", (0, (1, 3)), "fori_loop"),
    ):
        ax.plot(
            seed["T"],
            seed[col],
            ls=style,
            color=plots.color("reporter A6000"),
            lw=1.3,
            label=f"his A6000 (Triton): {name}",
        )
        rows.append(
            pd.DataFrame(
                {
                    "variant": f"reporter {name}",
                    "T": seed["T"],
                    "compile_total_ms": seed[col],
                    "source": "reporter A6000",
                }
            )
        )
    _T_axis(ax, set(ok["T"]) | set(seed["T"]))
    ax.set_yscale("log")
    ax.set(
        xlabel="T (sequence length)", ylabel="compile ms: lowering + compile\n(one fresh kernel per point)"
    )
    missing = compiled[(compiled.variant == "python") & (compiled.status != "ok")]
    not_compiled = ", ".join(str(int(t)) for t in sorted(missing["T"]))
    gone = f"; not compiled at T={not_compiled} (RecursionError)" if not_compiled else ""
    py = ok[ok.variant == "python"].sort_values("T")
    his = compile_facts.reporter_growth(int(py["T"].iloc[0]), int(py["T"].iloc[-1])) if len(py) > 1 else None
    claim = (
        f"the Python loop's compile grows {py.compile_total_ms.iloc[-1] / py.compile_total_ms.iloc[0]:.0f}x from "
        f"T={int(py['T'].iloc[0])} to {int(py['T'].iloc[-1])}"
        + (f" (his, Triton: {his['python']:.1f}x)" if his else "")
        + gone
        if len(py) > 1
        else "compile time vs T"
    )
    rules.panel_title(ax, f"Mosaic GPU, sm_90a (compiled on a CPU, not executed): {claim}")
    plots.legend_outside(ax)
    fig.tight_layout()
    return fig, pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


@plots.draws
def estimate_vs_T(compiled: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Each form's SASS instructions per kernel call over the Python loop's (static estimate),
    the reporter's measured fori/Python ratio of ms beside it."""
    import matplotlib.pyplot as plt

    ratios = analysis.estimate_ratios(compiled)
    fig, ax = plt.subplots(figsize=(7.5, 4.4))
    cols = [c for c in ratios.columns if c.endswith(" / python") and not c.startswith("reporter")]
    for col in cols:
        variant = col.removesuffix(" / python")
        ax.plot(ratios["T"], ratios[col], marker="o", ms=4, label=variant, **_style(variant))
    if "reporter measured fori / python" in ratios:
        ax.plot(
            ratios["T"],
            ratios["reporter measured fori / python"],
            ls=(0, (1, 3)),
            marker="s",
            ms=4,
            color=plots.color("reporter A6000"),
            label=f"{ISSUE} A6000 (Triton), measured ms: fori / Python",
        )
    plots.reference_line(ax, 1.0, "the Python loop (1x)")
    if len(ratios):
        _T_axis(ax, ratios["T"])
    ax.set_yscale("log")
    plots.ratio_axis(ax)
    ax.set(xlabel="T (sequence length)", ylabel="instructions per call / the Python loop's")
    ax.set_title(
        "Instructions per call over the Python loop's\n(Mosaic GPU, sm_90a SASS: a static estimate)",
        fontsize=10,
    )
    plots.legend_outside(ax)
    fig.tight_layout()
    return fig, ratios
