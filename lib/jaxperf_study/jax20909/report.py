"""summary.json and summary.md of the loop study: an issue-ready answer to jax-ml/jax#20909."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from jaxperf.loops import report_kernel
from jaxperf.loops.engine import Results
from jaxperf.loops.engine import per_step as engine_per_step
from jaxperf.markdown import number

from .. import goals as rule
from .. import pages as md
from . import advice, analysis, answer, compile_facts, family, runs
from .mechanism import verdict as xla_verdict
from .sweep import MODE_LABELS
from .vocab import SEED_SETUP, TPU_WHY, seed_issue_table

HEADLINE_COLUMNS = (
    "mode kernel T loop_form unroll lower_ms compile_ms ms_per_call ms_q25 ms_q75 ms_vs_python ms_vs_python_q25 ms_vs_python_q75 "
    "compile_vs_fori1 error_vs_tolerance roofline_ms ms_vs_roofline batch"
).split()
RECOMMENDATION_COLUMNS = (
    "T loop_form unroll ms_per_call compile_ms ms_vs_python compile_vs_fori1 goal_met".split()
)


@dataclasses.dataclass(frozen=True)
class LoopResults:
    """Everything one run of notebook 02 measured, as the report reads it."""

    head: pd.DataFrame  # analysis.headline (+ roofline columns), study and harness modes together
    recommendation: pd.DataFrame
    not_measured: pd.DataFrame
    variants: pd.DataFrame
    mechanism: list[dict[str, Any]]  # mechanism.evidence rows (XLA:CPU)
    bandwidth: dict[str, float]  # roofline.measure_bandwidth
    quick: bool
    family_runs: tuple[Results, ...] = ()  # the engine on the study's kernels (family_forms)
    fix: Results | None = None  # the engine on the reporter's kernel in fix_forms
    readers: tuple[Results, ...] = ()  # the engine on the readers' kernels
    harness: pd.DataFrame | None = None  # harness.run's rows (first and second calls), pooled over processes
    ranges: pd.DataFrame | None = None  # runs.process_ranges: each ratio's median over processes, [min, max]
    compiles: dict[str, Any] | None = None  # compile_facts.compile_summary of runs.compiles
    backend: str = "cpu"  # where it ran: on a GPU/TPU the compiled kernel is the quoted mode

    @property
    def mode(self) -> str:
        """The timed mode the answer quotes: XLA:CPU on a CPU, the compiled kernel on a device."""
        return "xla" if self.backend == "cpu" else "pallas"

    def seed_rows(self) -> list[dict[str, Any]]:
        """The seed's rows; where a mode ran in several processes, ``ratio`` is the median over them
        (``ratio_runs``) with its ``lo``/``hi``: one value per (mode, T) everywhere it is stated."""
        rows = analysis.seed_reproduction(self.head)
        if self.ranges is None or not len(self.ranges):
            return rows
        fori = self.ranges[(self.ranges.kernel == "seed") & (self.ranges.variant == "fori u=1")]
        by = {(r.mode, int(r.T)): r for r in fori.itertuples()}
        for row in rows:
            hit = by.get((row["mode"], row["T"]))
            if hit is not None and hit.n >= 2:
                row.update(ratio=float(hit.median), ratio_lo=float(hit.lo), ratio_hi=float(hit.hi))
        return rows

    def per_step(self) -> pd.DataFrame:
        return runs.per_step(self.family_runs)

    def family(self) -> pd.DataFrame:
        return family.table(self.head, self.per_step())

    def advice_rows(self) -> list[dict[str, Any]]:
        fix = self.fix.per_step() if self.fix is not None else engine_per_step(pd.DataFrame())
        return advice.measured(self.head, self.mode, backend=self.backend) + advice.static(fix)

    def compile_facts(self) -> list[dict[str, Any]]:
        facts = []
        device = f"compiled on this {self.backend.upper()} (the kernel alone)"
        for mode, where in (
            ("xla", "XLA:CPU, plain jit"),
            ("xla_harness", "XLA:CPU in his harness"),
            ("pallas", device),
            ("pallas_harness", f"his harness on this {self.backend.upper()}"),
        ):
            rows = [r for r in self.seed_rows() if r["mode"] == mode]
            if rows:
                facts.append(
                    compile_facts.matched(
                        [r["T"] for r in rows],
                        [number(r["python_compile_ms"]) for r in rows],
                        [number(r["fori_compile_ms"]) for r in rows],
                        where=where,
                    )
                )
        return facts

    def compile_flags(self) -> list[dict[str, Any]]:
        if self.harness is None or "first_minus_second_ms" not in self.harness:
            return []
        rows = self.harness.assign(compile_ms=self.harness["first_minus_second_ms"])
        return compile_facts.harness_flags(rows.to_dict(orient="records"))

    def goals(self) -> dict[str, Any]:
        seed = self.head[(self.head["mode"] == self.mode) & (self.head.kernel == "seed")]
        roof = None
        if len(seed) and "roofline_ms" in seed:
            roof = float(seed.loc[seed["T"] == seed["T"].max(), "roofline_ms"].iloc[0])
        fresh = self.bandwidth.get("gb_per_s_fresh_output")
        fresh_roof = roof * self.bandwidth["gb_per_s"] / fresh if roof and fresh else None
        return analysis.goals(
            self.head, roofline_ms=roof, fresh_output_roofline_ms=fresh_roof, mode=self.mode, quick=self.quick
        )

    def device(self) -> dict[str, Any]:
        """On a GPU/TPU: each kernel's static counts beside its measured ms, and the form to write."""
        runs = self.family_runs
        table = analysis.static_vs_measured(self.head, runs)
        spread = table.groupby("kernel").ns_per_cycle.agg(["min", "max", "size"]) if len(table) else table
        ns = [dict(kernel=k, lo=r["min"], hi=r["max"], n=int(r["size"])) for k, r in spread.iterrows()]
        best = analysis.best_forms(self.head, runs) if self.backend != "cpu" else []
        return {"static_vs_measured": _records(table), "ns_per_static_cycle": ns, "best_forms": best}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


