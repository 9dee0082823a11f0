"""Predicted milliseconds for the seed kernel's variants: alone, and inside the reporter's harness.

:func:`kernel_rows` is one launch of the vmapped kernel (what the loop sweep
times: ``ms_per_call`` of one call on inputs already made); :func:`harness_rows`
one step of the reporter's scan (his "ms per kernel call": the random numbers,
the kernel, the mean, one after the other). Both give one row per (variant, T,
setting), setting 0 being the published point (:func:`jaxperf.gpu_model.devices.point`) and
the others the corners of the assumed facts' ranges; :func:`summary` folds
them into the point and the band (min, max) per (variant, T). Every number
here is **predicted**, never measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from ..jax20909 import vocab
from .compiled import BATCH, D_FEATURES, DTYPE, SeedPoint
from .devices import Device, settings
from .harness import harness_work
from .model import KernelWork, kernel_time, occupancy

LABEL = "predicted by the time model from SASS compiled on a CPU (not a measurement)"


def _base(p: SeedPoint, dev: Device) -> dict[str, Any]:
    row: dict[str, Any] = {
        "variant": p.variant,
        "T": p.T,
        "device": dev.name,
        "target": p.target,
        "carry_dtype": p.carry_dtype,
        "status": p.status,
    }
    work = p.work
    if work is not None:
        counts = work.counts
        row.update(
            programs=work.programs,
            warps_per_program=work.warps_per_program,
            warp_instructions_per_warp=counts.total,
            loop_trips=",".join("?" if t is None else str(t) for t in counts.loop_trips),
            registers=work.registers,
            **{f"warp_{k}": v for k, v in (counts.per_class or {}).items()},
            **{f"occupancy_{k}": v for k, v in occupancy(work, dev).items()},
        )
        if not counts.resolved:
            row["status"] = f"not predicted: a loop's trip count is not read from the SASS ({counts.how})"
    return row


def _time(work: KernelWork, dev: Device, setting: Any, prefix: str) -> dict[str, Any]:
    t = kernel_time(work, dev, setting)
    return {f"{prefix}_ms": t.ms, f"{prefix}_issue_ms": t.issue_ms, f"{prefix}_memory_ms": t.memory_ms} | {
        f"{prefix}_bound": t.bound
    }


def kernel_rows(points: Iterable[SeedPoint], dev: Device) -> pd.DataFrame:
    """One launch of each point's kernel, per setting: ``ms_per_call`` = the kernel's time."""
    rows = []
    for p in points:
        base = _base(p, dev)
        if base["status"] != "ok" or p.work is None:
            rows.append(base | {"setting": 0, "ms_per_call": None})
            continue
        for i, s in enumerate(settings(dev)):
            part = _time(p.work, dev, s, "kernel")
            rows.append(
                base | {"setting": i, "setting_label": s.label(), **part, "ms_per_call": part["kernel_ms"]}
            )
    return pd.DataFrame(rows)


def harness_rows(
    points: Iterable[SeedPoint],
    dev: Device,
    *,
    partitionable: bool,
    batch: int = BATCH,
    D: int = D_FEATURES,
) -> pd.DataFrame:
    """One step of the reporter's scan per point and setting: ``ms_per_call`` = random numbers +
    kernel + mean (his "ms per kernel call"); the neighbours from :func:`harness_work`."""
    rows = []
    for p in points:
        base = _base(p, dev)
        if base["status"] != "ok" or p.work is None:
            rows.append(base | {"setting": 0, "ms_per_call": None})
            continue
        out_dtype = DTYPE if p.carry_dtype == "input" else p.carry_dtype
        neighbours = harness_work(
            batch * p.T * D, target=p.target, out_dtype=out_dtype, partitionable=partitionable
        )
        for i, s in enumerate(settings(dev)):
            parts = _time(neighbours["rng"], dev, s, "rng")
            parts |= _time(p.work, dev, s, "kernel")
            parts |= _time(neighbours["mean"], dev, s, "mean")
            total = parts["rng_ms"] + parts["kernel_ms"] + parts["mean_ms"]
            rows.append(base | {"setting": i, "setting_label": s.label(), **parts, "ms_per_call": total})
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, T): the point prediction, the band over every setting, what bounds it."""
    out = []
    for (variant, T), part in rows.groupby(["variant", "T"], sort=False):
        point = part[part["setting"] == 0].iloc[0]
        known = part["ms_per_call"].dropna()
        row = {
            "variant": variant,
            "T": int(T),
            "status": point["status"],
            "predicted_ms": point["ms_per_call"],
            "band_low_ms": float(known.min()) if len(known) else None,
            "band_high_ms": float(known.max()) if len(known) else None,
        }
        if "kernel_bound" in part:
            row["kernel_bound"] = point.get("kernel_bound")
        out.append(row)
    frame = pd.DataFrame(out)
    if frame.empty:
        return frame
    return frame.sort_values(["T", "variant"], key=vocab.variant_sort_key, kind="stable").reset_index(
        drop=True
    )
