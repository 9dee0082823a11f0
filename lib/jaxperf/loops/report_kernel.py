"""What the loop study's engine found for one kernel, in words and tables (the CLI's output, and
notebook 02's section on the reader's kernel): the verdict first, then whether each form gives
fori_loop's result, lowers, how long it compiles, what each loop step costs per compiler and,
on a GPU or TPU, its measured ms."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown as md
from .. import timing
from . import family
from .engine import Results, lowering_table
from .targets import TARGETS


def measured_rows(results: Results) -> pd.DataFrame:
    """fori over the Python loop, ms per call per pair, at the largest T timed (device only)."""
    t = results.timings
    if t.empty or not {"python", "fori"} <= set(t.form) and not {"python", "fori u=1"} <= set(t.form):
        return pd.DataFrame(columns=family.COLUMNS)
    fori = "fori" if "fori" in set(t.form) else "fori u=1"
    T = int(t["T"].max())
    at = t[t["T"] == T].rename(columns={"form": "variant"})
    ratios = timing.pair_ratios(at, "python", "ms_per_call")
    r = ratios[ratios.variant == fori]["ratio"]
    med = at.groupby("variant")["ms_per_call"].median()
    row: dict[str, Any] = dict(
        kernel=results.kernel, source="this device", kind="measured", unit="ms per call", T=str(T)
    )
    row |= dict(
        fori=float(med[fori]),
        python=float(med["python"]),
        ratio=float(r.median()),
        q25=float(r.quantile(0.25)),
        q75=float(r.quantile(0.75)),
    )
    return pd.DataFrame([row], columns=family.COLUMNS)


def frame(results: Results) -> pd.DataFrame:
    """The kernel's rows in the family's columns (static per step, and measured where timed)."""
    return pd.concat([measured_rows(results), family.static(results.per_step())], ignore_index=True)


def verdict_line(results: Results) -> str:
    rows = frame(results)
    if rows.empty:
        return f"`{results.kernel}`: no compiler here read two T of both the Python loop and fori_loop, so its loop work is not known."
    v = family.verdicts(rows)[results.kernel]
    if v["verdict"] == "not read":
        return f"`{results.kernel}`: its loop work was not read here ({v['mechanism']})."
    return f"`{results.kernel}` **{v['verdict']}** for `fori_loop`: {v['mechanism']}."


def _pivot(points: pd.DataFrame, value: str, digits: str) -> pd.DataFrame:
    ok = points[points.status == "ok"]
    if ok.empty or value not in ok:
        return pd.DataFrame()
    table = ok.pivot_table(index=["form", "T"], columns="target", values=value, sort=False)
    return (
        table.map(lambda x: digits.format(x) if pd.notna(x) else "n/a")
        .reset_index()
        .rename_axis(columns=None)
    )


def per_step_table(results: Results) -> pd.DataFrame:
    steps = results.per_step()
    if steps.empty:
        return steps
    steps = steps.assign(column=[f"{t} ({u} per step)" for t, u in zip(steps.target, steps.unit)])
    cell = [
        f"{p:.1f} ({r:.2f}× Python's at T={T})" if r is not None and pd.notna(r) else f"{p:.1f}"
        for p, r, T in zip(steps.per_step, steps.vs_python_at_T2, steps.T2)
    ]
    return (
        steps.assign(cell=cell)
        .pivot(index="form", columns="column", values="cell")
        .reset_index()
        .rename_axis(columns=None)
    )


def sections(results: Results) -> list[str]:
    """The tables, each with a line saying what it is."""
    out: list[str] = []
    checks = results.checks
    if len(checks):
        Ts = ", ".join(str(t) for t in sorted(set(checks["T"])))
        out += [
            f"**Same result as `fori_loop`** (Pallas interpreter, T={Ts}; largest difference over the largest value):",
            "",
            md.table(checks.drop(columns="kernel")),
            "",
        ]
    lowering = lowering_table(results.points)
    if len(lowering):
        out += [
            "**Lowers** (exported for each compiler's platform, no device needed):",
            "",
            md.table(lowering),
            "",
        ]
    compile_ms = _pivot(results.points, "compile_ms", "{:.0f}")
    if len(compile_ms):
        out += [
            "**Compile ms** (one compile per point, on this CPU; Triton: export + ttir to cubin; Mosaic GPU: lowering + compile, dumps on):",
            "",
            md.table(compile_ms),
            "",
        ]
    steps = per_step_table(results)
    if len(steps):
        out += [
            "**Work per loop step** (static counts from each compiler's output, compiled on a CPU, not executed; the difference between the two largest T over the extra steps):",
            "",
            md.table(steps),
            "",
        ]
    if len(results.timings):
        stats = (
            results.timings.groupby(["form", "T"], sort=False)["ms_per_call"]
            .apply(lambda s: md.fmt_stat(timing.iqr_stats(s), 3))
            .reset_index()
        )
        out += ["**Measured ms per call** (this device, median [IQR], interleaved):", "", md.table(stats), ""]
    if results.not_present:
        out += [
            "**Not compiled here:** " + "; ".join(f"{t}: {r}" for t, r in results.not_present.items()),
            "",
        ]
    return out


def markdown(results: Results) -> str:
    """The whole report for one kernel: the verdict, then :func:`sections`."""
    units = "; ".join(f"{t}: {u}" for t, (_, _, u) in TARGETS.items())
    return "\n".join(
        [
            f"## `{results.kernel}`: fori_loop against the Python loop",
            "",
            verdict_line(results),
            "",
            *sections(results),
            f"Units: {units}.",
        ]
    )


def summary(results: Results) -> dict[str, Any]:
    """summary.json's record of one kernel: the verdict and the numbers behind it."""
    rows = frame(results)
    v = family.verdicts(rows).get(results.kernel, {"verdict": None, "mechanism": None})
    return {
        "kernel": results.kernel,
        **v,
        "checks": results.checks.to_dict(orient="records"),
        "per_step": results.per_step().replace({float("nan"): None}).to_dict(orient="records"),
        "points": results.points.drop(columns=[c for c in ("error",) if c not in results.points])
        .replace({float("nan"): None})
        .to_dict(orient="records"),
        "not_present": results.not_present,
    }
