"""summary.json's numbers and summary.md's text for the runs-ahead study (notebook 07).

The answer leads: which methods wait for each call (the verdicts), what that costs in
the seed's loop here (eqx.filter_jit's per-pair it/s ratio to jax.jit where the loader's
host time is 0.3-1x the step's device time), and since which release (notebook 03's
measurement, read from its summary.json when present). Then the sections, and the
issue-ready report for Equinox (:mod:`jaxperf.dispatch.runahead.issue`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import markdown
from ... import runs_ahead as rule
from ...markdown import fmt_stat
from ...paths import PROJECT_ROOT, relative
from . import loop_analysis as la
from .figures import SHORT
from .methods import PATCHED, label
from .seed_loop import REFERENCE, SLOW

CPU_LIMITS = (
    'On this CPU the step\'s "device" is the same two cores the loader runs on: XLA:CPU runs the step on '
    "worker threads while the loader's numpy work runs in the main thread, so they overlap only as far as "
    "a free core allows, and other processes on a shared machine take cores from both. The bounds are "
    "measured, not assumed; where even `jax.jit` stays near `1 / (H + D)` the CPU cannot show the cost of "
    "waiting, and the enqueue-vs-blocked verdict above is the robust signal. On an accelerator the step runs "
    "beside the host, and a call that waits turns `1 / max(H, D)` into `1 / (H + D)`: half the rate at H = D."
)


def release_from_versions(output_root: Path | None) -> dict[str, Any] | None:
    """Notebook 03's measured answer (its summary.json's ``filter_jit_runahead``), from this
    run's output root first, then the committed results; None when neither has it."""
    roots = [r for r in (output_root, PROJECT_ROOT) if r is not None]
    for root in roots:
        path = Path(root) / "results" / "cpu" / "versions" / "summary.json"
        if path.exists():
            part = json.loads(path.read_text()).get("filter_jit_runahead")
            if part and part.get("release_that_waits") and not part.get("smoke_run"):
                return {
                    "release": part["release_that_waits"],
                    "previous": part["previous_release"],
                    "jax": part["jax"],
                    "source": relative(path),
                }
    return None


def verdict_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdicts as they read in the summary: one row per (method, donated)."""
    return pd.DataFrame(
        {
            "method": [label(m) for m in verdicts["method"]],
            "donated": verdicts["donated"].map({True: "yes", False: "no"}),
            "enqueue ms/call": verdicts["enqueue_ms_per_call"].round(2),
            "blocked ms/call": verdicts["blocked_ms_per_call"].round(1),
            "host CPU ms/call": verdicts["host_cpu_ms_per_call"].round(2),
            "enqueue / blocked": [
                fmt_stat({"median": m, "q25": a, "q75": b})
                for m, a, b in zip(verdicts["ratio_median"], verdicts["ratio_q25"], verdicts["ratio_q75"])
            ],
            "verdict": verdicts["verdict"],
            "margin": verdicts["margin"].round(2),
        }
    )


def best_setup(loop_summaries: dict[str, pd.DataFrame]) -> str | None:
    """The CPU set-up where jax.jit overlaps most (its train-step overlap nearest H = D)."""
    overlaps = {s: la.jit_overlap(t) for s, t in loop_summaries.items()}
    scored: dict[str, float] = {
        s: float(v["overlap"]["median"]) for s, v in overlaps.items() if v.get("measured")
    }
    scored = {s: v for s, v in scored.items() if np.isfinite(v)}
    if not scored:
        return next(iter(loop_summaries), None)
    return max(scored, key=lambda s: scored[s])


def waiting_cost(summary: pd.DataFrame, method: str = SLOW) -> dict[str, Any]:
    """``method``'s per-pair it/s ratio to jax.jit in the train-step cells with 0.3 <= H/D <= 1:
    the median of the cells' medians, the lowest q25 and highest q75, and the cells."""
    band = summary[
        (summary["method"] == method)
        & (summary["step"] == "train")
        & summary["H_over_D"].between(*la.GOAL_BAND)
    ]
    if band.empty:
        return {"measured": False}
    return {
        "measured": True,
        "method": method,
        "cells": len(band),
        "median": float(band["ratio_to_jit_median"].median()),
        "q25": float(band["ratio_to_jit_q25"].min()),
        "q75": float(band["ratio_to_jit_q75"].max()),
        "tie": bool((band["ratio_to_jit_q75"] >= 1.0).all()),
        "H_over_D": [float(v) for v in band["H_over_D"]],
    }


