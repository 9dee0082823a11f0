"""What the engine found for one kernel, in words and tables (the CLI's output, notebook 02's reader
section): the verdict first (from a device's ms where one timed the kernel, else static counts), then
whether each form gives fori_loop's result, lowers, compiles, its work per loop step and its ms."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown as md
from .. import timing
from . import verdict
from .engine import Results, absent_note, lowering_table
from .targets import TARGETS


def measured_rows(results: Results) -> pd.DataFrame:
    """fori over the Python loop, ms per call per pair, where this device resolved the loop
    (:func:`jaxperf.loops.verdict.measured`); none at the per-call floor."""
    m, keys = verdict.measured(results.timings), ("fori", "python", "ratio", "q25", "q75")
    row = dict(kernel=results.kernel, source="this device", kind="measured", unit="ms per call")
    rows = [row | {k: m[k] for k in keys} | {"T": str(m["T"])}] if m["why"] == "resolved" else []
    return pd.DataFrame(rows, columns=verdict.COLUMNS)


def frame(results: Results) -> pd.DataFrame:
    """The kernel's rows in the verdict's columns (static per step, and measured where timed)."""
    return pd.concat([measured_rows(results), verdict.static(results.per_step())], ignore_index=True)


def judged(results: Results) -> tuple[str, str]:
    """The verdict and its sentence: from a device's ms per call where one timed the kernel
    (:func:`jaxperf.loops.verdict.measured`; static counts then only explain), else static counts."""
    m, k, rows = verdict.measured(results.timings), f"`{results.kernel}`", frame(results)
    if m["why"] == "resolved":
        share = f"{m['share']['fori']:.0%} of fori_loop's and {m['share']['python']:.0%} of the Python loop's"
        return m["verdict"], (
            f"{k} **{m['verdict']}** for `fori_loop` on this device (measured): fori_loop {m['fori']:.3f} "
            f"against the Python loop's {m['python']:.3f} ms per call at T={m['T']} ({m['ratio']:.2f}× per "
            f"pair [{m['q25']:.2f}, {m['q75']:.2f}], a scan of {m['scan']} calls; the loop is {share} call, "
            f"from T={m['T_small']}). Why, in static counts (not a time):"
        )
    if m["why"] == "floor":
        return m["verdict"], (
            f"{k}: {verdict.BELOW}, so no measured verdict: timed at {m['tried']}, every form measured "
            f"{m['floor'][0]:.3f}-{m['floor'][1]:.3f} ms per call at T={m['T_small']} (the per-call floor) "
            f"and the loop was at most {max(m['share'].values()):.0%} of a call at T={m['T']} "
            f"({verdict.SHARE:.0%} needed). Static counts (not a time), which this device's ms do not show:"
        )
    if rows.empty:
        why = "no compiler here read two T of both the Python loop and fori_loop"
        return "not read", f"{k}: {why}, so its loop work is not known."
    v = verdict.verdicts(rows)[results.kernel]["verdict"]
    split = " (the targets disagree; each is judged on its own numbers)" if "depends" in v else ""
    head = f"{k} **{v}** for `fori_loop`, from static counts{split}:"
    return v, f"{k}: its loop work was not read here." if v == "not read" else head


def verdict_line(results: Results) -> str:
    """The verdict (:func:`judged`), then one bullet per target with its own per-step numbers and
    cause (without a verdict of its own beside a device's ms), then the advice (:func:`advice`)."""
    timed = verdict.measured(results.timings)["verdict"] is not None
    bullets = [f"- {line}" for line in verdict.per_target(frame(results), judge=not timed)]
    tips = ["", "**Which form to write**, per target:", *advice(results)]
    return "\n".join([judged(results)[1], *bullets, *(tips if len(tips) > 2 else [])])


def advice(results: Results) -> list[str]:
    """Per target where fori_loop's work per step was read: the form with the least work per step
    among those compiled (per-step numbers from the same table), and whether it beats fori_loop.
    None beside a device's ms (its table says which form is fastest there)."""
    steps, out = results.per_step(), list[str]()
    if verdict.measured(results.timings)["verdict"]:
        return out
    for target, part in steps[steps.per_step.notna()].groupby("target", sort=False):
        by = part.set_index("form")["per_step"]
        fori = by.get("fori", by.get("fori u=1"))
        best = by.idxmin()
        cells = ", ".join(f"`{f}` {x:.1f}" for f, x in by.sort_values().items())
        if fori is None or not fori > 0:  # fori_loop's work per step not read: no form to advise over it
            continue
        better = f"write `{best}`: {fori / by[best]:.2f}× less work per step than `fori_loop` ({cells})"
        tie = f"`fori_loop` is as good as any form tried (per step: {cells})"
        out.append(f"- {target}: {better if by[best] * verdict.SAME < fori else tie}")
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
        py, known = python.get(r.target), pd.notna(r.per_step)
        ratio = f", {r.per_step / py:.2f}× Python's" if known and pd.notna(py) and py > 0 else ""
        cells.append(f"{r.per_step:.1f}{ratio} (T={int(r.T1)}-{int(r.T2)})" if known else f"— ({r.note})")
    steps = steps.assign(column=[f"{t} ({u} per step)" for t, u in zip(steps.target, steps.unit)], cell=cells)
    return steps.pivot(index="form", columns="column", values="cell").reset_index().rename_axis(columns=None)


def sections(results: Results) -> list[str]:
    """The tables, each with a line saying what it is."""
    checks, timings = results.checks, results.timings
    against = "your reference" if "your reference" in set(checks.get("against", [])) else "`fori_loop`"
    Ts = ", ".join(str(t) for t in sorted(set(checks["T"]))) if len(checks) else ""
    by = timings.groupby(["form", "T", *(["scan"] if "scan" in timings else [])], sort=False)
    stats = by.apply(_measured, include_groups=False).rename("ms").reset_index() if len(timings) else timings
    checked, points = checks.drop(columns="kernel") if len(checks) else checks, results.points
    lowers, compiled = lowering_table(points), _pivot(points, "compile_ms", "{:.0f}")
    steps = per_step_table(results)
    tables = {
        f"**Same result as {against}** (Pallas interpreter, T={Ts}; largest difference over the largest value):": checked,
        "**Lowers** (exported for each compiler's platform, no device needed):": lowers,
        "**Compile ms** (one compile per point, on this CPU; Triton: export + ttir to cubin; Mosaic GPU: lowering + compile, dumps on):": compiled,
        "**Work per loop step** (static counts from each compiler's output, compiled on a CPU, not executed; the difference between the largest two T with the same loop structure, over the extra steps; the ratio is the verdict's where no device timed the kernel):": steps,
        "**Measured ms per call** (this device, median [IQR] of a timed call over its scan of calls in one jitted scan; else why):": stats,
    }
    out = [line for title, table in tables.items() if len(table) for line in (title, "", md.table(table), "")]
    at = next((i + 4 for i, line in enumerate(out) if line.startswith("**Lowers")), None)
    if at is not None:  # out[None:None] would be the whole list
        out[at:at] = absent_note(results.points)
    absent = "; ".join(f"{t}: {r}" for t, r in results.not_present.items())
    return out + ([f"**Not compiled here:** {absent}", ""] if absent else [])


def _measured(rows: pd.DataFrame) -> str:
    """One cell of the measured table: the ms per call, or what stopped the form (its status, error)."""
    ms, first = rows["ms_per_call"].dropna(), rows.iloc[0]
    return md.fmt_stat(timing.iqr_stats(ms), 3) if len(ms) else f"{first.status}: {first.error}".rstrip(": ")


def markdown(results: Results) -> str:
    """The whole report for one kernel: the verdict, then :func:`sections`."""
    units = "; ".join(f"{t}: {u}" for t, (_, _, u) in TARGETS.items())
    head = f"## `{results.kernel}`: fori_loop against the Python loop"
    return "\n".join([head, "", verdict_line(results), "", *sections(results), f"Units: {units}."])


def summary(results: Results) -> dict[str, Any]:
    """summary.json's record of one kernel: the verdict and the numbers behind it."""
    m = verdict.measured(results.timings)
    return {
        "kernel": results.kernel,
        "verdict": judged(results)[0],
        "mechanism": verdict.mechanism(frame(results), judge=m["verdict"] is None),
        "measured": m,
        "checks": results.checks.to_dict(orient="records"),
        "per_step": results.per_step().replace({float("nan"): None}).to_dict(orient="records"),
        "points": results.points.replace({float("nan"): None}).to_dict(orient="records"),
        "not_present": results.not_present,
    }
