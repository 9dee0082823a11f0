"""What the loop study's engine found for one kernel, in words and tables (the CLI's output, and
notebook 02's section on the reader's kernel): the verdict first, then whether each form gives
fori_loop's result, lowers, how long it compiles, what each loop step costs per compiler and,
on a GPU or TPU, its measured ms."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown as md
from .. import timing
from . import verdict
from .engine import SCAN, Results, absent_note, lowering_table
from .targets import TARGETS


def measured_rows(results: Results) -> pd.DataFrame:
    """fori over the Python loop, ms per call per pair, at the largest T timed (device only)."""
    t = results.timings.dropna(subset=["ms_per_call"])
    if t.empty or not {"python", "fori"} <= set(t.form) and not {"python", "fori u=1"} <= set(t.form):
        return pd.DataFrame(columns=verdict.COLUMNS)
    fori = "fori" if "fori" in set(t.form) else "fori u=1"
    T = int(t["T"].max())
    at = t[t["T"] == T].rename(columns={"form": "variant"})
    ratios = timing.pair_ratios(at, "python", "ms_per_call")
    r = ratios[ratios.variant == fori]["ratio"]
    med = at.groupby("variant")["ms_per_call"].median()
    row: dict[str, Any] = dict(
        kernel=results.kernel, source="this device", kind="measured", unit="ms per call", T=str(T)
    )
    row |= dict(fori=float(med[fori]), python=float(med["python"]), ratio=float(r.median()))
    row |= dict(q25=float(r.quantile(0.25)), q75=float(r.quantile(0.75)))
    return pd.DataFrame([row], columns=verdict.COLUMNS)


def frame(results: Results) -> pd.DataFrame:
    """The kernel's rows in the verdict's columns (static per step, and measured where timed)."""
    return pd.concat([measured_rows(results), verdict.static(results.per_step())], ignore_index=True)


def verdict_line(results: Results) -> str:
    """The overall verdict, then one bullet per target with its own per-step numbers and cause,
    then the advice per target (:func:`advice`)."""
    rows = frame(results)
    if rows.empty:
        return f"`{results.kernel}`: no compiler here read two T of both the Python loop and fori_loop, so its loop work is not known."
    v = verdict.verdicts(rows)[results.kernel]["verdict"]
    split = (
        " (the targets disagree; each is judged on its own numbers):" if v == "depends on the target" else ":"
    )
    head = f"`{results.kernel}` **{v}** for `fori_loop`{split}"
    head = f"`{results.kernel}`: its loop work was not read here." if v == "not read" else head
    bullets = [f"- {line}" for line in verdict.per_target(rows)]
    tips = advice(results)
    return "\n".join([head, *bullets, *(["", "**Which form to write**, per target:", *tips] if tips else [])])


def advice(results: Results) -> list[str]:
    """Per target where fori_loop's work per step was read: the form with the least work per step
    among those compiled (per-step numbers from the same table), and whether it beats fori_loop."""
    steps = results.per_step()
    out = []
    for target, part in steps[steps.per_step.notna()].groupby("target", sort=False):
        by = part.set_index("form")["per_step"]
        fori = by.get("fori", by.get("fori u=1"))
        best = by.idxmin()
        cells = ", ".join(f"`{f}` {x:.1f}" for f, x in by.sort_values().items())
        if fori is None or not fori > 0:  # fori_loop's work per step not read: no form to advise over it
            continue
        if by[best] * verdict.SAME < fori:
            out.append(
                f"- {target}: write `{best}`: {fori / by[best]:.2f}× less work per step than `fori_loop` ({cells})"
            )
        else:
            out.append(f"- {target}: `fori_loop` is as good as any form tried (per step: {cells})")
    return out


def _pivot(points: pd.DataFrame, value: str, digits: str) -> pd.DataFrame:
    ok = points[points.status == "ok"]
    if ok.empty or value not in ok:
        return pd.DataFrame()
    table = ok.pivot_table(index=["form", "T"], columns="target", values=value, sort=False)
    cells = table.map(lambda x: digits.format(x) if pd.notna(x) else "n/a")
    return cells.reset_index().rename_axis(columns=None)


def per_step_table(results: Results) -> pd.DataFrame:
    """Per form and target: work per loop step, its ratio to the Python loop's per step (what the
    verdict uses), and the T pair it comes from; "—" where a count is missing (with why)."""
    steps = results.per_step()
    if steps.empty:
        return steps
    python = steps[steps.form == "python"].set_index("target")["per_step"]
    cells = []
    for r in steps.itertuples():
        if r.per_step is None or pd.isna(r.per_step):
            cells.append(f"— ({r.note})")
            continue
        py = python.get(r.target)
        ratio = f", {r.per_step / py:.2f}× Python's" if py is not None and pd.notna(py) and py > 0 else ""
        cells.append(f"{r.per_step:.1f}{ratio} (T={int(r.T1)}-{int(r.T2)})")
    steps = steps.assign(column=[f"{t} ({u} per step)" for t, u in zip(steps.target, steps.unit)], cell=cells)
    return steps.pivot(index="form", columns="column", values="cell").reset_index().rename_axis(columns=None)


def sections(results: Results) -> list[str]:
    """The tables, each with a line saying what it is."""
    checks, timings = results.checks, results.timings
    against = "your reference" if "your reference" in set(checks.get("against", [])) else "`fori_loop`"
    Ts = ", ".join(str(t) for t in sorted(set(checks["T"]))) if len(checks) else ""
    by = timings.groupby(["form", "T"], sort=False)
    stats = by.apply(_measured, include_groups=False).rename("ms").reset_index() if len(timings) else timings
    tables = [
        (
            f"**Same result as {against}** (Pallas interpreter, T={Ts}; largest difference over the largest value):",
            checks.drop(columns="kernel") if len(checks) else checks,
        ),
        (
            "**Lowers** (exported for each compiler's platform, no device needed):",
            lowering_table(results.points),
        ),
        (
            "**Compile ms** (one compile per point, on this CPU; Triton: export + ttir to cubin; Mosaic GPU: lowering + compile, dumps on):",
            _pivot(results.points, "compile_ms", "{:.0f}"),
        ),
        (
            "**Work per loop step** (static counts from each compiler's output, compiled on a CPU, not executed; the difference between the largest two T with the same loop structure, over the extra steps; the ratio is the verdict's):",
            per_step_table(results),
        ),
        (
            f"**Measured ms per call** (this device, median [IQR] of {SCAN} calls in a jitted scan; else why):",
            stats,
        ),
    ]
    out = [line for title, table in tables if len(table) for line in (title, "", md.table(table), "")]
    at = next((i + 4 for i, line in enumerate(out) if line.startswith("**Lowers")), None)
    if at is not None:  # out[None:None] would be the whole list
        out[at:at] = absent_note(results.points)
    if results.not_present:
        out += [
            "**Not compiled here:** " + "; ".join(f"{t}: {r}" for t, r in results.not_present.items()),
            "",
        ]
    return out


def _measured(rows: pd.DataFrame) -> str:
    """One cell of the measured table: the ms per call, or what stopped the form (its status, error)."""
    ms, first = rows["ms_per_call"].dropna(), rows.iloc[0]
    return (
        md.fmt_stat(timing.iqr_stats(ms), 3)
        if len(ms)
        else f"{first['status']}: {first['error']}".rstrip(": ")
    )


def markdown(results: Results) -> str:
    """The whole report for one kernel: the verdict, then :func:`sections`."""
    units = "; ".join(f"{t}: {u}" for t, (_, _, u) in TARGETS.items())
    head = f"## `{results.kernel}`: fori_loop against the Python loop"
    return "\n".join([head, "", verdict_line(results), "", *sections(results), f"Units: {units}."])


def summary(results: Results) -> dict[str, Any]:
    """summary.json's record of one kernel: the verdict and the numbers behind it."""
    rows = frame(results)
    v = verdict.verdicts(rows).get(results.kernel, {"verdict": None, "mechanism": None})
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