def summary_dict(results: LoopResults) -> dict[str, Any]:
    """summary.json's content: headline numbers, seed_reproduction, goals, mechanism, the family
    of kernels, the advice, the compile facts and the readers' kernels."""
    r = results
    failed = r.variants[r.variants["status"] != "timed"]
    frame = r.family()
    rows = r.advice_rows()
    return {
        "smoke_run": r.quick,
        "headline": r.head[[c for c in HEADLINE_COLUMNS if c in r.head]].to_dict(orient="records"),
        "seed_reproduction": r.seed_rows(),
        "goals": r.goals(),
        "recommendation": r.recommendation.to_dict(orient="records"),
        "mechanism_xla": {"verdict": xla_verdict(r.mechanism), "evidence": r.mechanism},
        "bandwidth": r.bandwidth,
        "family": _records(frame),
        "family_verdicts": family.verdicts(frame),
        "family_answer": family.answer(frame),
        "per_step": _records(r.per_step()),
        "advice": {
            "rows": rows,
            "best": advice.best(rows),
            "by_key": advice.by_key(rows),
            "settle": advice.SETTLE,
        },
        "fix_per_step": _records(r.fix.per_step()) if r.fix is not None else [],
        "compile_facts": r.compile_facts(),
        "harness_negative_compiles": r.compile_flags(),
        "readers": [report_kernel.summary(k) for k in r.readers],
        **r.device(),
        "issue_text": answer.issue_text(r, frame, rows),
        "ratio_runs": [] if r.ranges is None else _records(r.ranges),
        "reporter": compile_facts.reporter_rows(),
        **(r.compiles or {}),
        "not_measured": r.not_measured.to_dict(orient="records"),
        "did_not_lower": failed[["mode", "kernel", "T", "variant", "status"]].to_dict(orient="records"),
    }


