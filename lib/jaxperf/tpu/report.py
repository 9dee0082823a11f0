"""Tables, verdicts and the summary of the TPU compile study. Every number here was
compiled for a TPU on a CPU and never executed: the labels say so."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from .. import markdown
from ..compilers.mosaic_tpu import estimate, topology
from ..jax20909 import vocab
from .sweep import OK

STUDY = "tpu_compile"
CLOSES_WITHIN = 1.1  # a fix "closes" the gap when its static cycles are within 10% of the Python loop's


def label(generation: str) -> str:
    return f"compiled for TPU {generation} on a CPU, not executed"


def reason(row: pd.Series) -> str:
    """A short word for a point that did not compile."""
    if row["status"] == OK:
        return ""
    text = str(row.get("error", ""))
    for needle, word in (
        ("vmem", "does not fit VMEM"),
        ("Vmem", "does not fit VMEM"),
        ("HbmOom", "does not fit HBM"),
        ("Unsupported matmul", "Mosaic: matmul type unsupported"),
        ("Invalid vector type", "Mosaic: dtype unsupported"),
    ):
        if needle in text:
            return word
    return row["status"] if row["status"] != "error" else "error: " + text[:60]


def _point(points: pd.DataFrame, **where: Any) -> pd.Series | None:
    found = points
    for key, value in where.items():
        found = found[found[key] == value]
    return found.iloc[0] if len(found) else None


def _cell(row: pd.Series | None) -> str:
    if row is None:
        return "not run"
    if row["status"] != OK:
        return reason(row)
    us = row.get("us_seed_batch")
    static = f"{us / 1e3:.3f} ms" if pd.notna(us) else "n/a"
    return f"{row['compile_ms']:.0f} ms / {static}"


def seed_format_table(points: pd.DataFrame, generation: str, kernel: str = "seed") -> pd.DataFrame:
    """The reporter's layout (T; Python loop and fori_loop: compile / per kernel call), with the
    static estimate (B=512, the generation's clock) in place of the executed time, and the
    reporter's A6000 numbers beside it."""
    seed = {row[0]: row for row in vocab.SEED_ROWS}
    rows = []
    for T in sorted(points["T"].unique()):
        at = dict(generation=generation, kernel=kernel, T=T)
        reported = seed.get(T)
        rows.append(
            {
                "T": T,
                "Python loop compile / static": _cell(_point(points, loop_form="python", **at)),
                "fori_loop compile / static": _cell(_point(points, loop_form="fori", unroll=1, **at)),
                "A6000 (reporter) Python / fori exec": f"{reported[2]} ms / {reported[4]} ms"
                if reported
                else "",
            }
        )
    return pd.DataFrame(rows)


def _count(row: pd.Series | None, column: str) -> int | None:
    """An integer column of a point (None where the point or the number is missing)."""
    return None if row is None or pd.isna(row.get(column)) else int(row[column])


def mechanism(points: pd.DataFrame, T: int) -> pd.DataFrame:
    """jax#20909's mechanism on Mosaic TPU, per generation (seed kernel at ``T``): is the
    reduction in the fori_loop body, what the Python loop's schedule does instead, and the
    body bundles per step and cycles per program of the hoisting fixes (unroll 1:
    :data:`~jaxperf.jax20909.vocab.HOISTING_FORMS`, hoisted and scalar_carry)."""
    rows = []
    for generation in dict.fromkeys(points["generation"]):
        at = dict(generation=generation, kernel="seed", T=T, status=OK)
        python = _point(points, loop_form="python", **at)
        fori = _point(points, loop_form="fori", unroll=1, **at)
        fixes = {form: _point(points, loop_form=form, unroll=1, **at) for form in vocab.HOISTING_FORMS}
        if fori is None or python is None:
            continue
        row: dict[str, Any] = {
            "generation": generation,
            "T": T,
            "fori: body bundles x trips": f"{fori['inner_body_bundles']:.0f} x {fori['inner_trips']:.0f}",
            "fori: reduction in body": bool(fori["xlane_ops_in_inner_body"] > 0),
            "Python: bundles, loops inside": f"{python['bundles']:.0f}, {python['loop_depth'] - 1:.0f}",
            "Python: reductions (xlane ops)": int(python["xlane_ops"]),
        }
        for form, fix in fixes.items():
            row[f"{form}: body bundles"] = _count(fix, "inner_body_bundles")
        shown = {"Python": python, "fori": fori, **fixes}
        row["cycles per program: " + " / ".join(shown)] = " / ".join(
            "n/a" if _count(r, "cycles_per_program") is None else str(_count(r, "cycles_per_program"))
            for r in shown.values()
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _both_compiled(ok: pd.DataFrame, T: int) -> int | None:
    """``T`` if the Python loop and fori_loop both compiled there, else the largest T where they did."""
    both = [
        t for t in sorted(set(ok["T"]), reverse=True) if {"python", "fori"} <= set(ok[ok["T"] == t].loop_form)
    ]
    return T if T in both else (both[0] if both else None)


def fix_verdict(points: pd.DataFrame, T: int) -> pd.DataFrame:
    """Per generation, the seed kernel at ``T`` (or, where the Python loop or fori_loop did not
    compile there, the largest T where both did, with the reason): static cycles of fori_loop
    vs the Python loop, and whether the best portable fix (the fewest cycles among
    :data:`~jaxperf.jax20909.vocab.PORTABLE_FORMS`: hand_unrolled, hoisted, scalar_carry; any
    unroll) closes the gap."""
    rows = []
    for generation in dict.fromkeys(points["generation"]):
        seed = points[(points.generation == generation) & (points.kernel == "seed")]
        ok = seed[(seed.status == OK) & seed.get("cycles_seed_batch", pd.Series(dtype=float)).notna()]
        ok = ok[(ok.loop_form != "fori") | (ok.unroll == 1)]
        at_T = _both_compiled(ok, T)
        row: dict[str, Any] = {"generation": generation, "T": at_T}
        missing = seed[(seed["T"] == T) & (seed.loop_form.isin(["python", "fori"])) & (seed.status != OK)]
        if at_T != T:
            row["note"] = f"T={T}: " + ("; ".join(sorted(set(missing.apply(reason, axis=1)))) or "not run")
        if at_T is None:
            rows.append(row)
            continue
        here = ok[ok["T"] == at_T]
        python, fori = _point(here, loop_form="python"), _point(here, loop_form="fori")
        assert python is not None and fori is not None  # _both_compiled chose a T with both
        portable = here[here.loop_form.isin(vocab.PORTABLE_FORMS)]
        best = portable.loc[portable.cycles_seed_batch.idxmin()] if len(portable) else None
        for name, found in (("python", python), ("fori u=1", fori), ("best portable fix", best)):
            row[f"{name} ms (static)"] = None if found is None else found["us_seed_batch"] / 1e3
        row["best portable fix"] = None if best is None else best["variant"]
        row["fori / python"] = fori["cycles_seed_batch"] / python["cycles_seed_batch"]
        if best is not None:
            row["fix / python"] = best["cycles_seed_batch"] / python["cycles_seed_batch"]
            row["fix closes the gap"] = bool(row["fix / python"] <= CLOSES_WITHIN)
        rows.append(row)
    return pd.DataFrame(rows)


_LOSS_ONLY = re.compile(r"only \w+: (ROOT tuple tuple of \d+ arrays|constant f32\[1\]|copy f32\[1\])$")


def dispatch_verdict(dispatch: pd.DataFrame, same_program: pd.DataFrame) -> str:
    """One sentence per step: which methods compiled to pmap-on-params' TPU program, and what differs."""
    sentences = []
    for step, rows in same_program.groupby("step", sort=False):
        parts = []
        same = rows[rows.same_program].method.tolist()
        if same:
            parts.append(", ".join(same) + " compile to the same TPU program as pmap_params")
        for _, row in rows[~rows.same_program].iterrows():
            if all(_LOSS_ONLY.match(d) for d in row["differences"].split("; ")):
                parts.append(
                    f"{row['method']} differs only in the loss output (the step returns the Python float 0.0: "
                    "jax.pmap returns it as an f32[1] array, Equinox keeps it as a non-array output)"
                )
            else:
                parts.append(f"{row['method']} differs ({row['differences']})")
        sentences.append(f"{step}: " + "; ".join(parts))
    failed = dispatch[dispatch.error.astype(str) != ""]
    sentences += [f"{r['step']}: {r['method']} did not compile ({r['error']})" for _, r in failed.iterrows()]
    return ". ".join(sentences) + "."


def clocks_table(generations: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"generation": g, "MHz": round(c.mhz), "published": c.published, "source": c.source}
            for g, c in estimate.CLOCKS.items()
            if g in generations
        ]
    )


