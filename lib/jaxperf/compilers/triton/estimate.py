"""A static GPU estimate without a GPU: dynamic SASS instructions per kernel call.

**A static estimate from SASS compiled on a CPU, never a measurement.** For
one compiled kernel, every instruction outside loops counts once, every
instruction inside a loop counts as many times as the loops around it run
(nested loops multiply; trip counts read from the loop counter in the machine
code, :func:`jaxperf.compilers.triton.sass.loops`). Per program that is the
instruction stream one warp issues; per kernel call it is multiplied by the
warps per program and the programs in the grid. Latency, memory traffic,
occupancy and dual issue are ignored: the ratio of two forms' counts says how
much more work one issues, not how much longer it runs.

:func:`~jaxperf.compilers.triton.sass.dynamic_counts` reads one kernel's SASS; :func:`table` turns sweep rows
(:func:`jaxperf.triton.sweep.sweep`) into the estimate per form, T and target;
:func:`ratios` puts the predicted fori/Python ratio beside the reporter's
measured one.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ...jax20909 import vocab
from .sass import DynamicCounts as DynamicCounts
from .sass import dynamic_counts as dynamic_counts

LABEL = "static estimate from SASS compiled on a CPU (not a measurement)"


def columns(counts: DynamicCounts, *, num_warps: int, programs: int) -> dict[str, Any]:
    """The estimate's columns for one sweep row."""
    per_call = None if counts.per_program is None else counts.per_program * num_warps * programs
    return {
        "sass_outside_loops": counts.outside_loops,
        "sass_in_loops": counts.in_loops,
        "sass_loop_trips": ",".join("?" if t is None else str(t) for t in counts.loop_trips),
        "sass_dynamic_per_program": counts.per_program,
        "sass_dynamic_per_call": per_call,
        "sass_trips_how": counts.how,
    }


ESTIMATE_COLUMNS = (
    "sass_outside_loops",
    "sass_in_loops",
    "sass_loop_trips",
    "sass_dynamic_per_program",
    "sass_dynamic_per_call",
)


def table(rows: pd.DataFrame, kernel: str = "seed") -> pd.DataFrame:
    """One row per (target, variant, T) of ``kernel``: the static counts (first compile of each point)."""
    ok = rows[(rows.status == "ok") & (rows.kernel == kernel)]
    if ok.empty:
        return pd.DataFrame(columns=["target", "variant", "T", *ESTIMATE_COLUMNS])
    first = ok.sort_values("repeat").drop_duplicates(["target", "variant", "T"])
    keys = ["target", "loop_form", "unroll", "variant", "T", "steps", "programs", "num_warps"]
    out = first[keys + list(ESTIMATE_COLUMNS)].copy()
    order = {name: i for i, name in enumerate(vocab.frame_variant_order(out))}
    return out.sort_values(
        ["target", "variant", "T"], key=lambda c: c.map(order) if c.name == "variant" else c
    ).reset_index(drop=True)


def ratios(rows: pd.DataFrame, kernel: str = "seed") -> pd.DataFrame:
    """Predicted ratio of dynamic instructions per call, each form over the Python loop, per
    target and T, beside the reporter's measured fori/Python ratio of ms per kernel call (A6000)."""
    est = table(rows, kernel)
    measured = {r["T"]: r["ratio"] for r in vocab.seed_records()}
    out = []
    for (target, T), part in est.groupby(["target", "T"], sort=True):
        by = part.set_index("variant")["sass_dynamic_per_call"]
        python = by.get("python")
        row: dict[str, Any] = {"target": target, "T": int(T), "python per call": python}
        for variant, count in by.items():
            if variant != "python":
                known = python is not None and pd.notna(python) and pd.notna(count)
                row[f"{variant} / python"] = float(count) / float(python) if known else None
        row["reporter measured fori / python"] = measured.get(int(T))
        out.append(row)
    return pd.DataFrame(out)


def closest_to_python(rows: pd.DataFrame, kernel: str = "seed") -> pd.DataFrame:
    """Per target, at the largest T the Python loop was estimated at: every other form's ratio of
    instructions per call to the Python loop's, the closest first (by ``|log ratio|``, so 0.5x
    and 2x are as far), then the forms not estimated there (ratio None, so none drops out)."""
    est = ratios(rows, kernel)
    forms = [c for c in est.columns if c.endswith(" / python") and not c.startswith("reporter")]
    out = []
    for target, part in est.groupby("target", sort=True):
        part = part[part["python per call"].notna()]
        if part.empty:
            continue
        last = part.sort_values("T").iloc[-1]
        for c in forms:
            ratio = float(last[c]) if pd.notna(last[c]) and last[c] > 0 else None
            out.append(
                {
                    "target": target,
                    "T": int(last["T"]),
                    "variant": c.removesuffix(" / python"),
                    "ratio": ratio,
                    "distance": math.inf if ratio is None else abs(math.log(ratio)),
                }
            )
    if not out:
        return pd.DataFrame(columns=["target", "T", "variant", "ratio"])
    frame = pd.DataFrame(out).sort_values(["target", "distance"], kind="stable")
    return frame.drop(columns="distance").reset_index(drop=True)


def per_step(rows: pd.DataFrame, kernel: str = "seed") -> pd.DataFrame:
    """SASS instructions each extra loop step adds (per program), per target and form: the
    slope of the dynamic count between the two largest T estimated."""
    est = table(rows, kernel).dropna(subset=["sass_dynamic_per_program"])
    out = []
    for (target, variant), part in est.groupby(["target", "variant"], sort=False):
        if len(part) < 2:
            continue
        low, high = part.sort_values("T").iloc[-2:].itertuples()
        slope = (high.sass_dynamic_per_program - low.sass_dynamic_per_program) / (high.steps - low.steps)
        out.append(
            {"target": target, "variant": variant, "T1": int(low.T), "T2": int(high.T), "per step": slope}
        )
    return pd.DataFrame(out)


def beside_measured(
    rows: pd.DataFrame, measured: pd.DataFrame, *, target: str = "sm_90", kernel: str = "seed"
) -> pd.DataFrame:
    """The static estimate for ``target`` beside times measured on a real GPU of that generation.

    ``measured`` has one row per (``variant``, ``T``) with ``ms_per_call`` (e.g. from the
    reporter's harness on a GPU). Per T and form: the predicted ratio of instructions per call
    over the Python loop's, and the measured ratio of ms per call over the Python loop's.
    """
    missing = {"variant", "T", "ms_per_call"} - set(measured.columns)
    if missing:
        raise ValueError(
            f"measured={list(measured.columns)!r} is not allowed: expected columns variant, T, ms_per_call."
        )
    est = table(rows, kernel)
    est = est[est.target == target].set_index(["variant", "T"])["sass_dynamic_per_call"]
    ms = measured.groupby(["variant", "T"])["ms_per_call"].median()
    out = []
    for variant, T in sorted(set(est.index) & set(ms.index), key=lambda p: (p[1], p[0])):
        if variant == "python" or ("python", T) not in est.index or ("python", T) not in ms.index:
            continue
        out.append(
            {
                "target": target,
                "T": int(T),
                "variant": variant,
                "predicted instructions / python": float(est[(variant, T)]) / float(est[("python", T)]),
                "measured ms / python": float(ms[(variant, T)]) / float(ms[("python", T)]),
            }
        )
    return pd.DataFrame(out)
