"""summary.json and summary.md of the Triton compile study (notebook 04).

Every number carries its label: compile times and code are "compiled for
<target> on a CPU, not executed"; instruction counts per call are a "static
estimate from SASS compiled on a CPU", never a measurement.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import markdown
from ..compilers.triton import estimate
from ..compilers.triton.toolchain import NOT_INSTALLED, TritonStatus, label
from ..jax20909 import vocab
from . import analysis, sections
from .sweep import STATUS_FAILED, STATUS_OK, STATUS_OVER_BUDGET

ISSUE = "jax-ml/jax#20909"
COMPILE_DEFINITION = (
    "jax.export (trace + Pallas->Triton + StableHLO) + Triton ttir passes, ttgir, llir, PTX, cubin (ptxas); "
    "median over compiles"
)


def _cell(med: pd.DataFrame, kernel: str, variant: str, T: int) -> str:
    row = med[(med.kernel == kernel) & (med.variant == variant) & (med["T"] == T)]
    if row.empty:
        return "n/a"
    row = row.iloc[0]
    if row.status != STATUS_OK:
        return str(row.status)
    spread = f" [{row.compile_ms_q25:.0f}, {row.compile_ms_q75:.0f}]" if row.get("compiles", 1) > 1 else ""
    return f"{row.compile_ms:.0f} ms{spread} / not executed"


def seed_format_table(
    df: pd.DataFrame, kernel: str = "seed", hand_unroll: int = 4, target: str = "sm_90"
) -> pd.DataFrame:
    """The reporter's layout (T | Python loop compile / exec | fori_loop compile / exec), plus the
    hand-unrolled and hoisted loops, the scalar carry (the XLA:CPU fix) and the reporter's A6000
    compile numbers beside ours."""
    med = analysis.point_medians(df)
    seed = analysis.seed_compile_ms().set_index("T")
    where = f"({target}, CPU)"
    rows = []
    for T in sorted(med[med.kernel == kernel]["T"].unique()):
        row: dict[str, Any] = {"T": int(T)}
        for title, variant in (
            ("Python loop", "python"),
            ("fori_loop", "fori u=1"),
            (f"hand-unrolled k={hand_unroll}", f"hand_unrolled u={hand_unroll}"),
            ("hoisted", "hoisted u=1"),
            ("scalar carry", analysis.FIX),
        ):
            if variant == "python" or variant in set(med.variant[med.kernel == kernel]):
                row[f"{title} compile / exec {where}"] = _cell(med, kernel, variant, T)
        reporter = kernel == "seed" and T in seed.index
        row["reporter A6000 Python / fori compile"] = (
            f"{seed.loc[T, 'python']} / {seed.loc[T, 'fori']} ms" if reporter else "-"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.replace({np.nan: None}).to_dict(orient="records")


def summary_dict(
    df: pd.DataFrame,
    settings: Any,
    status: TritonStatus,
    *,
    mechanism: dict[str, Any] | None = None,
    estimates: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """Headline numbers for summary.json. ``settings`` is a :class:`TritonSettings`;
    ``mechanism`` the dict of :func:`jaxperf.triton.mechanism.verdict` (plus its tables);
    ``estimates`` the estimate sweep's rows."""
    med = analysis.point_medians(df)
    kernels = [k for k in vocab.KERNELS if k in set(df.kernel)]
    out: dict[str, Any] = {
        "measured": True,
        "quick": settings.quick,
        "label": label(settings.target),
        "target": settings.target,
        "triton": status.version,
        "seed_source": f"{ISSUE}: {vocab.SEED_SETUP}",
        "seed_rows": vocab.seed_records(),
        "compile_ms_definition": COMPILE_DEFINITION,
        "seed_carry_dtype": settings.seed_carry_dtype,
        "repeats": settings.repeats,
        "repeat_below_s": settings.repeat_below_s,
        "max_compile_s": settings.max_compile_s,
        "budget_s": settings.budget_s,
        "plan": {k: {"T": list(settings.sizes[k]), "unrolls": list(settings.unrolls[k])} for k in kernels},
        "seed_format_table": {k: _records(seed_format_table(df, k, target=settings.target)) for k in kernels},
        "verdict": {k: analysis.verdict(df, k, list(settings.sizes[k])) for k in kernels},
        "growth": _records(analysis.growth(df)),
        "stages_at_largest_T": _records(analysis.stage_table(df)),
        "python_stages_by_T": _records(analysis.stages_by_T(df)),
        "code_at_largest_T": _records(analysis.code_table(df)),
        "does_not_lower": _records(analysis.does_not_lower(df)),
        "over_budget": _records(med[med.status == STATUS_OVER_BUDGET][["kernel", "variant", "T", "error"]]),
        "failed": _records(med[med.status == STATUS_FAILED][["kernel", "variant", "T", "error"]]),
        "points": int(len(med)),
        "compiles": int((df.status == STATUS_OK).sum()),
    }
    if mechanism is not None:
        out["mechanism"] = mechanism
    if estimates is not None:
        out["estimate"] = {
            "label": estimate.LABEL,
            "per_call": _records(estimate.table(estimates)),
            "ratios": _records(estimate.ratios(estimates)),
            "per_step": _records(estimate.per_step(estimates)),
            "closest_to_python": _records(estimate.closest_to_python(estimates)),
            "not_estimated": _not_estimated(estimates),
        }
    return out