def status_counts(points: pd.DataFrame) -> pd.DataFrame:
    """Points per generation and kernel: compiled, failed (by reason), over budget."""
    reasons = points.apply(lambda r: r["status"] if r["status"] == OK else reason(r), axis=1)
    table = points.assign(outcome=reasons).groupby(["generation", "kernel", "outcome"]).size()
    return table.rename("points").reset_index()


def summary_dict(
    points: pd.DataFrame,
    dispatch: pd.DataFrame,
    same_program: pd.DataFrame,
    *,
    settings: dict[str, Any],
    libtpu: str,
    run_s: float,
    dtype_probe: pd.DataFrame | None = None,
) -> dict[str, Any]:
    T = int(points["T"].max())
    return {
        "label": "compiled for TPU on a CPU with libtpu, not executed",
        "libtpu": libtpu,
        "run_s": run_s,
        "points": int(len(points)),
        "compiled": int((points.status == OK).sum()),
        "status_counts": status_counts(points).to_dict(orient="records"),
        "seed_tables": {
            g: seed_format_table(points, g).to_dict(orient="records") for g in settings["generations"]
        },
        "mechanism": mechanism(points, 4096 if 4096 in set(points["T"]) else T).to_dict(orient="records"),
        "fix_verdict": fix_verdict(points, T).to_dict(orient="records"),
        "clocks": clocks_table(list(settings["generations"])).to_dict(orient="records"),
        "reporter_dtype": [] if dtype_probe is None else _dtype_rows(dtype_probe),
        "dispatch_verdict": dispatch_verdict(dispatch, same_program),
        "dispatch": dispatch.to_dict(orient="records"),
        "dispatch_same_program": same_program.to_dict(orient="records"),
        "settings": settings,
    }


