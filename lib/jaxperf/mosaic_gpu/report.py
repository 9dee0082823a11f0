"""summary.json and summary.md of notebook 09: jax#20909 on Mosaic GPU, at issue size."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown
from ..jax20909 import compile_facts, vocab
from . import analysis, bug_report
from .settings import MosaicGpuSettings

TITLE = "Pallas on Hopper: jax#20909 on Mosaic GPU (sm_90a, compiled on a CPU, not executed)"


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if df is None or df.empty else df.replace({float("nan"): None}).to_dict(orient="records")


def summary_dict(
    s: MosaicGpuSettings,
    checked: pd.DataFrame,
    lowered: pd.DataFrame,
    compiled: pd.DataFrame | None,
    mechanism: dict[str, Any] | None,
    toolchain: dict[str, Any],
) -> dict[str, Any]:
    """Everything the summary says, as numbers (``compiled``/``mechanism`` None: not measured)."""
    out: dict[str, Any] = {
        "smoke_run": s.quick,
        "toolchain": toolchain,
        "interpret": analysis.interpret_answer(checked),
        "lowering": analysis.lowering_verdicts(lowered).to_dict(orient="records"),
        "lowering_errors": analysis.lowering_errors(lowered),
        "python_lower_s": {
            int(r.T): float(r.lower_s)
            for r in lowered[lowered.variant == "python"].itertuples()
            if r.status == "ok"
        },
        "compiled": None,
    }
    if compiled is not None and (compiled.status == "ok").any():
        ratios = analysis.estimate_ratios(compiled)
        out.update(
            compiled=int((compiled.status == "ok").sum()),
            points=int(len(compiled)),
            growth=_records(analysis.growth(compiled)),
            seed_table=_records(analysis.seed_format_table(compiled)),
            estimate={
                "label": analysis.ESTIMATE_LABEL,
                "ratios": _records(ratios),
                "closest_to_python": analysis.closest_to_python(ratios),
            },
            not_compiled=_records(compiled[compiled.status != "ok"][["variant", "T", "status", "error"]]),
        )
    out["mechanism"] = mechanism
    out["bug_report"] = {"title": bug_report.TITLE, "repro": bug_report.REPRO, "found": bug_report.found(out)}
    return out


def _growth_line(growth: list[dict[str, Any]]) -> str:
    by = {g["variant"]: g for g in growth}
    py, fori = by.get("python"), by.get("fori u=1")
    if not py or not fori:
        return ""
    his = compile_facts.reporter_growth(py["T_min"], py["T_max"])
    same_range = (
        f"{py['compile_ms_at_T_max'] / py['compile_ms_at_T_min']:.1f}x where his (Triton, A6000) grew "
        f"{his['python']:.1f}x over the same T; "
        if his
        else ""
    )
    return (
        f"- Compile ({analysis.COMPILE_LABEL}; lower + compile, the reporter's column): {same_range}the Python loop grows from "
        f"{py['compile_ms_at_T_min']:.0f} ms at T={py['T_min']} to {py['compile_ms_at_T_max']:.0f} ms at T={py['T_max']} "
        f"({py['lower_share_at_T_max']:.0%} of it the Pallas-to-Mosaic-GPU lowering, whose layout inference grows faster "
        f"than the program), while `fori_loop` stays within {fori['max_over_min']:.2f}x "
        f"({fori['compile_ms_at_T_min']:.0f}-{fori['compile_ms_at_T_max']:.0f} ms)."
    )


def _lowering_line(summary: dict[str, Any]) -> str:
    errors = summary["lowering_errors"]
    unroll = next((e for e in errors if "unroll" in e["error"]), None)
    recursion = next((e for e in errors if e["error_type"] == "RecursionError"), None)
    portable = [r for r in summary["lowering"] if r["variant"].split(" u=")[0] in vocab.PORTABLE_FORMS]
    everywhere = all(not r["does not lower"] for r in portable)
    parts = [
        "- Lowering (exported for CUDA inside an abstract H100 mesh, no GPU): "
        + (
            "the hand-unrolled, hoisted and scalar-carry loops lower at every T and unroll"
            if everywhere
            else "not every portable loop lowers (table below)"
        )
    ]
    if unroll:
        parts.append(
            f"`fori_loop`/`pl.loop(unroll=k)` need k to divide T/64 (`{unroll['error_type']}: {unroll['error']}`)"
        )
    if recursion:
        parts.append(
            f"the Python loop stops at T={recursion['T']} (`RecursionError` while lowering "
            f"{recursion['T'] // vocab.SEED_STEP_ROWS} steps; a bug report for JAX is folded below)"
        )
    return "; ".join(parts) + "."


def summary_markdown(summary: dict[str, Any]) -> str:
    """An issue-sized answer: five bullets, the tables folded."""
    interp = summary["interpret"]
    worst = interp["worst_error_vs_tolerance"]
    bullets = [
        f"- The port (`plgpu.kernel`: each program copies its 128-row block into shared memory, then the reporter's "
        f"loop, output [T, D]) computes the float64 reference in Mosaic GPU's interpreter on this CPU: "
        f"{interp['checked']} of {interp['points']} (variant, T) points at T={interp['Ts']} match"
        + (f" (worst error {worst:.3g} of the tolerance)." if worst is not None else "."),
        _lowering_line(summary),
    ]
    mech = summary.get("mechanism")
    if summary.get("compiled"):
        bullets.append(_growth_line(summary["growth"]))
        bullets.append(f"- Mechanism: {mech['line']}" if mech else "- Mechanism: not read.")
        bullets.append(_estimate_line(summary["estimate"]))
    else:
        bullets.append(
            f"- Compile, mechanism and estimate for sm_90a: {summary['toolchain'].get('reason', 'not measured')}."
        )
    intro = [
        markdown.smoke_notice(summary["smoke_run"]),
        "",
        f"The reporter's numbers ({vocab.SEED_SETUP}):",
        "",
        markdown.table(vocab.seed_issue_table()),
    ]
    return markdown.answer_page(TITLE, intro, bullets, markdown.fold_sections(_sections(summary)))


def _estimate_line(est: dict[str, Any]) -> str:
    ratios = pd.DataFrame(est["ratios"])
    if ratios.empty or "fori u=1 / python" not in ratios:
        return "- Static estimate: n/a."
    both = ratios.dropna(subset=["fori u=1 / python"]).sort_values("T")  # T where both loops compiled
    if both.empty:
        return "- Static estimate: n/a (the Python loop compiled at no T where `fori_loop` did)."
    last = both.iloc[-1]
    where = (
        f"T={int(last['T'])}"
        if int(last["T"]) == int(ratios["T"].max())
        else f"T={int(last['T'])}, the largest T where the Python loop compiled"
    )
    closest = ", ".join(
        f"{r['variant']} {r['ratio']:.2f}x"
        if r["ratio"] is not None and pd.notna(r["ratio"])
        else f"{r['variant']} n/a"
        for r in est["closest_to_python"][:3]
    )
    reporter = last.get("reporter measured fori / python")
    return (
        f"- Static estimate ({est['label']}; instructions per kernel call, B=512): `fori_loop` issues "
        f"{last['fori u=1 / python']:.2f}x the Python loop's at {where}"
        + (f" (the reporter measured {reporter:.2f}x in ms on Triton, A6000)" if pd.notna(reporter) else "")
        + f"; closest to the Python loop: {closest}."
    )


def _sections(summary: dict[str, Any]) -> list[str]:
    lines = ["## Which forms lower, per T", "", markdown.table(pd.DataFrame(summary["lowering"]))]
    lines += ["", "Each refusal once:", ""] + [
        f"- {e['variant']} T={e['T']}: `{e['error_type']}: {e['error']}`" for e in summary["lowering_errors"]
    ]
    if summary.get("python_lower_s"):
        lines += [
            "",
            "The Python loop's lowering (seconds, this CPU): "
            + ", ".join(f"T={T}: {s:.1f}" for T, s in summary["python_lower_s"].items()),
        ]
    lines += [
        "",
        "## Interpret check",
        "",
        f"Variants checked: {', '.join(summary['interpret']['variants'])}.",
    ]
    if summary["interpret"]["not_checked"]:
        lines += ["", markdown.table(pd.DataFrame(summary["interpret"]["not_checked"]))]
    if summary.get("compiled"):
        lines += [
            "",
            "## The reporter's table, compiled for sm_90a here",
            "",
            markdown.table(pd.DataFrame(summary["seed_table"])),
        ]
        lines += [
            "",
            "## Compile growth with T",
            "",
            markdown.table(pd.DataFrame(summary["growth"]), floatfmt="{:.2f}"),
        ]
        mech = summary.get("mechanism")
        if mech:
            lines += ["", f"## Mechanism at T={mech['sizes']}", "", mech["line"], ""]
            lines += ["Shuffles and barriers inside and outside loops, per level (smaller T):", ""]
            lines += [markdown.table(pd.DataFrame(mech["reduction_table"])), ""]
            lines += ["SASS instructions each extra step adds, per program, by kind:", ""]
            lines += [markdown.table(pd.DataFrame(mech["per_step"]), floatfmt="{:.2f}")]
        lines += ["", f"## Static estimate: {summary['estimate']['label']}", ""]
        lines += [markdown.table(pd.DataFrame(summary["estimate"]["ratios"]), floatfmt="{:.3g}")]
        if summary["not_compiled"]:
            lines += ["", "Not compiled:", ""] + [
                f"- {r['variant']} T={r['T']}: {r['status']}: {r['error']}" for r in summary["not_compiled"]
            ]
    report = bug_report.text(summary)
    if report:
        lines += ["", "## A bug report for JAX: the RecursionError", "", *report]
    lines += ["", "## Toolchain", "", ", ".join(f"{k}: {v}" for k, v in summary["toolchain"].items())]
    return lines
