"""The time model's figure: his milliseconds beside the predicted ones, with the band."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import plots
from . import reporter

NAMES = {"python": "Python loop", "fori u=1": "fori_loop"}


def _data(pred: pd.DataFrame) -> pd.DataFrame:
    his = reporter.measured().melt(id_vars="T", var_name="variant", value_name="his_ms")
    wide = pred.pivot_table(index=["T", "setting"], columns="variant", values="ms_per_call").reset_index()
    wide["extra"] = wide["fori u=1"] - wide["python"]
    long = wide.melt(id_vars=["T", "setting"], var_name="variant", value_name="ms")
    stats = long.groupby(["variant", "T"])["ms"].agg(low="min", high="max").reset_index()
    point = long[long["setting"] == 0][["variant", "T", "ms"]].rename(columns={"ms": "predicted_ms"})
    his_extra = reporter.measured().assign(his_ms=lambda d: d["fori u=1"] - d["python"], variant="extra")
    his = pd.concat([his, his_extra[["T", "variant", "his_ms"]]], ignore_index=True)
    return point.merge(stats, on=["variant", "T"]).merge(his, on=["variant", "T"], how="left")


@plots.draws
def reporter_vs_T(pred: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """Left: ms per kernel call vs T, his (markers) and predicted (line, band over the assumed
    facts) for both loops. Right: the loop's own cost, fori_loop minus the Python loop (from the
    T where his exceeds 0.1 ms; a zero does not show on the log axis)."""
    import matplotlib.pyplot as plt

    data = _data(pred)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2))
    for ax, variants in ((left, ("python", "fori u=1")), (right, ("extra",))):
        for variant in variants:
            part = data[data["variant"] == variant].sort_values("T")
            if variant == "extra":
                part = part[part["his_ms"] > 0.1]
            color = plots.color("fori" if variant == "extra" else variant)
            name = NAMES.get(variant, "fori_loop - Python loop")
            shown = part["predicted_ms"].where(part["predicted_ms"] > 0)
            ax.plot(part["T"], shown, "-", color=color, label=f"{name}, predicted")
            ax.fill_between(part["T"], part["low"], part["high"], color=color, alpha=0.15, linewidth=0)
            ax.plot(part["T"], part["his_ms"], "o", ms=6, mfc="none", color=color, label=f"{name}, his A6000")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        extra = data[(data["variant"] == "extra") & (data["his_ms"] > 0.1)]
        ticks = sorted(data["T"].unique()) if ax is left else sorted(extra["T"])
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("T (sequence length)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8, frameon=False)
    left.set_ylabel("ms per kernel call (his harness)")
    right.set_ylabel("fori_loop - Python loop (ms per call)")
    left.set_title("His harness, predicted vs his", fontsize=10)
    right.set_title("The loop's own cost (goal: within 1.5x from T=16384)", fontsize=10)
    fig.tight_layout()
    return fig, data
