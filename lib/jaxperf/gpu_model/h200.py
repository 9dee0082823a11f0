"""Predictions for the lent H200, and the join of a device run's measurements with them.

:func:`predict` compiles each point the device run measures (listed by
:func:`jaxperf.gpu.predictions.plan` from the run's own settings: the reporter's harness,
part ``harness``; the loop sweep on his kernel, part ``loops_seed``) for sm_90, with the
float32 carry the device run times and today's threefry scheme (the device's JAX
0.11.2), one row per point; :data:`NOT_PREDICTED` names the parts the model does not
predict, with the reason. :func:`jaxperf.gpu.predictions.register` writes them as a
registered prediction (:mod:`jaxperf.gpu_model.registry`); :func:`beside_measured` puts a
device run's measurements beside every registered prediction, as measured / predicted.

The Mosaic GPU port of the seed kernel (part ``loops_mosaic_gpu``,
:mod:`jaxperf.jax20909.mosaic_gpu_kernel`) has no prediction yet: predict its points here
under ``lowering="mosaic_gpu"`` and register them as a new dated file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from .. import records
from . import registry
from .devices import H200, Fact

CARRY = "float32"  # kernels.build's default: what parts a and b time
PARTITIONABLE = True  # jax_threefry_partitionable's default since JAX 0.5.0 (the device has 0.11.2)
KEYS = ["part", "variant", "T"]
NOT_PREDICTED = (
    ("loops_attention", "not predicted: the model covers the reporter's kernel (seed) only"),
    ("compile", "not predicted: compile time is not kernel execution"),
    ("dispatch", "not predicted: host dispatch is not kernel execution"),
    (
        "loops_mosaic_gpu",
        "not predicted yet: the Mosaic GPU port has no prediction; a new dated file will add it",
    ),
)


def predict(points: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per planned point: status, predicted ms, band, bound, and the model's inputs."""
    from . import compiled
    from . import predict as _predict

    frames = []
    for part in ("harness", "loops_seed"):
        mine = [p for p in points if p["part"] == part]
        seeds = [
            compiled.seed_point(p["variant"], p["T"], target=H200.target, carry_dtype=CARRY) for p in mine
        ]
        if not seeds:
            continue
        if part == "harness":
            rows = _predict.harness_rows(seeds, H200, partitionable=PARTITIONABLE)
        else:
            rows = _predict.kernel_rows(seeds, H200)
        point = rows[rows["setting"] == 0].drop(columns=["setting", "setting_label"], errors="ignore")
        summary = _predict.summary(rows).drop(columns=["status", "kernel_bound"], errors="ignore")
        merged = point.merge(summary, on=["variant", "T"]).drop(columns=["ms_per_call"])
        frames.append(merged.assign(part=part, kernel="seed", lowering="triton"))
    out = pd.concat(frames, ignore_index=True)
    first = [
        "part",
        "kernel",
        "lowering",
        "variant",
        "T",
        "status",
        "predicted_ms",
        "band_low_ms",
        "band_high_ms",
    ]
    return out[first + [c for c in out.columns if c not in first]]


def _fact(f: Fact) -> dict[str, Any]:
    return {k: getattr(f, k) for k in ("value", "unit", "low", "high", "source", "note")}


def meta(sizes: dict[str, Any]) -> dict[str, Any]:
    """What a registered H200 prediction says about its inputs (``sizes``: batch, D, dtype, N)."""
    from .. import provenance
    from .devices import settings

    return {
        "device": {"name": H200.name, "chip": H200.chip, "target": H200.target},
        "facts": {name: _fact(f) for name, f in H200.facts().items()},
        "settings": [x.label() for x in settings(H200)],
        "inputs": {
            "sass": f"compiled for {H200.target} on a CPU by the pip triton package (jaxperf.compilers.triton)",
            "packages": provenance.package_versions(("jax", "jaxlib", "triton")),
            "carry_dtype": CARRY,
            "threefry": "partitionable (one threefry2x32 per number; JAX >= 0.5 default)",
            "sizes": dict(sizes),
            "harness": "random normals (analogue) + kernel + mean (analogue), one scan step",
            "loops_seed": "one launch of the vmapped kernel on inputs already made",
        },
        "not_predicted": [{"part": p, "reason": r} for p, r in NOT_PREDICTED],
        "not_modelled": "launch and host latency, L2 reuse, dependent-issue stalls at low occupancy",
    }


def _measured(results: Path) -> pd.DataFrame:
    frames = []
    for part, name, column in (
        ("harness", "harness", "ms_per_call_median"),
        ("loops_seed", "seed_headline", "ms_per_call"),
    ):
        try:
            df, _ = records.read_records(results / "loops" / name)
        except (records.RecordsError, OSError):
            continue
        frames.append(df[["variant", "T", column]].rename(columns={column: "measured_ms"}).assign(part=part))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KEYS, "measured_ms"])


def beside_measured(results: Path, root: Path | None = None) -> pd.DataFrame:
    """A device run's ms per call (``results``: its ``results/<backend>``) beside each registered
    prediction of the same point: measured / predicted, and whether it falls inside the band."""
    from ..paths import PROJECT_ROOT

    measured = _measured(Path(results))
    pairs = registry.registered(root or PROJECT_ROOT)
    if measured.empty or not pairs:
        return pd.DataFrame(columns=[*KEYS, "measured_ms", "predicted_ms", "measured / predicted"])
    predicted = pd.concat([registry.frame_from(m, r) for m, r in pairs], ignore_index=True)
    cols = [*KEYS, "prediction", "lowering", "predicted_ms", "band_low_ms", "band_high_ms"]
    cols = [c for c in cols if c in predicted]
    out = measured.groupby(KEYS, as_index=False)["measured_ms"].median().merge(predicted[cols], on=KEYS)
    out["measured / predicted"] = out["measured_ms"] / out["predicted_ms"]
    out["inside band"] = (out["measured_ms"] >= out["band_low_ms"]) & (
        out["measured_ms"] <= out["band_high_ms"]
    )
    return out.sort_values(["part", "T", "variant"]).reset_index(drop=True)