def side_by_side(results: LoopResults) -> pd.DataFrame:
    """fori_loop over the Python loop on the reporter's kernel, per T, one column per source in
    its own unit: his A6000 (ms per call), XLA:CPU and XLA:CPU in his harness (ms per call,
    median over processes [smallest, largest]), and each compiler's work per program (static)."""
    ranges = results.ranges if results.ranges is not None else pd.DataFrame(columns=["mode", "T", "variant"])
    ranges = (
        ranges[(ranges.get("kernel") == "seed") & (ranges.variant == "fori u=1")] if len(ranges) else ranges
    )
    static = (results.compiles or {}).get("static_ratio", [])
    reporter = {r["T"]: r["ratio"] for r in compile_facts.reporter_rows()}
    Ts = sorted({*reporter, *map(int, ranges["T"]), *(r["T"] for r in static)})
    rows = []
    for T in Ts:
        row: dict[str, Any] = {"T": T, "reporter A6000 (ms per call)": _ratio(reporter.get(T))}
        for mode, label in (
            ("xla", "XLA:CPU (ms per call)"),
            ("xla_harness", "XLA:CPU in his harness (ms per call)"),
            ("pallas", f"{results.backend.upper()}, compiled (ms per call)"),
            ("pallas_harness", f"{results.backend.upper()} in his harness (ms per call)"),
        ):
            if mode.startswith("pallas") and results.backend == "cpu":
                continue
            hit = ranges[(ranges["mode"] == mode) & (ranges["T"] == T)]
            row[label] = "{median:.2f}× [{lo:.2f}, {hi:.2f}]".format(**hit.iloc[0]) if len(hit) else "—"
        for compiler in dict.fromkeys(r["compiler"] for r in static):
            ratio = next(
                (r["fori_vs_python"] for r in static if (r["compiler"], r["T"]) == (compiler, T)), None
            )
            unit = "bundles" if "TPU" in compiler else "instructions"
            row[f"{compiler} ({unit} per program, static)"] = _ratio(ratio)
        rows.append(row)
    return pd.DataFrame(rows)


def _ratio(value: Any) -> str:
    return "—" if value is None or value != value else f"{value:.2f}×"


def seed_tables_markdown(head: pd.DataFrame, kernel: str = "seed") -> str:
    """The reporter's table format for every mode timed, as Markdown."""
    return "\n\n".join(
        f"**{MODE_LABELS[mode]}**, kernel `{kernel}`\n\n" + md.table(analysis.seed_table(head, mode, kernel))
        for mode in dict.fromkeys(head.loc[head.kernel == kernel, "mode"])
    )


def _n(value: Any) -> str:
    return md.cell(value) if value is not None else "n/a"


def goal_lines(goals: dict[str, Any], quick: bool) -> list[str]:
    """One bullet per issue 11 goal, with the numbers that decide it (never judged in a smoke run)."""
    rep, fix, roof = goals["reproduction"], goals["fix"], goals["roofline"]
    ratios = ", ".join(f"T={T}: {_n(x)}" for T, x in zip(rep["Ts"], rep["ratios"]))
    tying = fix.get("variants_tying_it_per_T") or {}
    meeting = "; ".join(
        f"T={T}: {', '.join(v) if v else 'none'}"
        + (f" (not resolved: {', '.join(tying[T])})" if tying.get(T) else "")
        for T, v in (fix["variants_meeting_it_per_T"] or {}).items()
    )
    return [
        f"- Reproduction (fori/Python grows from the first T to the largest, >= 2 at the largest T, both judged on the "
        f"per-pair interquartile range; Python compile doubles, fori's within 1.5x): "
        f"{rule.text(rep.get('verdict'), quick, tie_text='not resolved')} ({'ratio of medians: ' + ratios if ratios else 'no T with both loops'})"
        + (f"; missed: {'; '.join(rep.get('misses') or [])}" if rep.get("misses") and not quick else "")
        + (f"; not resolved on: {'; '.join(rep.get('ties') or [])}" if rep.get("ties") and not quick else "")
        + ".",
        f"- Fix (a portable loop: hand-unrolled, hoisted or scalar carry, within 1.05x of the Python loop and 1.5x of fori's compile, "
        f"at every T, judged on each per-pair ratio's interquartile range): {rule.text(fix.get('verdict'), quick, tie_text='not resolved')} "
        f"({meeting or 'n/a'}).",
        f"- Roofline (best fix within 1.5x at the largest T): {rule.text(roof.get('verdict'), quick, tie_text='not resolved')} "
        f"(best fix {_n(roof['best_fix_ms'])} ms vs {_n(roof['roofline_ms'])} ms: {_n(roof['best_fix_vs_roofline'])}x; "
        f"at the bandwidth of a copy into a fresh output, as each call writes one: "
        f"{_n(roof['fresh_output_roofline_ms'])} ms, {_n(roof['best_fix_vs_fresh_output_roofline'])}x).",
    ]


