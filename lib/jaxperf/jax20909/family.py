"""Which kernels pay for ``fori_loop``, per compiler (jax#20909 answered for the kernels people
write): the reporter's kernel, the same kernel with a carry that depends on loaded data, and the
study's streaming and attention kernels, each ``fori_loop`` against the Python loop.

Two kinds of number, never mixed in one column: *measured* ms per call (XLA:CPU, an analogue;
Pallas' interpreter), as the per-pair ratio fori/Python (median and interquartile range) at
the largest T where both ran; and *static* work per loop step read from each compiler's output
(:func:`jaxperf.loops.engine.per_step`: SASS instructions per warp, or TPU bundles), fori
against Python. Each target gets its own verdict (:func:`target_verdict`, :data:`FOLD`,
:data:`SAME`) in a sentence carrying its own per-step numbers and the cause read from its
compiled code (:func:`cause`); a kernel's verdict is the targets' common one, or "depends on the
target" (:func:`verdict`), so it never contradicts a printed number; :func:`answer` is the one
sentence of who pays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..loops.targets import TARGETS
from .vocab import KERNELS

FOLD = 2.0  # fori's work per step at least this many times the Python loop's: the Python loop folds it
SAME = 1.25  # within this (either way): the same work per step in both forms
MEASURED = {"xla": "XLA:CPU", "pallas_interpret": "Pallas interpret"}
COLUMNS = ["kernel", "source", "kind", "unit", "T", "fori", "python", "ratio", "q25", "q75", "cause"]


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
    """Per (kernel, target): fori's and the Python loop's work per loop step, their ratio, and the
    cause read from the code (:func:`cause`, where the compiler's counts split into classes)."""
    rows = []
    for (kernel, target), part in per_step.groupby(["kernel", "target"], sort=False):
        by = part.set_index("form")
        fori = (
            by.loc["fori"] if "fori" in by.index else by.loc["fori u=1"] if "fori u=1" in by.index else None
        )
        if fori is None or "python" not in by.index:
            continue
        py = by.loc["python"]
        known = pd.notna(fori.per_step) and pd.notna(py.per_step)
        ratio = float(fori.per_step) / float(py.per_step) if known and py.per_step > 0 else None
        rows.append(
            dict(
                kernel=kernel,
                source=target,
                kind="static, compiled on a CPU",
                unit=f"{TARGETS[target][2]} per loop step",
                T=f"{int(fori.T1)}-{int(fori.T2)}" if pd.notna(fori.T1) else "n/a",
                fori=float(fori.per_step) if known else None,
                python=float(py.per_step) if known else None,
                ratio=ratio,
                q25=None,
                q75=None,
                cause=cause(py.get("classes"), fori.get("classes"))
                if ratio is not None
                else f"not read (fori_loop: {fori.get('note') or 'no count'}; Python loop: {py.get('note') or 'no count'})",
            )
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def cause(python: Any, fori: Any, *, share: float = 0.8) -> str:
    """Where fori_loop's work per step differs from the Python loop's, read from the compiled
    code's classes (SASS instruction classes, TPU slots): the classes that make up ``share`` of
    the difference, largest first ("" when either form has no classes)."""
    if not isinstance(python, dict) or not isinstance(fori, dict):
        return ""
    diff = {k: float(fori.get(k) or 0) - float(python.get(k) or 0) for k in dict.fromkeys([*fori, *python])}
    total = sum(diff.values())
    if abs(total) < 0.5:
        return "the same work per step, class by class" if all(abs(d) < 0.5 for d in diff.values()) else ""
    sign = 1 if total > 0 else -1
    parts, covered = [], 0.0
    for k, d in sorted(diff.items(), key=lambda kv: -sign * kv[1]):
        if sign * d <= 0 or covered >= share * abs(total):
            break
        parts.append(f"{k} {d:+.1f}")
        covered += sign * d
    same = [k for k, d in diff.items() if abs(d) < 0.5 and (fori.get(k) or 0) > 0]
    more = "more" if sign > 0 else "fewer"
    text = (
        f"fori_loop issues {abs(total):.1f} {more} instructions or operations per step, mostly "
        + ", ".join(parts)
    )
    return text + (f" (the same {', '.join(same)} per step)" if same else "")


def table(head: pd.DataFrame, per_step: pd.DataFrame) -> pd.DataFrame:
    """The family's tidy rows: :func:`measured` then :func:`static`, kernels in study order."""
    frame = pd.concat([measured(head), static(per_step)], ignore_index=True)
    order = {k: i for i, k in enumerate(KERNELS)}
    frame = frame.assign(_k=frame.kernel.map(lambda k: order.get(k, len(order))))
    return frame.sort_values("_k", kind="stable").drop(columns="_k").reset_index(drop=True)


def _static(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows.kind.str.startswith("static") & rows.ratio.notna()]


def target_verdict(ratio: float) -> str:
    """One target's verdict from fori's work per step over the Python loop's: "pays" at
    :data:`FOLD` or more, "does not pay" within :data:`SAME` (or below it: fori does less),
    "pays partly" between."""
    return "pays" if ratio >= FOLD else "pays partly" if ratio > SAME else "does not pay"


def verdict(rows: pd.DataFrame) -> str:
    """A kernel's verdict over every target whose counts were read (GPU and TPU alike): the
    targets' common verdict (:func:`target_verdict`), or "depends on the target" when they
    differ, so the verdict never contradicts a printed number. Without any count, the measured
    per-pair ratios (lower quartile at least FOLD: pays; every quartile within SAME: does not)."""
    found = {target_verdict(float(r)) for r in _static(rows).ratio}
    if found:
        return found.pop() if len(found) == 1 else "depends on the target"
    meas = rows[rows.kind.str.startswith("measured")]
    if meas.empty:
        return "not read"
    if any(q >= FOLD for q in meas.q25.dropna()):
        return "pays"
    quartiles = [*meas.q25.dropna(), *meas.q75.dropna()]
    return "does not pay" if all(1 / SAME <= r <= SAME for r in quartiles) else "pays partly"


def per_target(rows: pd.DataFrame) -> list[str]:
    """One sentence per target read: its verdict with its own per-step numbers and the cause
    read from its code; then each target whose count was not read, with why."""
    out = []
    for r in rows[rows.kind.str.startswith("static")].itertuples():
        if r.ratio is None or pd.isna(r.ratio):
            out.append(f"{r.source}: {getattr(r, 'cause', '') or 'not read'}")
            continue
        cause_ = getattr(r, "cause", "")
        out.append(
            f"{r.source}: {target_verdict(float(r.ratio))}, fori_loop {r.fori:.1f} against the Python "
            f"loop's {r.python:.1f} {r.unit} ({r.ratio:.2f}×, T={r.T})"
            + (f"; {cause_}" if isinstance(cause_, str) and cause_ else "")
        )
    return out


def mechanism(rows: pd.DataFrame) -> str:
    """The per-target sentences of :func:`per_target`, joined (what the numbers show, per target)."""
    lines = per_target(rows)
    return "; ".join(lines) if lines else "not read (no compiler's output here)"


def verdicts(frame: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Per kernel: its verdict and mechanism."""
    return {
        k: {"verdict": verdict(g), "mechanism": mechanism(g)} for k, g in frame.groupby("kernel", sort=False)
    }


def answer(frame: pd.DataFrame) -> str:
    """One sentence from the table: per kernel, its verdict and each target's per-step ratio
    (static counts), then XLA:CPU's measured ratio (an analogue)."""
    if frame.empty:
        return "Which kernels pay: not measured (no kernel ran)."
    parts = []
    for kernel, g in frame.groupby("kernel", sort=False):
        v = verdict(g)
        st = _static(g)
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
