"""The figure of a :class:`~jaxperf.diagnosis.result.Diagnosis`: it/s per path in the
reader's loop, and where each path's time per blocked call goes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import plots
from ..figure_rules import pt

if TYPE_CHECKING:
    from .result import Diagnosis


def _color(method: str, fallback: Any) -> Any:
    try:
        return plots.color(method)
    except ValueError:
        return fallback


@plots.draws
def draw(diagnosis: Diagnosis, footer: bool = False) -> tuple[plt.Figure, pd.DataFrame]:
    """``footer``: the backend, devices and versions written on the figure (a study's
    ``study.figure`` writes its own when it saves one)."""
    table = diagnosis.table()
    per_call = diagnosis.per_call().set_index("variant").loc[table["path"]]
    timings = diagnosis.timings
    stats = (
        timings.groupby("variant")["loop_it_per_s"]
        .quantile([0.25, 0.5, 0.75])
        .unstack()
        .rename(columns={0.25: "q25", 0.5: "median", 0.75: "q75"})
        .loc[table["path"]]
    )
    fallback = plots.colors_for(list(table["path"]))
    colors = [_color(diagnosis.methods.get(name, ""), fallback[name]) for name in table["path"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 0.5 * len(table) + 2.2), sharey=True)
    y = np.arange(len(table))[::-1]
    plots.median_iqr_bars(left, y, stats, colors, height=0.6)
    left.set_yticks(y, list(table["path"]), fontsize=pt(fig))
    left.set_xlabel("it/s in your loop (median, IQR)", fontsize=pt(fig))
    host = per_call["host_ms"].to_numpy()
    wait = np.clip(per_call["wait_ms"].to_numpy(), 0, None)
    right.barh(y, host, height=0.6, color="0.35", label="host CPU")
    right.barh(y, wait, left=host, height=0.6, color="0.75", label="waiting for the device")
    right.set_xlabel("ms per blocked call (medians)", fontsize=pt(fig))
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False, fontsize=pt(fig))
    for ax in (left, right):
        ax.tick_params(labelsize=pt(fig))
    fig.suptitle(
        f"{diagnosis.kind} step, {diagnosis.leaves} array leaves in its arguments", fontsize=pt(fig) + 1
    )
    n_footer = plots.add_footer(fig, diagnosis.environment) if footer else 0
    fig.tight_layout(rect=(0, 0.04 + 0.03 * n_footer, 1, 0.95))
    data = stats.reset_index().rename(columns={"variant": "path"})
    data["host_ms"], data["wait_ms"] = host, wait
    return fig, data