def summary_markdown(results: LoopResults, *, device: str) -> str:
    """An issue-ready answer to jax-ml/jax#20909: five bullets in the issue's order, the rest folded."""
    r = results
    frame = r.family()
    rows = r.advice_rows()
    intro = [
        md.smoke_notice(r.quick),
        "",
        f"Measured on: {device}. Memory bandwidth (large copy, same run): {_n(r.bandwidth.get('gb_per_s'))} GB/s "
        f"in place, {_n(r.bandwidth.get('gb_per_s_fresh_output'))} GB/s into a fresh output. Ratios: `fori_loop` "
        "over the Python loop, each in its own unit (ms per call measured; instructions or bundles per loop step "
        "counted in compiled code).",
    ]
    if r.backend == "tpu":  # the kernel a v5e runs, and why
        batches = {int(t): int(b) for t, b in zip(r.head["T"], r.head.get("batch", [])) if b == b}
        intro.append(
            f"On a TPU v5e his kernel runs in float32 ({TPU_WHY}), at batch B per T {batches}: B=512 does "
            "not fit its 16 GiB in float32 from T=32768, and its core runs the programs one after another."
        )
    bullets = answer.bullets(r, frame, rows)
    folded = md.details(
        "Which kernels pay, per compiler (each column in its own unit)",
        [md.table(family.wide(frame)) if len(frame) else "not measured"],
    )
    folded += md.details(
        "What to write instead, per backend",
        [*advice.lines(rows), "", f"What would settle it on a GPU: {advice.SETTLE}."],
    )
    folded += md.details(
        "Issue-ready text for jax#20909",
        ["```", answer.issue_text(r, frame, rows), "```"],
    )
    found = r.device()
    if found["static_vs_measured"]:
        table = pd.DataFrame(found["static_vs_measured"]).round(3)
        folded += md.details(
            "Static count beside measured time, per kernel, T and form (ns per static cycle: ms per call "
            "over the static cycles of all programs; constant if the count predicted time)",
            [md.table(table)],
        )
    if found["best_forms"]:
        folded += md.details(
            f"Which form to write on this {r.backend.upper()} (fastest measured at each kernel's largest T)",
            [f"- {b['kernel']}, T={b['T']}: `{b['form']}`, {_n(b['ms_per_call'])} ms per call "
             f"({_n(b['vs_python'])}× the Python loop's; `fori_loop` {_n(b['fori_vs_python'])}×), "
             f"compile {_n(b['compile_ms'])} ms" for b in found["best_forms"]],
        )  # fmt: skip
    folded += md.details("Goals and their verdicts", goal_lines(r.goals(), r.quick))
    folded += md.details(f"The reporter's numbers ({SEED_SETUP})", [md.table(seed_issue_table())])
    folded += md.details(
        "fori_loop ÷ Python loop on his kernel, per T, each source in its own unit",
        [md.table(side_by_side(r))],
    )
    folded += md.details("The reporter's table, measured here", [seed_tables_markdown(r.head)])
    flags = r.compile_flags()
    if flags:
        folded += md.details(
            "Harness compile estimates left out (first call - second call < 0)",
            [md.table(pd.DataFrame(flags))],
        )
    rec = r.recommendation
    for (mode, kernel), part in rec.groupby(["mode", "kernel"], sort=False) if len(rec) else []:
        folded += md.details(
            f"{MODE_LABELS[mode]}, kernel {kernel}: smallest unroll within 5% of each form's best",
            [md.table(part[[c for c in RECOMMENDATION_COLUMNS if c in part]].astype(object).fillna("n/a"))],
        )
    for run in (r.fix, *r.readers):
        if run is not None:
            folded += md.details(f"The engine on `{run.kernel}`", [report_kernel.markdown(run)])
    if len(r.not_measured):
        folded += md.details(
            "Not measured here (never simulated)",
            [
                f"- {MODE_LABELS.get(n['mode'], n['mode'])}: {n['reason']}"
                for _, n in r.not_measured.drop_duplicates(["mode", "reason"]).iterrows()
            ],
        )
    title = "Pallas loops: which kernels pay for fori_loop, per compiler (jax-ml/jax#20909)"
    return md.answer_page(title, intro, bullets, folded)