def _of(verdicts: pd.DataFrame, method: str) -> dict[str, Any] | None:
    rows = verdicts[(verdicts["method"] == method) & (~verdicts["donated"])]
    return rows.iloc[0].to_dict() if len(rows) else None


def answer(
    verdicts: pd.DataFrame,
    cost: dict[str, Any],
    release: dict[str, Any] | None,
    *,
    quick: bool,
    jit: dict[str, Any] | None = None,
    where: str = "on this CPU",
) -> str:
    """The one to three sentences that lead summary.md (and that the README can quote).
    ``jit`` is jax.jit's overlap (:func:`~jaxperf.dispatch.runahead.loop_analysis.jit_overlap`) where the
    loop ran: when it is under half, the loop's ratio is reported as not showing the cost."""
    if quick:
        return "Smoke run: nothing is judged."
    waits = [label(m) for m in dict.fromkeys(verdicts[verdicts["verdict"] == rule.WAITS]["method"])]
    fj, jj = _of(verdicts, SLOW), _of(verdicts, REFERENCE)
    parts = []
    if fj and jj:
        parts.append(
            f"`eqx.filter_jit` {'waits for each call' if fj['verdict'] == rule.WAITS else fj['verdict']}: on a step "
            f"of {fj['blocked_ms_per_call']:.0f} ms it takes {fj['enqueue_ms_per_call']:.1f} ms per call just to "
            f"enqueue, where `jax.jit` takes {jj['enqueue_ms_per_call']:.2f} ms"
            + (f" (methods that wait: {', '.join(waits)})" if waits else "")
            + "."
        )
    if release:
        parts.append(
            f"It has since Equinox {release['release']} ({release['previous']} runs ahead; jax {release['jax']})."
        )
    if cost.get("measured"):
        stats = {k: cost[k] for k in ("median", "q25", "q75")}
        measured = (
            f"in the seed's loop {where}, with the loader's host time at 0.3-1x the step's, it "
            f"{markdown.versus(stats)} `jax.jit`: {markdown.ratio(stats)} its it/s"
        )
        if jit and jit.get("measured") and not jit["shows_overlap"]:
            parts.append(
                f"The loop cannot show what waiting costs {where}: `jax.jit` itself overlaps the loader with the "
                f"step by only {jit['overlap']['median']:.2f} (1 = fully) there; {measured}. On an accelerator a "
                "waiting call turns 1/max(H, D) into 1/(H + D): 0.5x at H = D."
            )
        else:
            parts.append(measured[0].upper() + measured[1:] + ".")
    return " ".join(parts)


def loop_table(summary: pd.DataFrame) -> pd.DataFrame:
    """The chosen set-up's loop cells as they read in the summary."""
    rows = []
    for r in summary.itertuples():
        rows.append(
            {
                "step": r.step,
                "loader x D": f"{r.cost_fraction:g}",
                "H ms": round(r.H_ms, 1),
                "D ms": round(r.D_ms, 1),
                "method": SHORT.get(r.method, r.method),
                "it/s": fmt_stat(
                    {"median": r.it_per_s_median, "q25": r.it_per_s_q25, "q75": r.it_per_s_q75}, 1
                ),
                "vs jax.jit": fmt_stat(
                    {"median": r.ratio_to_jit_median, "q25": r.ratio_to_jit_q25, "q75": r.ratio_to_jit_q75}
                ),
                "overlap": fmt_stat({"median": r.overlap_median, "q25": r.overlap_q25, "q75": r.overlap_q75}),
                "bounds it/s": f"{r.serial_bound_it_per_s:.1f} .. {r.overlap_bound_it_per_s:.1f}",
            }
        )
    return pd.DataFrame(rows)