def _not_estimated(estimates: pd.DataFrame) -> list[dict[str, Any]]:
    """Points with no estimate and why: those that did not compile, and those whose SASS keeps a
    loop with a trip count the counter reader could not read (``sass_trips_how`` says which)."""
    failed = estimates[estimates.status != STATUS_OK].assign(reason=lambda d: d["error"])
    ok = estimates[estimates.status == STATUS_OK]
    unread = ok[ok["sass_dynamic_per_call"].isna()] if "sass_dynamic_per_call" in ok else ok.iloc[:0]
    unread = unread.assign(status="loop trip count not read", reason=unread.get("sass_trips_how"))
    both = pd.concat([failed, unread]).drop_duplicates(["target", "variant", "T"])
    return _records(both[["target", "variant", "T", "status", "reason"]])


def _md(df: pd.DataFrame, floatfmt: str = "{:.0f}") -> str:
    return markdown.table(df, floatfmt=floatfmt) if not df.empty else "(none)"


def _compile_section(df: pd.DataFrame, summary: dict[str, Any]) -> list[str]:
    target = summary["target"]
    lines = []
    for kernel, rows in summary["seed_format_table"].items():
        v = summary["verdict"][kernel]
        exps = ", ".join(f"{n} {b:+.2f}" for n, b in v.get("loops_exponents", {}).items() if b is not None)
        lines += [
            "",
            f"## `{kernel}` kernel: compile time ({label(target)})",
            "",
            _md(pd.DataFrame(rows)),
            "",
        ]
        if v.get("reproduced") is None and not v.get("sentence"):
            continue
        verdict = markdown.verdict(v["reproduced"], summary["quick"], met_text="yes", missed_text="no")
        lines.append(
            f"{v['sentence']} The reporter's compile pattern reproduced (ours grows at least "
            f"{analysis.GROWS_AS_HIS:g}x as much as his over the same T, fori's at most {analysis.FORI_FLAT:g}x): "
            + (
                f"**{verdict}**."
                if v.get("reproduced") is not None
                else "**not reached** (no range of his T compiled)."
            )
            + (f" The looping forms, compile_ms ~ T^b: {exps}." if exps else "")
        )
        if v.get("fix"):
            lines += ["", _fix_sentence(v["fix"])]
    return lines


def _fix_sentence(fix: dict[str, Any]) -> str:
    """The scalar carry's compile growth, told apart from the looping forms' (its loop may not survive)."""
    (T1, T2), (c1, c2) = fix["T_range"], fix["compile_ms"]
    (Ta, Tb), (p1, p2), (s1, s2) = fix["code_T"], fix["ptx_instructions"], fix["sass_instructions"]
    exponent = "" if fix["exponent"] is None else f" (compile_ms ~ T^{fix['exponent']:.2f})"
    text = (
        f"The scalar carry (`{fix['variant']}`, the fix that closed the gap on XLA:CPU) compiles in "
        f"{c1:.0f} ms at T={T1} and {c2:.0f} ms at T={T2}{exponent}. From T={Ta} to T={Tb} its PTX goes "
        f"from {p1} to {p2} instructions and its SASS from {s1} to {s2}"
    )
    if fix["loop_in_sass_at_T_max"]:
        return text + f", with a loop left in the SASS at T={Tb}."
    if Tb > Ta and p2 <= 1.05 * p1 and s2 > 1.5 * s1:
        return text + (
            f": the loop stays in the PTX, but no loop is left in the SASS at T={Tb} (ptxas unrolls the "
            "one-scalar loop, so its machine code grows with T as the Python loop's does)."
        )
    return text + f", with no loop left in the SASS at T={Tb}."


def _x(value: float | None, digits: int) -> str:
    return "not estimated" if value is None or value != value else f"{value:.{digits}f}×"


