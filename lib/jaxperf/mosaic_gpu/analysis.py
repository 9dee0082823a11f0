"""Notebook 09's tables from its three sweeps: what lowers, the compile column, the estimate."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..jax20909 import vocab

ESTIMATE_LABEL = "static estimate from SASS compiled for sm_90a on a CPU (not a measurement)"
COMPILE_LABEL = "compiled for sm_90a on a CPU (deviceless XLA + Mosaic GPU), not executed"


def lowering_verdicts(lowered: pd.DataFrame) -> pd.DataFrame:
    """Per (loop form, unroll): at which T it lowers, and each distinct refusal."""
    rows = []
    for (form, unroll), g in lowered.groupby(["loop_form", "unroll"], sort=False):
        ok = sorted(int(t) for t in g.loc[g.status == "ok", "T"])
        bad = g[g.status != "ok"]
        why = "; ".join(
            f"T={','.join(str(int(t)) for t in sorted(b['T']))}: {status}: {err}"
            for (status, err), b in bad.groupby(["status", "error"], sort=False)
        )
        rows.append(
            {
                "variant": vocab.variant_name(form, int(unroll)),
                "lowers at T": ", ".join(map(str, ok)) or "none",
                "does not lower": why or "",
            }
        )
    return pd.DataFrame(rows, columns=["variant", "lowers at T", "does not lower"])


def lowering_errors(lowered: pd.DataFrame) -> list[dict[str, Any]]:
    """Each distinct refusal once, with the first (variant, T) that met it."""
    bad = lowered[lowered.status == "failed"].drop_duplicates(["error_type", "error"])
    return [
        dict(
            variant=r.variant,
            T=int(r.T),
            error_type=r.error_type,
            error=r.error,
            error_site=getattr(r, "error_site", "") or "",
        )
        for r in bad.itertuples()
    ]


def growth(compiled: pd.DataFrame) -> pd.DataFrame:
    """Per variant: compile ms (lower + compile) at the smallest and largest T it compiled at."""
    ok = compiled[compiled.status == "ok"]
    rows = []
    for variant in vocab.frame_variant_order(ok):
        part = ok[ok.variant == variant].sort_values("T")
        first, last = part.iloc[0], part.iloc[-1]
        rows.append(
            {
                "variant": variant,
                "T_min": int(first["T"]),
                "compile_ms_at_T_min": float(first["compile_total_ms"]),
                "T_max": int(last["T"]),
                "compile_ms_at_T_max": float(last["compile_total_ms"]),
                "max_over_min": float(part["compile_total_ms"].max() / part["compile_total_ms"].min()),
                "lower_share_at_T_max": float(last["lower_ms"] / last["compile_total_ms"]),
            }
        )
    return pd.DataFrame(rows)


def estimate_ratios(compiled: pd.DataFrame) -> pd.DataFrame:
    """Per T: the Python loop's instructions per call, each form's over it, and the reporter's
    measured fori/Python ratio of ms per call (RTX A6000, Triton)."""
    if "sass_dynamic_per_call" not in compiled:
        return pd.DataFrame(columns=["T", "python per call"])
    ok = compiled[(compiled.status == "ok") & compiled.sass_dynamic_per_call.notna()]
    measured = {r["T"]: r["ratio"] for r in vocab.seed_records()}
    rows = []
    for T, part in ok.groupby("T", sort=True):
        by = part.set_index("variant")["sass_dynamic_per_call"]
        python = by.get("python")
        row: dict[str, Any] = {"T": int(T), "python per call": python}
        for variant in vocab.frame_variant_order(part):
            if variant != "python":
                row[f"{variant} / python"] = float(by[variant]) / float(python) if python else None
        row["reporter measured fori / python"] = measured.get(int(T))
        rows.append(row)
    return pd.DataFrame(rows)


def closest_to_python(ratios: pd.DataFrame) -> list[dict[str, Any]]:
    """At the largest T with a Python-loop estimate: every form by |log ratio|, closest first."""
    known = ratios[ratios["python per call"].notna()] if len(ratios) else ratios
    if known.empty:
        return []
    last = known.sort_values("T").iloc[-1]
    forms = [c for c in known.columns if c.endswith(" / python") and not c.startswith("reporter")]
    out = [
        dict(
            T=int(last["T"]),
            variant=c.removesuffix(" / python"),
            ratio=float(last[c]) if pd.notna(last[c]) else None,
        )
        for c in forms
    ]
    return sorted(out, key=lambda r: math.inf if not r["ratio"] else abs(math.log(r["ratio"])))


def seed_format_table(compiled: pd.DataFrame) -> pd.DataFrame:
    """The reporter's layout: per T, compile / exec for the Python loop, fori_loop and the scalar
    carry, compiled for sm_90a here ("not executed"), beside his A6000 numbers."""
    reporter = {r[0]: r for r in vocab.SEED_ROWS}
    shown = [("Python loop", "python"), ("fori_loop", "fori u=1"), ("scalar carry", vocab.FIX)]
    rows = []
    for T in sorted({int(t) for t in compiled["T"]}):
        row: dict[str, Any] = {"T": T}
        for label, variant in shown:
            hit = compiled[(compiled["T"] == T) & (compiled.variant == variant)]
            ok = hit[hit.status == "ok"]
            row[f"{label} compile / exec (sm_90a here)"] = (
                f"{ok.iloc[0]['compile_total_ms']:.0f} ms / not executed"
                if len(ok)
                else (hit.iloc[0]["status"] if len(hit) else "n/a")
            )
        if T in reporter:
            r = reporter[T]
            row["Python loop (reporter, A6000)"] = vocab.seed_cell(r[1], r[2])
            row["fori_loop (reporter, A6000)"] = vocab.seed_cell(r[3], r[4])
        rows.append(row)
    return pd.DataFrame(rows)


def interpret_answer(checked: pd.DataFrame) -> dict[str, Any]:
    """How many interpreted variants matched the float64 reference, at which T, worst error."""
    ok = checked[checked.status == "ok"] if len(checked) else checked
    return {
        "checked": int(len(ok)),
        "points": int(len(checked)),
        "Ts": sorted(int(t) for t in ok["T"].unique()) if len(ok) else [],
        "variants": vocab.frame_variant_order(ok) if len(ok) else [],
        "worst_error_vs_tolerance": float(ok["error_vs_tolerance"].max()) if len(ok) else None,
        "not_checked": checked[checked.status != "ok"][["variant", "T", "status", "error"]].to_dict(
            orient="records"
        )
        if len(checked)
        else [],
    }