def headline(
    verdicts: pd.DataFrame,
    loop_summaries: dict[str, pd.DataFrame],
    setups: pd.DataFrame,
    release: dict[str, Any] | None,
    *,
    backend: str,
    quick: bool,
) -> dict[str, Any]:
    """summary.json's numbers: the verdicts, the loop per set-up, the cost of waiting, the goals."""
    chosen = best_setup(loop_summaries)
    table = loop_summaries.get(chosen, pd.DataFrame()) if chosen else pd.DataFrame()
    cost = waiting_cost(table) if len(table) else {"measured": False}
    judged = not quick
    return {
        "question": "issue 21: does eqx.filter_jit wait for every call, what does it cost in the seed's loop, since which release?",
        "answer": answer(
            verdicts,
            cost,
            release,
            quick=quick,
            jit=la.jit_overlap(table) if len(table) else None,
            where="on this CPU" if backend == "cpu" else f"on the {backend}",
        ),
        "smoke_run": quick,
        "backend": backend,
        "backend_label": "on this CPU" if backend == "cpu" else f"on the {backend}",
        "verdict_rule": {"boundary": rule.BOUNDARY, "heavy_enough_below": rule.HEAVY_ENOUGH_BELOW},
        "verdicts": verdicts.to_dict("records"),
        "release": release,
        "loop": {
            "setups": setups.to_dict("records"),
            "chosen_setup": chosen,
            "jit_overlap": {s: la.jit_overlap(t) for s, t in loop_summaries.items()},
            "filter_jit_cost": cost,
            "patched_cost": waiting_cost(table, PATCHED) if len(table) else {"measured": False},
            "tables": {s: t.to_dict("records") for s, t in loop_summaries.items()},
        },
        "goals": {
            "cached_filter_jit": la.goals(table)
            if judged and len(table)
            else {"measured": False, "reason": "smoke run" if quick else "no loop"},
            "judged_on": "CPU (host and device share two cores): reported as measured; the goal's backend is the GPU run",
        },
    }


def _bullets(summary: dict[str, Any], verdicts: pd.DataFrame) -> list[str]:
    """At most five answer bullets: the verdicts, the loop's cost, the overlap the CPU allows,
    the release, the change."""
    quick, loop = summary["smoke_run"], summary["loop"]
    waits = [label(m) for m in dict.fromkeys(verdicts[verdicts["verdict"] == rule.WAITS]["method"])]
    ahead = verdicts[verdicts["verdict"] == rule.RUNS_AHEAD]["method"].nunique()
    other = verdicts[~verdicts["verdict"].isin([rule.WAITS, rule.RUNS_AHEAD])]
    bullets = [
        f"- **Waits for each call:** {', '.join(waits) if waits else 'none'}; {ahead} other method(s) run ahead"
        + (f"; {len(other)} row(s) unclear or not judged" if len(other) else "")
        + " (enqueue vs blocked time per call on a heavy step; rule and margins folded below)."
    ]
    cost = loop["filter_jit_cost"]
    if cost.get("measured"):
        stats = {k: cost[k] for k in ("median", "q25", "q75")}
        bullets.append(
            f"- **The seed's loop, {summary['backend_label']}:** where the loader's host time is 0.3-1x the step's, "
            f"`eqx.filter_jit` {markdown.versus(stats)} `jax.jit` on params: {markdown.ratio(stats)} its it/s "
            f"({cost['cells']} cell(s), set-up `{loop['chosen_setup']}`)."
        )
    else:
        bullets.append(
            "- **The seed's loop:** no cell with the loader's host time at 0.3-1x the step's was measured."
        )
    jit = loop["jit_overlap"].get(loop["chosen_setup"], {})
    if jit.get("measured"):
        shows = jit["shows_overlap"]
        bullets.append(
            f"- **How much the host overlaps the step here:** `jax.jit`'s overlap {fmt_stat(jit['overlap'])} at "
            f"H/D = {jit['at_H_over_D']:.2f} (1 = `1/max(H, D)`, 0 = `1/(H + D)`). "
            + (
                "Enough for the loop to show the cost of waiting."
                if shows
                else "Under half: here even `jax.jit` hardly overlaps the loader with the step, so the loop cannot "
                "show what waiting costs (the ratio above is not that cost); the verdict is the signal, and a GPU "
                "run measures the loop."
            )
        )
    release = summary.get("release")
    bullets.append(
        f"- **Since Equinox {release['release']}** ({release['previous']} runs ahead, both on jax {release['jax']}; "
        "notebook 03's measurement)."
        if release
        else "- **Since which release:** not measured in this run; notebook 03 measures it."
    )
    fixed = verdicts[(verdicts["method"] == PATCHED) & (~verdicts["donated"])]
    goal = summary["goals"]["cached_filter_jit"]
    goal_text = (
        "`cached_filter_jit`'s goals: not measured (" + goal.get("reason", "") + ")"
        if not goal.get("measured")
        else f"`cached_filter_jit` ties with or beats `jax.jit` everywhere: {markdown.verdict(goal['ties_or_beats_jit_everywhere'], quick)}; "
        f">= {la.GOAL_VS_SLOW}x `eqx.filter_jit` in the band: {markdown.verdict(goal['at_least_1_3x_filter_jit_in_band'], quick)}"
    )
    bullets.append(
        "- **The proposed change** (wait only when the function traced an error check), patched in: "
        + (f"it {fixed.iloc[0]['verdict']}; " if len(fixed) else "")
        + f"a failing `eqx.error_if` still raises Equinox's error at the call. {goal_text}."
    )
    return bullets