def _dtype_rows(probe: pd.DataFrame) -> list[dict[str, Any]]:
    rows = probe.assign(
        outcome=probe.apply(lambda r: r["status"] if r["status"] == OK else reason(r), axis=1)
    )
    return rows[["generation", "kernel", "variant", "T", "dtype", "outcome"]].to_dict(orient="records")


def _md_records(records: list[dict[str, Any]]) -> str:
    return markdown.table(pd.DataFrame(records)) if records else "(none)"


def _fix_sentence(rows: list[dict[str, Any]]) -> str:
    parts = [
        f"{label_short(r['generation'])} T={r['T']}: `fori_loop` {r['fori / python']:.1f}×, "
        f"best portable fix `{r['best portable fix']}` {r['fix / python']:.2f}×"
        for r in rows
    ]
    return "; ".join(parts)


def label_short(generation: str) -> str:
    return f"TPU {generation}"


def summary_markdown(summary: dict[str, Any]) -> str:
    """summary.md at issue size: every number labelled as compiled on a CPU and not executed."""
    quick = bool(summary["settings"].get("quick", False))
    mech = summary["mechanism"]
    body = "; ".join(
        f"{label_short(m['generation'])} {m['fori: body bundles x trips']} (reduction in the body: "
        f"{'yes' if m['fori: reduction in body'] else 'no'}; hoisted {m['hoisted: body bundles']}, "
        f"scalar_carry {m['scalar_carry: body bundles']})"
        for m in mech
    )
    closes = [r for r in summary["fix_verdict"] if r.get("fix closes the gap")]
    intro = [
        markdown.smoke_notice(quick),
        "",
        f"**Compiled for TPU on a CPU with libtpu {summary['libtpu']}, not executed**: {summary['compiled']} of "
        f"{summary['points']} points compiled in {summary['run_s']:.0f} s; the rest are listed with their reason. "
        "Times are a static estimate from libtpu's final VLIW bundles: one bundle per cycle, no stalls, at each "
        "generation's clock (v5e/v6e clocks implied from published peak numbers), the reporter's kernel in bfloat16 "
        "(Mosaic TPU rejects his float16) at his B=512. Ratios: `fori_loop` (or the fix) over the Python loop.",
    ]
    bullets = [
        "- **The reporter's gap on Mosaic TPU (static estimate):** "
        + _fix_sentence(summary["fix_verdict"])
        + ".",
        "- **Why:** Mosaic TPU keeps the cross-lane reduction `X_i.sum()` inside `fori_loop`'s body, so each step "
        f"costs its bundles again (body bundles x trips: {body}); the Python loop computes the sum once per program.",
        "- **The fix here:** hoist the sum by hand (`hoisted`) or carry the scalar (`scalar_carry`), unrolled by 8: "
        + (
            "it closes the gap on " + ", ".join(label_short(r["generation"]) for r in closes)
            if closes
            else "it narrows the gap but closes it on no generation"
        )
        + "; even the one-scalar loop costs 4–7 bundles per step where the Python loop adds in about one.",
        f"- **equinox#192 on a TPU v3-8 (compiled, not run):** {summary['dispatch_verdict']}",
        "- **Not measured:** nothing ran on a TPU; no number here is a TPU's time.",
    ]
    folded: list[str] = []
    for generation, rows in summary["seed_tables"].items():
        folded += markdown.details(f"Seed table: {label(generation)}", [_md_records(rows)])
    folded += markdown.details(
        "The reporter's float16 on Mosaic TPU", [_md_records(summary["reporter_dtype"])]
    )
    folded += markdown.details("Mechanism (seed kernel; Mosaic TPU)", [_md_records(mech)])
    folded += markdown.details(
        "fori_loop vs Python loop at the largest T (static)", [_md_records(summary["fix_verdict"])]
    )
    folded += markdown.details("Clocks", [_md_records(summary["clocks"])])
    folded += markdown.details(
        "equinox#192 step compiled for a v3-8",
        [_md_records(summary["dispatch"]), "", _md_records(summary["dispatch_same_program"])],
    )
    title = "TPU compile study (jax#20909, equinox#192): compiled for TPU on a CPU, not executed"
    return markdown.answer_page(title, intro, bullets, folded)


def not_measured_summary(status: topology.LibtpuStatus) -> tuple[dict[str, Any], str]:
    """What the study writes where libtpu is missing: the reason, and nothing else."""
    summary = {"label": "not measured", "measured": False, "reason": status.reason}
    return summary, f"# TPU compile study\n\n**{status.reason}**: nothing was compiled.\n"
