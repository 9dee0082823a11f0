"""Summaries of the compile sweep: medians per point, growth with T, the verdict, stage and code tables.

All take the tidy frame of :func:`jaxperf.triton.sweep.sweep`. Compile times
are medians over a point's compiles; code metrics are deterministic (the
first compile's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..compilers.triton.compile import STAGES
from ..jax20909 import compile_facts, vocab
from .sweep import STATUS_NO_LOWER, STATUS_OK

STAGE_COLUMNS = ("export_ms", *(f"{s}_ms" for s in STAGES))
STAGE_LABELS = {
    "export_ms": "JAX export (trace + Pallas->Triton)",
    "ttir_ms": "ttir passes",
    "ttgir_ms": "ttgir",
    "llir_ms": "llir",
    "ptx_ms": "PTX (LLVM)",
    "cubin_ms": "cubin (ptxas)",
}
KEYS = ["kernel", "loop_form", "unroll", "variant", "T", "steps"]
CODE_COLUMNS = [
    "ttir_lines",
    "ptx_instructions",
    "sass_instructions",
    "registers",
    "spill_stores_bytes",
    "spill_loads_bytes",
    "local_memory_instructions",
    "backward_branches",
    "loop_present",
]
TIMED_COLUMNS = ["compile_ms", "triton_ms", *STAGE_COLUMNS, "triton_lowering_ms"]
# The fix that closed jax#20909's gap on XLA:CPU: one scalar carried through fori_loop(unroll=1).
FIX = vocab.FIX
GROWS_AS_HIS = 0.5  # the Python loop's compile grows at least half as much as his, over his range
FORI_FLAT = 1.5  # fori_loop's compile grows at most this much over that range


def seed_compile_ms() -> pd.DataFrame:
    """The reporter's compile column (ms): T, python, fori."""
    rows = vocab.seed_records()
    return pd.DataFrame(
        {
            "T": [r["T"] for r in rows],
            "python": [r["python_compile_ms"] for r in rows],
            "fori": [r["fori_compile_ms"] for r in rows],
        }
    )


def sort_key(col: pd.Series) -> pd.Series:
    """Kernels and loop forms in the vocabulary's order (for ``DataFrame.sort_values(key=...)``)."""
    if col.name == "loop_form":
        return col.map(vocab.LOOP_FORMS.index)
    if col.name == "kernel":
        return col.map(lambda k: vocab.KERNELS.index(k) if k in vocab.KERNELS else len(vocab.KERNELS))
    return col


