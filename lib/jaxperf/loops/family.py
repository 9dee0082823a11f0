"""Which kernels pay for ``fori_loop``, per compiler (jax#20909 answered for the kernels people
write): the reporter's kernel, the same kernel with a carry that depends on loaded data, and the
study's streaming and attention kernels, each ``fori_loop`` against the Python loop.

Two kinds of number, never mixed in one column: *measured* ms per call (XLA:CPU, an analogue;
Pallas' interpreter), as the per-pair ratio fori/Python (median and interquartile range) at
the largest T where both ran; and *static* work per loop step read from each compiler's output
(:func:`jaxperf.loops.engine.per_step`: SASS instructions per warp, or TPU bundles), fori
against Python. :func:`mechanism` names what the numbers show, by the rules of
:data:`FOLD` and :data:`SAME`; :func:`answer` is the one sentence of who pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..jax20909.vocab import KERNELS
from .targets import TARGETS

FOLD = 2.0  # fori's work per step at least this many times the Python loop's: the Python loop folds it
SAME = 1.25  # within this (either way): the same work per step in both forms
GPU_SOURCES = ("triton", "mosaic_gpu")  # the reporter's platform decides the verdict
MEASURED = {"xla": "XLA:CPU", "pallas_interpret": "Pallas interpret"}
COLUMNS = ["kernel", "source", "kind", "unit", "T", "fori", "python", "ratio", "q25", "q75"]


def measured(head: pd.DataFrame, kernels: Sequence[str] = KERNELS) -> pd.DataFrame:
    """Per (kernel, mode): fori u=1 over the Python loop, ms per call, per pair (median, IQR),
    at the largest T where both were timed (rows of :func:`jaxperf.loops.analysis.headline`)."""
    rows = []
    for (mode, kernel), part in head[head["mode"].isin(list(MEASURED))].groupby(
        ["mode", "kernel"], sort=False
    ):
        if kernel not in kernels or "ms_vs_python" not in part:
            continue
        both = part[part.variant.isin(["python", "fori u=1"])].pivot_table(
            index="T", columns="variant", values="ms_per_call"
        )
        both = both.dropna() if {"python", "fori u=1"} <= set(both.columns) else both.iloc[0:0]
        if both.empty:
            continue
        T = int(both.index.max())
        fori = part[(part.variant == "fori u=1") & (part["T"] == T)].iloc[0]
        rows.append(
            dict(
                kernel=kernel,
                source=MEASURED[str(mode)],
                kind="measured" if mode == "xla" else "measured, interpreter",
                unit="ms per call",
                T=str(T),
                fori=float(both.loc[T, "fori u=1"]),
                python=float(both.loc[T, "python"]),
                ratio=float(fori.ms_vs_python),
                q25=float(fori.ms_vs_python_q25),
                q75=float(fori.ms_vs_python_q75),
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def static(per_step: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, target): fori's and the Python loop's work per loop step and their ratio."""
    rows = []
    for (kernel, target), part in per_step.groupby(["kernel", "target"], sort=False):
        by = part.set_index("form")
        fori = (
            by.loc["fori"] if "fori" in by.index else by.loc["fori u=1"] if "fori u=1" in by.index else None
        )
        if fori is None or "python" not in by.index:
            continue
        py = by.loc["python"]
        ratio = float(fori.per_step) / float(py.per_step) if py.per_step and py.per_step > 0 else None
        rows.append(
            dict(
                kernel=kernel,
                source=target,
                kind="static, compiled on a CPU",
                unit=f"{TARGETS[target][2]} per loop step",
                T=f"{int(fori.T1)}-{int(fori.T2)}",
                fori=float(fori.per_step),
                python=float(py.per_step),
                ratio=ratio,
                q25=None,
                q75=None,
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def table(head: pd.DataFrame, per_step: pd.DataFrame) -> pd.DataFrame:
    """The family's tidy rows: :func:`measured` then :func:`static`, kernels in study order."""
    frame = pd.concat([measured(head), static(per_step)], ignore_index=True)
    order = {k: i for i, k in enumerate(KERNELS)}
    frame = frame.assign(_k=frame.kernel.map(lambda k: order.get(k, len(order))))
    return frame.sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def _gpu(rows: pd.DataFrame) -> pd.DataFrame:
    """The static rows of the GPU compilers (Triton, Mosaic GPU): the reporter's platform."""
    return rows[
        rows.kind.str.startswith("static") & rows.source.str.startswith(GPU_SOURCES) & rows.ratio.notna()
    ]


def _static(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows.kind.str.startswith("static") & rows.ratio.notna()]


def verdict(rows: pd.DataFrame) -> str:
    """A kernel's verdict, read on the GPU compilers (the reporter's platform): "pays" when
    fori_loop does at least :data:`FOLD` times the Python loop's work per step on one of them,
    "does not pay" when every one lies within :data:`SAME` of it, else "pays partly". Without a
    GPU compiler's count, the other compilers' counts decide (Mosaic TPU), and without any, the
    measured per-pair ratios (lower quartile at least FOLD: pays; every quartile within SAME:
    does not)."""
    gpu = [float(r) for r in _gpu(rows).ratio] or [float(r) for r in _static(rows).ratio]
    if gpu:
        return (
            "pays"
            if max(gpu) >= FOLD
            else "does not pay"
            if all(1 / SAME <= r <= SAME for r in gpu)
            else "pays partly"
        )
    meas = rows[rows.kind.str.startswith("measured")]
    if meas.empty:
        return "not read"
    if any(q >= FOLD for q in meas.q25.dropna()):
        return "pays"
    quartiles = [*meas.q25.dropna(), *meas.q75.dropna()]
    return "does not pay" if all(1 / SAME <= r <= SAME for r in quartiles) else "pays partly"


def mechanism(rows: pd.DataFrame) -> str:
    """What the GPU compilers' counts show for one kernel, from its largest fori/Python per-step
    ratio among them: a fold the unrolled loop gets, real work per step in both, or both."""
    gpu = _gpu(rows)
    gpu = gpu if len(gpu) else _static(rows)
    if gpu.empty:
        return "not read (no compiler's output here)"
    worst = gpu.loc[gpu.ratio.idxmax()]
    where = f"{worst.source}: {worst.fori:.1f} vs {worst.python:.1f} {worst.unit}"
    if worst.ratio >= FOLD:
        return f"a fold the unrolled loop gets ({where})"
    if worst.ratio <= SAME:
        return f"real per-step work in both ({where})"
    return f"real per-step work in both, part of it folded by the unrolled loop ({where})"


def verdicts(frame: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per kernel: its verdict and mechanism."""
    return {
        k: {"verdict": verdict(g), "mechanism": mechanism(g)} for k, g in frame.groupby("kernel", sort=False)
    }


def _range(ratios: Sequence[float]) -> str:
    ratios = [float(r) for r in ratios if r is not None and np.isfinite(r)]
    if not ratios:
        return "n/a"
    return (
        f"{min(ratios):.2f}-{max(ratios):.2f}×" if max(ratios) - min(ratios) >= 0.005 else f"{ratios[0]:.2f}×"
    )


def answer(frame: pd.DataFrame) -> str:
    """One sentence from the table: which kernels pay on the GPU compilers (work per loop step),
    then the same kernels on Mosaic TPU and, measured, on XLA:CPU (an analogue)."""
    if frame.empty:
        return "Which kernels pay: not measured (no kernel ran)."
    found = verdicts(frame)
    groups: dict[str, list[str]] = {}
    for kernel, v in found.items():
        groups.setdefault(v["verdict"], []).append(kernel)
    words = {
        "pays": "pay{s}: the unrolled Python loop folds each step to scalar work",
        "pays partly": "pay{s} partly",
        "does not pay": "do{es} not pay: the same work per step in both forms",
        "not read": "{was} not read",
    }
    parts = []
    for key in ("pays", "pays partly", "does not pay", "not read"):
        kernels = groups.get(key, [])
        if not kernels:
            continue
        ratios = _gpu(frame[frame.kernel.isin(kernels)]).ratio
        one = len(kernels) == 1
        text = words[key].format(s="s" if one else "", es="es" if one else "", was="was" if one else "were")
        parts.append(f"{_names(kernels)} {text}" + (f" ({_range(ratios)})" if len(ratios) else ""))
    out = (
        "On the GPU compilers (Triton, Mosaic GPU; work per loop step, fori_loop ÷ Python loop, static counts) "
        + "; ".join(parts)
    )
    for source, label in (
        ("mosaic_tpu", "Mosaic TPU (static)"),
        ("XLA:CPU", "XLA:CPU (measured ms, an analogue)"),
    ):
        rows = frame[frame.source.str.startswith(source)]
        if len(rows):
            out += f"; {label}: " + ", ".join(
                f"{r.kernel} {r.ratio:.2f}×" for r in rows.itertuples() if r.ratio is not None
            )
    return out + "."


def _names(kernels: Sequence[str]) -> str:
    names = [f"`{k}`" for k in kernels]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def wide(frame: pd.DataFrame) -> pd.DataFrame:
    """The family as one row per kernel and one column per source, each cell "fori / Python =
    ratio (T)" in that source's unit (named in the column), then verdict and mechanism."""
    found = verdicts(frame)
    out: dict[str, dict[str, Any]] = {k: {"kernel": k} for k in dict.fromkeys(frame.kernel)}
    for row in frame.itertuples():
        column = f"{row.source} ({row.unit}, {row.kind})"
        spread = f" [{row.q25:.2f}, {row.q75:.2f}]" if row.q25 is not None and pd.notna(row.q25) else ""
        ratio = "n/a" if row.ratio is None or not np.isfinite(row.ratio) else f"{row.ratio:.2f}×{spread}"
        out[row.kernel][column] = f"{row.fori:.3g} / {row.python:.3g} = {ratio} (T={row.T})"
    for kernel, v in found.items():
        out[kernel] |= v
    return pd.DataFrame(list(out.values())).fillna("n/a")
