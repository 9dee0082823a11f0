"""Which kernels pay for ``fori_loop``, per compiler (jax#20909 answered for the kernels people
write): the reporter's kernel, the same kernel with a carry that depends on loaded data, and the
study's streaming and attention kernels, each ``fori_loop`` against the Python loop.

Two kinds of number, never mixed in one column: *measured* ms per call, the per-pair ratio
fori/Python (:func:`measured`), and *static* work per loop step read from each compiler's output,
judged per target by the ``loops`` tool's own verdict (:mod:`jaxperf.loops.verdict`).
:func:`answer` is the one sentence of who pays; :func:`wide` the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from jaxperf.loops.engine import Results
from jaxperf.loops.report_kernel import measured_rows
from jaxperf.loops.verdict import COLUMNS, counted, static, target_verdict, verdict, verdicts

from .vocab import KERNELS

#: each timed mode's source (a device's compiled kernel: "this device", as the loops tool says)
MEASURED = {"xla": "XLA:CPU", "pallas_interpret": "Pallas interpret", "pallas": "this device"}


def measured(head: pd.DataFrame, kernels: Sequence[str] = KERNELS) -> pd.DataFrame:
    """Per (kernel, mode): fori u=1 over the Python loop, ms per call, per pair (median, IQR),
    at the largest T where both were timed (rows of :func:`jaxperf_study.jax20909.analysis.headline`)."""
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
                kind="measured, interpreter" if mode == "pallas_interpret" else "measured",
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


def table(head: pd.DataFrame, per_step: pd.DataFrame, runs: Sequence[Results] = ()) -> pd.DataFrame:
    """The family's tidy rows: :func:`measured` (and each engine run timed on a device) then
    :func:`static`, kernels in study order."""
    timed = [measured_rows(r) for r in runs if r.kernel != "seed"]
    frame = pd.concat([measured(head), *timed, static(per_step)], ignore_index=True)
    order = {k: i for i, k in enumerate(KERNELS)}
    frame = frame.assign(_k=frame.kernel.map(lambda k: order.get(k, len(order))))
    return frame.sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def answer(frame: pd.DataFrame) -> str:
    """One sentence from the table: per kernel, its verdict and each target's per-step ratio
    (static counts), then XLA:CPU's measured ratio (an analogue)."""
    if frame.empty:
        return "Which kernels pay: not measured (no kernel ran)."
    parts = []
    for kernel, g in frame.groupby("kernel", sort=False):
        v = verdict(g)
        st = counted(g)
        if len(st) and v != "depends on the target":
            cells = ", ".join(f"{r.source} {r.ratio:.2f}×" for r in st.itertuples())
            parts.append(f"`{kernel}` {v} on every target read ({cells})")
        elif len(st):
            by: dict[str, list[str]] = {}
            for r in st.itertuples():
                by.setdefault(target_verdict(float(r.ratio)), []).append(f"{r.source} {r.ratio:.2f}×")
            parts.append(
                f"`{kernel}` depends on the target: "
                + ", ".join(f"{k} on {', '.join(c)}" for k, c in by.items())
            )
        else:
            parts.append(f"`{kernel}` {v}")
    out = "Per loop step, fori_loop ÷ Python loop (static counts, compiled on a CPU): " + "; ".join(parts)
    rows = frame[frame.source == "XLA:CPU"]
    if len(rows):
        out += "; XLA:CPU (measured ms, an analogue): " + ", ".join(
            f"{r.kernel} {r.ratio:.2f}×" for r in rows.itertuples() if r.ratio is not None
        )
    return out + "."


def wide(frame: pd.DataFrame) -> pd.DataFrame:
    """The family as one row per kernel and one column per source, each cell "fori / Python =
    ratio (T)" in that source's unit (named in the column), then verdict and mechanism."""
    found = verdicts(frame)
    out: dict[str, dict[str, Any]] = {k: {"kernel": k} for k in dict.fromkeys(frame.kernel)}
    for row in frame.itertuples():
        column = f"{row.source} ({row.unit}, {row.kind})"
        spread = f" [{row.q25:.2f}, {row.q75:.2f}]" if row.q25 is not None and pd.notna(row.q25) else ""
        if row.ratio is None or not np.isfinite(row.ratio):
            out[row.kernel][column] = "— (" + (str(getattr(row, "cause", "")) or "not read") + ")"
            continue
        out[row.kernel][column] = f"{row.fori:.3g} / {row.python:.3g} = {row.ratio:.2f}×{spread} (T={row.T})"
    for kernel, v in found.items():
        out[kernel] |= v
    return pd.DataFrame(list(out.values())).fillna("n/a")
