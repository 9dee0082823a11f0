"""From the gathered frames to the study's answers: correctness per method,
timing medians per process count, the collective/dispatch split.

Every frame comes out grouped per model, the models in the order the study ran them
(the MLP first): the rows of one model stay together, in process-count order."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import timing
from .methods import CHECKED_STEPS

BASELINE = "pmap_params"
KEYS = ["processes", "model", "step", "method"]


def model_major(frame: pd.DataFrame, order: list[str] | None = None) -> pd.DataFrame:
    """``frame`` with the rows of each model together, models in ``order`` (default: the order
    they first appear); the order inside a model is kept (a stable sort)."""
    if frame.empty or "model" not in frame:
        return frame
    order = order or list(dict.fromkeys(frame["model"]))
    rank = {name: i for i, name in enumerate(order)}
    ranked = frame["model"].map(lambda m: rank.get(m, len(rank)))
    return frame.iloc[ranked.argsort(kind="stable").to_numpy()].reset_index(drop=True)


def correctness(checks: pd.DataFrame) -> pd.DataFrame:
    """One row per (processes, model, step, method): ran in every process, the same result
    (bitwise digest) in every process, matches the one-device reference, and the error."""

    rows = []
    for key, group in checks.groupby(KEYS, sort=False):
        row = dict(zip(KEYS, key))
        checked = row["step"] in CHECKED_STEPS
        ran = bool(group["ran"].all())
        same = ran and group["digest"].nunique() == 1
        matches = ran and checked and bool(group["matches_one_device"].fillna(False).astype(bool).all())
        rows.append(
            {
                **row,
                "ran_everywhere": ran,
                "same_in_every_process": same if checked else None,
                "matches_one_device": matches if checked else None,
                "max_abs_diff": float(group["max_abs_diff_vs_one_device"].max()) if ran else float("nan"),
                "correct": (ran and same and matches) if checked else None,
                "error": "; ".join(sorted({e for e in group["error"].fillna("") if e})),
            }
        )
    return model_major(pd.DataFrame(rows))


def add_ms(timings: pd.DataFrame) -> pd.DataFrame:
    out = timings.copy()
    out["wall_ms_per_call"] = out["wall_s_per_call"] * 1e3
    out["cpu_ms_per_call"] = out["cpu_s_per_call"] * 1e3
    out["dispatch_ms_per_call"] = out["dispatch_s_per_call"] * 1e3
    return out


def medians(timings: pd.DataFrame) -> pd.DataFrame:
    """Median and quartiles over every (process, repeat) of each measure, per (processes, model, step, method)."""
    t = add_ms(timings)
    rows = []
    for key, group in t.groupby(KEYS, sort=False):
        row = dict(zip(KEYS, key))
        row["local_devices"] = None
        for measure in (
            "it_per_s",
            "loop_it_per_s",
            "wall_ms_per_call",
            "cpu_ms_per_call",
            "dispatch_ms_per_call",
        ):
            stats = timing.iqr_stats(group[measure])
            row[measure] = stats["median"]
            row[f"{measure}_q25"], row[f"{measure}_q75"] = stats["q25"], stats["q75"]
        row["cpu_ms_per_call_slowest_process"] = float(
            group.groupby("process_id")["cpu_ms_per_call"].median().max()
        )
        rows.append(row)
    return model_major(pd.DataFrame(rows).drop(columns="local_devices"))


def ratios(timings: pd.DataFrame, value: str = "it_per_s") -> pd.DataFrame:
    """Per-pair ``value`` ratio over :data:`BASELINE` (same process, same repeat), median and quartiles."""
    pairs = timing.pair_ratios(
        timings.rename(columns={"method": "variant"}),
        BASELINE,
        value,
        by=["processes", "process_id", "model", "step"],
    ).rename(columns={"variant": "method"})
    return model_major(timing.summarize(pairs, "ratio", KEYS), list(dict.fromkeys(timings["model"])))


def collective_split(table: pd.DataFrame) -> pd.DataFrame:
    """Per (processes, model, method) with the split steps: wall ms of the step without its
    all-reduce, of the all-reduce alone and of the full step; the collective's share."""
    wide = table.pivot_table(
        index=["processes", "model", "method"], columns="step", values="wall_ms_per_call"
    )
    needed = {"train", "train_local", "allreduce"}
    if not needed <= set(wide.columns):
        return pd.DataFrame(columns=["processes", "model", "method"])
    wide = wide.dropna(subset=sorted(needed)).reset_index()
    out = wide[["processes", "model", "method"]].copy()
    out["step_without_collective_ms"] = wide["train_local"]
    out["allreduce_alone_ms"] = wide["allreduce"]
    out["step_with_allreduce_ms"] = wide["train"]
    out["collective_share"] = np.clip((wide["train"] - wide["train_local"]) / wide["train"], 0, 1)
    return model_major(out, list(dict.fromkeys(table["model"])))