def render(
    summary: dict[str, Any],
    verdicts: pd.DataFrame,
    loop_summaries: dict[str, pd.DataFrame],
    setups: pd.DataFrame,
    failures: pd.DataFrame,
    issue_text: str,
) -> str:
    """summary.md at issue size: the answer in five bullets, everything else folded, the
    issue-ready report for Equinox last."""
    quick = summary["smoke_run"]
    intro = [markdown.smoke_notice(True), ""] if quick else []
    intro += [f"**Answer.** {summary['answer']}"]
    rule_text = (
        "Each method built for a heavy train step (device time far above any method's host time per call), "
        "checked to return the same (loss, params, opt_state) as `jax.jit` on params, then timed interleaved: "
        "blocked calls, and calls only enqueued and blocked once after the loop. Rule: *runs ahead* when the "
        f"upper quartile of enqueue/blocked per pair is below {rule.BOUNDARY}, *waits for each call* when the lower "
        f"quartile is above it, *unclear* when the IQR straddles it; *not judged* unless `jax.jit`'s own upper "
        f"quartile is below {rule.HEAVY_ENOUGH_BELOW}. Margin: the deciding quartile's distance from {rule.BOUNDARY}."
    )
    verdict_body = [rule_text, "", markdown.table(verdict_table(verdicts))]
    if len(failures):
        verdict_body += [
            "",
            "Could not run: " + "; ".join(f"{r.method}: {r.error}" for r in failures.itertuples()),
        ]
    folded = markdown.details("Runs ahead or not: every method", verdict_body)
    loop = summary["loop"]
    loop_body = [markdown.table(setups), ""]
    for setup, info in loop["jit_overlap"].items():
        if info.get("measured"):
            loop_body.append(
                f"- {setup}: `jax.jit`'s overlap at H/D = {info['at_H_over_D']:.2f}: {fmt_stat(info['overlap'])}; "
                f"best median over costs {info['best_median']:.2f}."
            )
    loop_body += ["", CPU_LIMITS if summary["backend"] == "cpu" else ""]
    for setup, table in loop_summaries.items():
        loop_body += [
            "",
            f"Set-up `{setup}`, per cell (ratios per pair):",
            "",
            markdown.table(loop_table(table)),
        ]
    folded += markdown.details("The seed's loop: set-ups, overlap, every cell", loop_body)
    patched = loop["patched_cost"]
    goal = summary["goals"]["cached_filter_jit"]
    goal_body = [
        "Goals for `jaxperf.cached_filter_jit` in the seed's loop (benchmark): ties with or beats `jax.jit` on "
        f"params in every cell (per-pair IQR reaching 1 or above); >= {la.GOAL_VS_SLOW}x `eqx.filter_jit` where "
        "the loader's host time is 0.3-1x the step's, on a backend where host and device overlap (the GPU run).",
        "",
        json.dumps(goal, indent=1, default=str)
        if goal.get("measured")
        else f"Not measured: {goal.get('reason', '')}.",
    ]
    if patched.get("measured"):
        goal_body += [
            "",
            f"`eqx.filter_jit` with the proposed change, same cells: {markdown.ratio(patched)} `jax.jit`'s it/s.",
        ]
    folded += markdown.details("Goals", goal_body)
    folded += markdown.details(
        "Issue-ready report for Equinox: eqx.filter_jit waits for every call", [issue_text]
    )
    title = "Today's Equinox path: does `eqx.filter_jit` wait for every call?"
    return markdown.answer_page(title, intro, _bullets(summary, verdicts), folded)
