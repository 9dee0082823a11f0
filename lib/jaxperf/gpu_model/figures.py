"""The time model's figure: his milliseconds beside the predicted ones, with the band."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import figure_rules, plots
from . import reporter

NAMES = {"python": "Python loop", "fori u=1": "fori_loop", "extra": "fori_loop - Python loop"}
EXTRA_SHOWN_FROM_MS = 0.1  # his extra time below this is noise on a log axis (his T=256 and 2048)


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


def _panel(ax: Any, part: pd.DataFrame, variant: str) -> None:
    """One loop (or the loop's own cost) in its palette colour: predicted as a line over the
    band of every corner of the assumed facts, his as hollow markers, on log-log axes."""
    color = plots.color("fori" if variant == "extra" else variant)
    shown = part["predicted_ms"].where(part["predicted_ms"] > 0)  # a zero has no place on a log axis
    ax.fill_between(part["T"], part["low"], part["high"], color=color, alpha=0.15, linewidth=0)
    ax.plot(part["T"], shown, "-", color=color, label="predicted (band: every corner of the assumed facts)")
    ax.plot(part["T"], part["his_ms"], "o", ms=6, mfc="none", color=color, label="his A6000 (his table)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    figure_rules.plain_log_ticks(ax, "y")


@plots.draws
def reporter_vs_T(pred: pd.DataFrame) -> tuple[Any, pd.DataFrame]:
    """His ms per kernel call (markers) against the predicted ms (line, band over the assumed
    facts) vs T, stacked over one T axis: a panel per loop on one y scale (the two predictions
    coincide where the loop costs nothing, so one panel would hide a loop under the other),
    then the loop's own cost, fori_loop minus the Python loop, from the T where his exceeds
    :data:`EXTRA_SHOWN_FROM_MS` ms."""
    import matplotlib.pyplot as plt

    data = _data(pred)
    fig = plt.figure(figsize=(figure_rules.ROW_WIDTH_IN, 8.6))
    spec = fig.add_gridspec(4, 1, height_ratios=[2.2, 2.2, 2.2, 0.4])
    python = fig.add_subplot(spec[0])
    fori = fig.add_subplot(spec[1], sharex=python, sharey=python)
    extra = fig.add_subplot(spec[2], sharex=python)
    key = fig.add_subplot(spec[3])
    key.set_axis_off()
    for ax, variant in ((python, "python"), (fori, "fori u=1"), (extra, "extra")):
        part = data[data["variant"] == variant].sort_values("T")
        if variant == "extra":
            part = part[part["his_ms"] > EXTRA_SHOWN_FROM_MS]
        _panel(ax, part, variant)
    ticks = sorted(int(t) for t in data["T"].unique())
    extra.set_xticks(ticks, [str(t) for t in ticks])
    extra.minorticks_off()
    extra.set_xlabel("T (sequence length)")
    for ax in (python, fori):
        ax.tick_params(labelbottom=False)
        ax.set_ylabel("ms per kernel call\n(his harness)")
    extra.set_ylabel("ms per call")
    figure_rules.panel_title(python, "Python loop")
    figure_rules.panel_title(fori, "fori_loop")
    goal = f"goal: within {reporter.EXTRA_FACTOR:g}x of his from T={reporter.EXTRA_FROM_T}"
    figure_rules.panel_title(extra, f"The loop's own cost: {NAMES['extra']} ({goal})")
    handles = [
        plt.Line2D([], [], color="0.3", label="predicted (band: every corner of the assumed facts)"),
        plt.Line2D([], [], color="0.3", ls="", marker="o", mfc="none", ms=6, label="his A6000 (his table)"),
    ]
    key.legend(handles=handles, loc="center", ncol=2, frameon=False, fontsize=figure_rules.pt(fig))
    figure_rules.title(fig, "His harness on his RTX A6000: the time model's ms per call against his table")
    return fig, data
