"""What the studies published about jax#20909, read back for the one figure that sets them
side by side: the reporter's fori_loop / Python loop ratio beside each backend measured or
estimated here, each labelled as what it is.

It reads only the studies' committed outputs (summary.json and tidy CSVs, checked against
their sidecars), never their code: a source that was not run is simply absent, and a GPU
that was not lent is "not measured".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import records
from ..jax20909 import vocab

#: (source, what kind of number it is), in the order the figure draws them (six at most)
KINDS = {
    "reporter A6000": "measured by the reporter (RTX A6000, Pallas Triton, ms per call)",
    "H200": "measured here on an NVIDIA H200 (ms per call)",
    "XLA:CPU": "measured here, an analogue: plain jax.jit on XLA:CPU (ms per call)",
    "XLA:CPU in his harness": "measured here, an analogue: plain jax.jit on XLA:CPU inside the reporter's own "
    "harness (ms per call)",
    "Triton sm_86": "static estimate, SASS compiled for sm_86 on a CPU (instructions per call)",
    "Mosaic GPU": "static estimate, SASS compiled for sm_90a by Mosaic GPU on a CPU (instructions per call)",
    "Mosaic TPU": "static estimate, Mosaic TPU v5e bundles compiled on a CPU (cycles per call)",
    "Pallas interpret": "measured here, the Pallas interpreter's timings (ms per call)",
}
MAX_LINES = 6
#: the sources whose number is a measured ratio of ms per call: the only ones the headline figure draws
MEASURED = ("reporter A6000", "H200", "XLA:CPU", "XLA:CPU in his harness", "Pallas interpret")
#: each source's unit, for a table that names one per column
UNITS = {s: k[k.rindex("(") + 1 : -1].split(", ")[-1] for s, k in KINDS.items()}


@dataclass(frozen=True)
class Read:
    """One file the answers read, and the commit that made it (None: not found)."""

    path: str
    commit: str | None
    dirty: bool | None


def _summary(root: Path, backend: str, study: str, read: list[Read]) -> dict[str, Any] | None:
    path = root / "results" / backend / study / "summary.json"
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        read.append(Read(rel, None, None))
        return None
    data = json.loads(path.read_text())
    git = data.get("provenance", {}).get("git", {})
    read.append(Read(rel, git.get("commit"), git.get("dirty")))
    return data


def _rows(source: str, pairs: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """One row per (T, ratio[, q25, q75]); the spread is NaN where the source has none."""
    return [
        {"source": source, "kind": KINDS[source], "T": int(p[0]), "ratio": float(p[1]),
         "q25": _num(p, 2), "q75": _num(p, 3)}
        for p in pairs
        if p[1] == p[1]
    ]  # fmt: skip


def _num(values: tuple[Any, ...], i: int) -> float:
    return float(values[i]) if len(values) > i and values[i] is not None else float("nan")


def _pair(row: dict[str, Any]) -> tuple[Any, ...]:
    """(T, ratio, q25, q75) of a measured row: its per-pair median and quartiles where the study
    took them (one value per quantity: the same the loop study's answer quotes), else its ratio."""
    pair = row.get("ratio_pair") or {}
    if "median" in pair:
        return row["T"], pair["median"], pair["q25"], pair["q75"]
    return row["T"], row["ratio"]


def seed_ratios(root: Path, backend: str = "cpu") -> tuple[pd.DataFrame, list[Read]]:
    """fori_loop(unroll=1) / Python loop on the reporter's kernel, per source and T, and the
    files read. Sources not published under ``root`` are left out."""
    read: list[Read] = []
    rows = _rows("reporter A6000", [(r["T"], r["ratio"]) for r in vocab.seed_records()])
    loops = _summary(root, backend, "loops", read)
    if loops:
        for mode, source in (
            ("xla", "XLA:CPU"),
            ("xla_harness", "XLA:CPU in his harness"),
            ("pallas_interpret", "Pallas interpret"),
        ):
            rows += _rows(source, [_pair(r) for r in loops["seed_reproduction"] if r["mode"] == mode])
    triton = _summary(root, backend, "triton_compile", read)
    if triton and triton.get("estimate"):
        pairs = [
            (r["T"], r.get("fori u=1 / python"))
            for r in triton["estimate"]["ratios"]
            if r["target"] == "sm_86" and r.get("fori u=1 / python") is not None
        ]
        rows += _rows("Triton sm_86", pairs)
    mosaic = _summary(root, backend, "mosaic_gpu", read)
    if mosaic and (mosaic.get("estimate") or {}).get("ratios"):
        pairs = [(r["T"], r.get("fori u=1 / python")) for r in mosaic["estimate"]["ratios"]]
        rows += _rows("Mosaic GPU", [(T, r) for T, r in pairs if r is not None])
    tpu = _summary(root, backend, "tpu_compile", read)
    if tpu:
        points, _ = records.read_records(root / "results" / backend / "tpu_compile" / "compile_points")
        seed = points[
            (points["kernel"] == "seed") & (points["generation"] == "v5e") & (points["status"] == "ok")
        ]
        at = seed.pivot_table(index="T", columns="variant", values="us_seed_batch")
        if {"python", "fori u=1"} <= set(at.columns):
            rows += _rows("Mosaic TPU", list((at["fori u=1"] / at["python"]).dropna().items()))
    gpu = _summary(root, "gpu", "loops", read)
    if gpu:
        rows += _rows("H200", [_pair(r) for r in gpu.get("seed_reproduction", []) if r["mode"] == "pallas"])
    frame = pd.DataFrame(rows, columns=["source", "kind", "T", "ratio", "q25", "q75"])
    return frame, read


def shown(frame: pd.DataFrame) -> list[str]:
    """The sources the headline figure draws: measured ms ratios only (:data:`MEASURED`), in
    :data:`KINDS` order, at most :data:`MAX_LINES`."""
    present = set(frame["source"]) & set(MEASURED)
    return [s for s in KINDS if s in present][:MAX_LINES]


#: static counts per call, per compiler: (source, unit)
STATIC = {
    "Triton sm_86": "SASS instructions per call",
    "Mosaic GPU": "SASS instructions per call",
    "Mosaic TPU": "bundles (cycles) per call",
}


def static_counts(root: Path, backend: str = "cpu") -> pd.DataFrame:
    """The static estimates in their own units: per compiler, T and loop (the Python loop and
    fori_loop), the work one call issues (instructions, or TPU bundles at the reporter's batch)."""
    rows: list[dict[str, Any]] = []
    read: list[Read] = []
    triton = _summary(root, backend, "triton_compile", read)
    for r in (triton or {}).get("estimate", {}).get("per_call", []):
        if (
            r["target"] == "sm_86"
            and r["variant"] in ("python", "fori u=1")
            and r.get("sass_dynamic_per_call")
        ):
            rows.append(
                dict(source="Triton sm_86", T=r["T"], loop=r["variant"], work=r["sass_dynamic_per_call"])
            )
    mosaic = _summary(root, backend, "mosaic_gpu", read)
    for r in ((mosaic or {}).get("estimate") or {}).get("ratios", []):
        python, ratio = r.get("python per call"), r.get("fori u=1 / python")
        if python:
            rows.append(dict(source="Mosaic GPU", T=r["T"], loop="python", work=python))
            if ratio:
                rows.append(dict(source="Mosaic GPU", T=r["T"], loop="fori u=1", work=python * ratio))
    if _summary(root, backend, "tpu_compile", read):
        points, _ = records.read_records(root / "results" / backend / "tpu_compile" / "compile_points")
        seed = points[
            (points["kernel"] == "seed") & (points["generation"] == "v5e") & (points["status"] == "ok")
        ]
        for r in seed[seed.variant.isin(["python", "fori u=1"])].itertuples():
            if r.cycles_seed_batch == r.cycles_seed_batch:
                rows.append(dict(source="Mosaic TPU", T=r.T, loop=r.variant, work=r.cycles_seed_batch))
    frame = pd.DataFrame(rows, columns=["source", "T", "loop", "work"])
    return frame.assign(unit=frame.source.map(STATIC), kind=frame.source.map(KINDS))
