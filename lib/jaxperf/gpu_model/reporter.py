"""The model checked against the reporter's own table (jax#20909: RTX A6000, jax 0.4.25).

His setting: the seed kernel with his fp16 carry, compiled for sm_86 (today's
Triton and ptxas: his JAX compiled with its own), in his harness with the
threefry scheme of his JAX (``jax_threefry_partitionable`` was off by default
before JAX 0.5.0). :func:`table` puts the predicted ms per kernel call of his
Python loop and his ``fori_loop`` beside his, the predicted fori/Python ratio
and extra time (fori minus Python) beside his, each prediction with its band.
:func:`goals` judges the issue's two goals at the point and across the band:
the extra time within 1.5x of his at every T >= 16384, every absolute
prediction at T >= 2048 within 2x.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..jax20909 import vocab
from . import compiled, devices, predict

VARIANTS = ("python", "fori u=1")
CARRY = "input"  # his fp16 carry
PARTITIONABLE = False  # his JAX 0.4.25's default
EXTRA_FROM_T, EXTRA_FACTOR = 16384, 1.5
ABSOLUTE_FROM_T, ABSOLUTE_FACTOR = 2048, 2.0


def measured() -> pd.DataFrame:
    """His table: ms per kernel call per T for the Python loop and ``fori_loop``."""
    rows = [{"T": r[0], "python": r[2], "fori u=1": r[4]} for r in vocab.SEED_ROWS]
    return pd.DataFrame(rows)


def rows(Ts: Sequence[int] | None = None, dev: devices.Device = devices.RTX_A6000) -> pd.DataFrame:
    """Compile his two loops at each of his T for ``dev``'s target and predict every setting."""
    Ts = [r[0] for r in vocab.SEED_ROWS] if Ts is None else list(Ts)
    points = [compiled.seed_point(v, T, target=dev.target, carry_dtype=CARRY) for T in Ts for v in VARIANTS]
    return predict.harness_rows(points, dev, partitionable=PARTITIONABLE)


def _per_setting(pred: pd.DataFrame) -> pd.DataFrame:
    """One row per (T, setting): predicted python, fori, their ratio and the extra time."""
    wide = pred.pivot_table(index=["T", "setting"], columns="variant", values="ms_per_call").reset_index()
    wide["ratio"] = wide["fori u=1"] / wide["python"]
    wide["extra_ms"] = wide["fori u=1"] - wide["python"]
    return wide


def table(pred: pd.DataFrame) -> pd.DataFrame:
    """Per T of his table: his ms beside the predicted point [band low, band high]."""
    his = measured().set_index("T")
    wide = _per_setting(pred)
    out = []
    for T, part in wide.groupby("T"):
        point = part[part["setting"] == 0].iloc[0]
        row: dict[str, Any] = {"T": int(T)}
        for name, mine, theirs in (
            ("Python loop ms", "python", his.loc[T, "python"]),
            ("fori_loop ms", "fori u=1", his.loc[T, "fori u=1"]),
            ("fori/Python", "ratio", his.loc[T, "fori u=1"] / his.loc[T, "python"]),
            ("extra ms (fori - Python)", "extra_ms", his.loc[T, "fori u=1"] - his.loc[T, "python"]),
        ):
            row[f"{name}, his"] = float(theirs)
            row[f"{name}, predicted"] = float(point[mine])
            row[f"{name}, band"] = f"{part[mine].min():.3g} .. {part[mine].max():.3g}"
        out.append(row)
    return pd.DataFrame(out)


def _within(predicted: float, theirs: float, factor: float) -> bool:
    return theirs > 0 and predicted > 0 and 1 / factor <= predicted / theirs <= factor


def goals(pred: pd.DataFrame) -> dict[str, Any]:
    """The issue's two goals, per T, at the point and at every setting of the band."""
    his = measured().set_index("T")
    wide = _per_setting(pred)
    labels = pred.drop_duplicates("setting").set_index("setting")["setting_label"].to_dict()
    checks: dict[str, dict[int, dict[int, bool]]] = {"extra": {}, "absolute": {}}
    for _, r in wide.iterrows():
        T, s = int(r["T"]), int(r["setting"])
        if T >= EXTRA_FROM_T:
            theirs = his.loc[T, "fori u=1"] - his.loc[T, "python"]
            checks["extra"].setdefault(s, {})[T] = _within(r["extra_ms"], theirs, EXTRA_FACTOR)
        if T >= ABSOLUTE_FROM_T:
            both = all(_within(r[v], his.loc[T, v], ABSOLUTE_FACTOR) for v in VARIANTS)
            checks["absolute"].setdefault(s, {})[T] = both
    out: dict[str, Any] = {}
    for goal, by_setting in checks.items():
        met_at = [s for s, per_T in by_setting.items() if per_T and all(per_T.values())]
        point = by_setting.get(0, {})
        if point and all(point.values()):
            verdict = "met at the published values"
        elif met_at:
            verdict = "met only at one end of the range: " + "; ".join(labels.get(s, str(s)) for s in met_at)
        else:
            verdict = "missed across the whole range"
        out[goal] = {
            "verdict": verdict,
            "met_at_point_per_T": {str(T): bool(v) for T, v in point.items()},
            "settings_meeting_it": [labels.get(s, str(s)) for s in met_at],
            "settings_tried": len(by_setting),
        }
    out["extra"]["goal"] = (
        f"predicted fori - Python within {EXTRA_FACTOR}x of his at every T >= {EXTRA_FROM_T}"
    )
    out["absolute"]["goal"] = (
        f"predicted ms of both loops within {ABSOLUTE_FACTOR}x of his at every T >= {ABSOLUTE_FROM_T}"
    )
    return out


def shared_part(pred: pd.DataFrame) -> pd.DataFrame:
    """Where the Python loop's time goes at the point (random numbers, kernel, mean), beside his,
    and what per element the model lacks (ps per element: his ms over B x T x D numbers)."""
    point = pred[(pred["setting"] == 0) & (pred["variant"] == "python")]
    his = measured().set_index("T")
    out = []
    for _, r in point.iterrows():
        elements = vocab.SEED_SIZES["batch"] * r["T"] * vocab.SEED_SIZES["D"]
        theirs = float(his.loc[r["T"], "python"])
        out.append(
            {
                "T": int(r["T"]),
                "random numbers ms": r["rng_ms"],
                "kernel ms": r["kernel_ms"],
                "kernel bound by": r["kernel_bound"],
                "mean ms": r["mean_ms"],
                "predicted ms": r["ms_per_call"],
                "his ms": theirs,
                "his ps per number": theirs * 1e9 / elements,
                "missing ps per number": (theirs - r["ms_per_call"]) * 1e9 / elements,
            }
        )
    return pd.DataFrame(out)