def point_medians(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (kernel, variant, T): status, median of the timed columns, the code
    metrics, and how many compiles the median is of."""
    ok = df[df.status == STATUS_OK]
    if ok.empty:
        med = pd.DataFrame(
            columns=KEYS + TIMED_COLUMNS + ["compile_ms_q25", "compile_ms_q75"] + CODE_COLUMNS + ["compiles"]
        )
    else:
        grouped = ok.groupby(KEYS, sort=False)
        med = grouped[TIMED_COLUMNS].median().reset_index()
        spread = grouped["compile_ms"].quantile([0.25, 0.75]).unstack()
        spread.columns = ["compile_ms_q25", "compile_ms_q75"]
        med = med.merge(spread.reset_index(), on=KEYS)
        med = med.merge(grouped[CODE_COLUMNS].first().reset_index(), on=KEYS)
        med = med.merge(grouped.size().rename("compiles").reset_index(), on=KEYS)
    status = (
        df.groupby(KEYS, sort=False).agg(status=("status", "first"), error=("error", "first")).reset_index()
    )
    out = status.merge(med, on=KEYS, how="left")
    return out.sort_values(["kernel", "loop_form", "unroll", "T"], key=sort_key).reset_index(drop=True)


def _ok_medians(df: pd.DataFrame) -> pd.DataFrame:
    med = point_medians(df)
    return med[med.status == STATUS_OK]


def stage_table(df: pd.DataFrame, T: int | None = None, *, include_short: bool = True) -> pd.DataFrame:
    """Median ms per stage for every variant that compiled at ``T`` (default: each kernel's
    largest compiled T, and with ``include_short`` a variant that stopped short of it,
    like the Python loop, at its own largest T), plus the largest stage."""
    med = _ok_medians(df)
    if med.empty:
        return pd.DataFrame()
    if T is not None:
        part = med[med["T"] == T]
    else:
        largest = med[med["T"] == med.groupby("kernel")["T"].transform("max")]
        part = largest
        if include_short:
            own = med.loc[med.groupby(["kernel", "variant"], sort=False)["T"].idxmax()]
            seen = largest.set_index(["kernel", "variant"]).index
            part = pd.concat([largest, own[~own.set_index(["kernel", "variant"]).index.isin(seen)]])
            part = part.sort_values(["kernel", "loop_form", "unroll"], key=sort_key)
    table = part[["kernel", "variant", "T", *STAGE_COLUMNS, "compile_ms"]].copy()
    table["largest stage"] = part[list(STAGE_COLUMNS)].idxmax(axis=1).map(STAGE_LABELS).values
    return table.reset_index(drop=True)


def stages_by_T(df: pd.DataFrame, variant: str = "python") -> pd.DataFrame:
    """Median ms per stage at every T one variant compiled at (default: the Python loop)."""
    med = _ok_medians(df)
    med = med[med.variant == variant]
    cols = ["kernel", "variant", "T", *STAGE_COLUMNS, "compile_ms", "ttir_lines", "sass_instructions"]
    return med[cols].reset_index(drop=True)


def code_table(df: pd.DataFrame, T: int | None = None) -> pd.DataFrame:
    """Instruction counts, registers, spills and loop survival at ``T`` (default: each variant's largest T)."""
    med = _ok_medians(df)
    if med.empty:
        return pd.DataFrame()
    med = (
        med.loc[med.groupby(["kernel", "variant"], sort=False)["T"].idxmax()]
        if T is None
        else med[med["T"] == T]
    )
    cols = ["kernel", "variant", "T", "ttir_lines", "ptx_instructions", "sass_instructions", "registers"]
    return med[cols + ["spill_stores_bytes", "spill_loads_bytes", "loop_present"]].reset_index(drop=True)


def _exponent(T: pd.Series, ms: pd.Series) -> float:
    if len(T) < 2:
        return float("nan")
    return float(np.polyfit(np.log(T.astype(float)), np.log(ms.astype(float)), 1)[0])


def growth(df: pd.DataFrame) -> pd.DataFrame:
    """Per variant: compile ms at a reference T and at its largest T, their ratio, and b of
    compile_ms ~ T**b (least squares on log-log from the reference on).

    The reference is the smallest T whose trip count reaches the unroll: below it a
    k-unrolled loop is only its remainder copies, a different program."""
    rows = []
    for (kernel, variant), part in _ok_medians(df).groupby(["kernel", "variant"], sort=False):
        part = part.sort_values("T")
        full = part[(part.loop_form == "python") | (part.steps >= part.unroll)]
        full = full if not full.empty else part
        first, last = full.iloc[0], part.iloc[-1]
        after = part.compile_ms[part["T"] >= first["T"]]
        rows.append(
            {
                "kernel": kernel,
                "variant": variant,
                "T_ref": int(first["T"]),
                "T_max": int(last["T"]),
                "compile_ms_at_T_ref": first.compile_ms,
                "compile_ms_at_T_max": last.compile_ms,
                "ratio": last.compile_ms / first.compile_ms,
                "exponent": _exponent(full["T"], full.compile_ms),
                "points": len(full),
                "max_over_min": after.max() / after.min(),
            }
        )
    return pd.DataFrame(rows)


def verdict(df: pd.DataFrame, kernel: str = "seed", planned: list[int] | None = None) -> dict[str, Any]:
    """Does the reporter's compile column reproduce, over the same T range as his? The Python
    loop's compile growth from the first to the last T where both it and fori_loop(unroll=1)
    compiled, beside his over that range (:func:`jaxperf.jax20909.compile_facts.matched`):
    reproduced when ours grows at least half as much as his (``GROWS_AS_HIS``) while fori's
    grows at most ``FORI_FLAT``; None ("not reached") when fewer than two of his T compiled or
    the range is not in his table. ``planned``: the T the sweep meant to reach (those it did
    not are listed as not reached, never judged)."""
    med = _ok_medians(df)
    med = med[med.kernel == kernel]
    if med.empty:
        return {"kernel": kernel, "reproduced": None, "reason": "nothing compiled", "fix": None}
    at = med.pivot_table(index="T", columns="variant", values="compile_ms")
    Ts = sorted(int(t) for t in at.index if int(t) in compile_facts.REPORTER)
    py = [_value(at, "python", T) for T in Ts]
    fori = [_value(at, "fori u=1", T) for T in Ts]
    planned_his = [T for T in (planned or Ts) if T in compile_facts.REPORTER]
    fact = compile_facts.matched(Ts, py, fori, planned=planned_his, where=f"Triton, {kernel} kernel")
    reproduced = None
    if fact["status"] == "compared":
        reproduced = bool(
            fact["python_growth"] >= GROWS_AS_HIS * fact["reporter_python_growth"]
            and fact["fori_growth"] <= FORI_FLAT
        )
    g = growth(df)
    loops = g[
        (g.kernel == kernel)
        & ((g.variant == "fori u=1") | g.variant.str.startswith(("hand_unrolled", "hoisted")))
    ]
    return {
        "fix": _fix_growth(df, g[g.kernel == kernel], kernel),
        "kernel": kernel,
        "reproduced": reproduced,
        "matched": fact,
        "sentence": compile_facts.sentence(fact),
        "loops_max_ratio": float(loops.ratio.max()) if not loops.empty else None,
        "loops_exponents": {
            r.variant: None if np.isnan(r.exponent) else float(r.exponent) for r in loops.itertuples()
        },
        "thresholds": {"python_growth_at_least_his_times": GROWS_AS_HIS, "fori_growth_at_most": FORI_FLAT},
    }


def _value(at: pd.DataFrame, variant: str, T: int) -> float | None:
    if variant not in at.columns:
        return None
    value = at.loc[T, variant]
    return None if pd.isna(value) else float(value)


def _fix_growth(df: pd.DataFrame, g: pd.DataFrame, kernel: str) -> dict[str, Any] | None:
    """The scalar carry's compile at its smallest and largest T, and its code at its two largest T
    (None when not compiled): not one of the verdict's "looping forms", since ptxas may unroll its loop."""
    row = g[g.variant == FIX]
    if row.empty:
        return None
    r = row.iloc[0]
    med = _ok_medians(df)
    med = med[(med.kernel == kernel) & (med.variant == FIX)].sort_values("T")
    low, high = med.iloc[0], med.iloc[-1]
    before = med.iloc[-2] if len(med) > 1 else high
    return {
        "variant": FIX,
        "T_range": [int(low["T"]), int(high["T"])],
        "ratio": float(r.ratio),
        "compile_ms": [float(low.compile_ms), float(high.compile_ms)],
        "exponent": None if np.isnan(r.exponent) else float(r.exponent),
        "code_T": [int(before["T"]), int(high["T"])],
        "ptx_instructions": [int(before.ptx_instructions), int(high.ptx_instructions)],
        "sass_instructions": [int(before.sass_instructions), int(high.sass_instructions)],
        "loop_in_sass_at_T_max": bool(high.loop_present),
    }


def does_not_lower(df: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, variant): the T it did not lower at and the lowering's error."""
    bad = df[df.status == STATUS_NO_LOWER]
    if bad.empty:
        return pd.DataFrame(columns=["kernel", "variant", "T", "error"])
    return (
        bad.groupby(["kernel", "variant"], sort=False)
        .agg(T=("T", lambda s: ", ".join(str(t) for t in sorted(s))), error=("error", "first"))
        .reset_index()
    )
