"""The five answer bullets of notebook 02's summary, in the issue's order: which kernels pay,
where the reporter's gap is reproduced (measured ms only), why per compiler, what to write
instead, compile. Each quotes its numbers with their unit and kind (measured, an analogue, the
interpreter's, a static count); :func:`issue_text` is the same, at most ten lines, for jax#20909."""

from __future__ import annotations

from typing import Any

import pandas as pd

from jaxperf.loops import verdict
from jaxperf.loops.engine import per_step as engine_per_step

from .. import goals as rule
from . import advice, compile_facts, family
from .mechanism import verdict as xla_verdict

REPORTER = "the reporter: 2.42× at T=65536 on an RTX A6000 (Pallas Triton, ms per call)"
NO_DEVICE = "no GPU or TPU ran here, so no compiled kernel was timed"


def _seed(rows: list[dict[str, Any]], mode: str) -> dict[str, Any] | None:
    mine = [r for r in rows if r["mode"] == mode]
    return mine[-1] if mine else None


def _pair(row: dict[str, Any]) -> str:
    pair = row.get("ratio_pair") or {}
    if all(pair.get(q) is not None for q in ("median", "q25", "q75")):
        return f"{pair['median']:.2f}× [{pair['q25']:.2f}, {pair['q75']:.2f}]"
    return f"{row['ratio']:.2f}×"


def reproduced(rows: list[dict[str, Any]], goals: dict[str, Any], quick: bool) -> str:
    """Measured ms ratios only, each labelled: XLA:CPU in plain jit and in his harness (an
    analogue), the interpreter, a compiled kernel where a device ran; beside his."""
    parts = []
    device = _seed(rows, "pallas")
    if device:
        parts.append(f"the compiled kernel on this device {_pair(device)} at T={device['T']}")
    own = _seed(rows, "pallas_harness")
    if own:
        parts.append(f"the compiled kernel in his own harness {own['ratio']:.2f}× at T={own['T']}")
    xla, harness, interp = _seed(rows, "xla"), _seed(rows, "xla_harness"), _seed(rows, "pallas_interpret")
    if xla:
        verdict = rule.text(
            goals["reproduction"].get("verdict"),
            quick,
            met_text="shown",
            missed_text="not shown",
            tie_text="not resolved",
        )
        parts.append(
            f"XLA:CPU, an analogue (plain `jax.jit` of his arithmetic, another compiler), {_pair(xla)} at T={xla['T']} (the pattern: {verdict})"
        )
    if harness:
        parts.append(
            f"the same in his own harness (16 fresh batches per call) {harness['ratio']:.2f}× at T={harness['T']}"
        )
    if interp:
        parts.append(f"the Pallas interpreter (its own timings) {_pair(interp)} at T={interp['T']}")
    tail = "" if device else f"; {NO_DEVICE}"
    where = "; ".join(parts)
    return (
        f"- **Reproduced where** (fori_loop ÷ Python loop, ms per call, per pair): {where}; {REPORTER}{tail}."
    )


def why(per_step: pd.DataFrame, xla_line: str) -> str:
    """The reporter's kernel, per compiler: each target's verdict with its own per-step numbers and
    the classes of the compiled code where fori_loop's extra work lies (:func:`verdict.per_target`)."""
    rows = verdict.static(per_step[per_step.kernel == "seed"]) if len(per_step) else pd.DataFrame()
    lines = verdict.per_target(rows) if len(rows) else []
    static = "per loop step, fori_loop against the Python loop (static counts, compiled on a CPU): "
    static = f"{static}{' '.join(lines)} " if lines else ""
    return (
        "- **Why, per compiler** (the reporter's kernel; every element of its `[128, D]` carry receives the "
        f"same scalar additions, which an unrolled loop can fold): {static}XLA:CPU: {xla_line.split(': ', 1)[-1]}"
    )


def instead(rows: list[dict[str, Any]]) -> str:
    best = advice.best(rows)
    if not best:
        return "- **What to write instead:** not measured (no candidate form ran)."
    per = "; ".join(f"{b}: {t}" for b, t in best.items())
    head = "- **What to write instead** (the reporter's kernel, per backend, only where the data shows it)"
    return f"{head}: {per}. What would settle the static ones: {advice.SETTLE}."


def compile_bullet(facts: list[dict[str, Any]], flags: list[dict[str, Any]]) -> str:
    text = "- **Compile** (matched T ranges): " + " ".join(compile_facts.sentence(f) for f in facts)
    if flags:
        text += f" {len(flags)} first-minus-second compile estimate(s) of his harness came out negative and are left out (noise larger than the compile)."
    return text


def bullets(results: Any, frame: pd.DataFrame, advice_rows: list[dict[str, Any]]) -> list[str]:
    """The five bullets of a :class:`~.report.LoopResults` (``frame``: its family table)."""
    r = results
    per_step = r.fix.per_step() if r.fix is not None else engine_per_step(pd.DataFrame())
    return [
        "- **Which kernels pay:** " + family.answer(frame),
        reproduced(r.seed_rows(), r.goals(), r.quick),
        why(per_step, xla_verdict(r.mechanism)),
        instead(advice_rows),
        compile_bullet(r.compile_facts(), r.compile_flags()),
    ]


def issue_text(results: Any, frame: pd.DataFrame, advice_rows: list[dict[str, Any]]) -> str:
    """At most ten lines for jax#20909, rendered from a :class:`~.report.LoopResults`."""
    rows, facts = results.seed_rows(), results.compile_facts()
    xla, harness = _seed(rows, "xla"), _seed(rows, "xla_harness")
    steps = results.fix.per_step() if results.fix is not None else None
    per_step = verdict.static(steps[steps.kernel == "seed"]) if steps is not None else pd.DataFrame()
    mech = " ".join(verdict.per_target(per_step)) if len(per_step) else "not read."
    device = _seed(rows, "pallas")
    lines = [
        "Re #20909, from a study on jax 0.12 (no GPU was available: the GPU numbers are static counts of compiled code, not times):"
        if device is None
        else f"Re #20909: the compiled kernel timed on this device, fori/Python {_pair(device)} ms at T={device['T']}:",
        "- Reproduced on XLA:CPU as an analogue (plain jit of the same arithmetic): "
        + (f"fori/Python {_pair(xla)} ms at T={xla['T']}" if xla else "not run")
        + (f", {harness['ratio']:.2f}x in your harness at T={harness['T']}." if harness else "."),
        "- Which kernels pay: " + family.answer(frame),
        "- Mechanism, per target (work per loop step, fori vs Python, static counts; where the extra lies, read "
        f"from the compiled code): {mech}",
        "- What helps: " + "; ".join(f"{b}: {t}" for b, t in advice.best(advice_rows).items()) + ".",
        "- Compile: " + " ".join(compile_facts.sentence(f) for f in facts),
        "- Not measured: any GPU time; `fori_loop(unroll=k>1)` still raises NotImplementedError on Pallas Triton.",
    ]
    return "\n".join(lines[:10])