def _answer(summary: dict[str, Any]) -> list[str]:
    """At most five bullets: the compile column, why, the static estimate, the fix, what does not lower."""
    out = []
    v = summary["verdict"].get("seed", {})
    if v.get("sentence"):
        verdict = (
            markdown.verdict(
                v.get("reproduced"), summary["quick"], met_text="reproduced", missed_text="not reproduced"
            )
            if v.get("reproduced") is not None
            else "not reached"
        )
        out.append(
            f"- **The reporter's compile column: {verdict}** (compile = {summary['compile_ms_definition']}; "
            f"a median of up to {summary['repeats']} compiles after a discarded warm-up). {v['sentence']}"
        )
    if "mechanism" in summary:
        out.append("- **Why the loop costs more, from the SASS:** " + summary["mechanism"]["line"])
    est = summary.get("estimate")
    if est and est.get("ratios"):
        largest: dict[str, dict[str, Any]] = {}
        for r in est["ratios"]:
            if r["T"] >= largest.get(r["target"], {}).get("T", 0):
                largest[r["target"]] = r
        cells = [
            f"{t} T={r['T']}: `fori_loop` {_x(r.get('fori u=1 / python'), 1)}, `scalar_carry u=1` "
            f"{_x(r.get('scalar_carry u=1 / python'), 2)}"
            for t, r in largest.items()
        ]
        measured = next(iter(largest.values())).get("reporter measured fori / python")
        out.append(
            f"- **Static estimate ({est['label']}):** SASS instructions issued per kernel call over the Python "
            "loop's: "
            + "; ".join(cells)
            + (f". The reporter measured {measured:.2f}× in ms at that T" if measured is not None else "")
            + ": right direction, the size overshoots (instructions are not time; see the time model)."
        )
    if v.get("fix"):
        out.append("- **The fix on Triton:** " + _fix_sentence(v["fix"]))
    out.append(
        "- **Does not lower, not measured:** `fori_loop(unroll=k>1)` and `pl.loop(unroll=k>1)` raise a bare "
        "NotImplementedError in Triton's `_scan_lowering_rule`; the hand-unrolled loop is the portable way to "
        "unroll. Nothing was executed on a GPU."
    )
    return out[:5]


def summary_markdown(df: pd.DataFrame, summary: dict[str, Any]) -> str:
    """summary.md at issue size: five bullets, then the reporter-format compile tables, the
    mechanism, the static estimate, the stage split, the machine code, and what did not lower
    or was not measured, each folded."""
    target = summary["target"]
    intro = [
        markdown.smoke_notice(summary["quick"]),
        "",
        f"Every Pallas loop form of {ISSUE} exported for CUDA on this CPU-only machine and compiled by triton "
        f"{summary['triton']} for {target} through ttir, ttgir, llir, PTX and cubin (ptxas), then read as SASS with "
        f"cuobjdump. **Nothing was executed.** The `seed` kernel is the reporter's (carry dtype: "
        f"{summary['seed_carry_dtype']}). The reporter's numbers: {summary['seed_source']}.",
    ]
    parts = _compile_section(df, summary)
    if "mechanism" in summary:
        parts += sections.mechanism_section(summary["mechanism"])
    if "estimate" in summary:
        parts += sections.estimate_section(summary["estimate"])
    for title, table in (
        (
            "Where compile time goes at each kernel's largest T (median ms per stage)",
            analysis.stage_table(df),
        ),
        ("The Python loop's stages as T grows (median ms)", analysis.stages_by_T(df)),
        ("Machine code at each variant's largest compiled T", analysis.code_table(df)),
    ):
        if not table.empty:
            parts += ["", f"## {title}", "", _md(table.rename(columns=analysis.STAGE_LABELS))]
    bad = analysis.does_not_lower(df)
    if not bad.empty:
        parts += ["", "## Does not lower (Pallas' Triton lowering rejects it)", "", _md(bad)]
    if summary["over_budget"]:
        parts += ["", "## Not measured (over budget)", "", _md(pd.DataFrame(summary["over_budget"]))]
    if summary["failed"]:
        parts += ["", "## Failed compiles", "", _md(pd.DataFrame(summary["failed"]))]
    title = f"Triton compile time and machine code, {label(target)}"
    return markdown.answer_page(title, intro, _answer(summary), markdown.fold_sections(parts))


def not_measured_summary(
    status: TritonStatus, target: str, quick: bool = False
) -> tuple[dict[str, Any], str]:
    """summary.json / summary.md when the triton extra is absent: say so, no made-up data."""
    summary = {
        "measured": False,
        "quick": quick,
        "reason": status.reason,
        "label": label(target),
        "target": target,
        "seed_source": f"{ISSUE}: {vocab.SEED_SETUP}",
        "seed_rows": vocab.seed_records(),
    }
    text = (
        f"# Triton compile time and machine code ({label(target)})\n\n**{NOT_INSTALLED}.** {status.reason}\n\n"
        f"Nothing was compiled; the reporter's compile column ({ISSUE}) is not reproduced here.\n"
    )
    return summary, text
