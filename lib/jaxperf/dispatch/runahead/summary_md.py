"""summary.md of the runs-ahead study at issue size: the answer in five bullets, the verdicts,
the loop's cells and the goals folded, the issue-ready report for Equinox
(:mod:`jaxperf.dispatch.runahead.issue`) last. The numbers are :mod:`.report`'s."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ... import goals, markdown
from ... import runs_ahead as rule
from ...markdown import fmt_stat
from . import loop_analysis as la
from .figures import SHORT
from .methods import PATCHED, label
from .report import CPU_LIMITS


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
            f"({cost['cells']} loader cost(s), set-up `{loop['chosen_setup']}`)."
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
    bullets.append(
        "- **Since when:** Equinox's history names the change: commit 141c18d (2024-10-01, \"JAX 0.4.33 "
        'changes how errors work"), which added the marker and its `block_until_ready`.'
    )
    fixed = verdicts[(verdicts["method"] == PATCHED) & (~verdicts["donated"])]
    goal = summary["goals"]["cached_filter_jit"]
    goal_text = (
        "`cached_filter_jit`'s goals: not measured (" + goal.get("reason", "") + ")"
        if not goal.get("measured")
        else f"`cached_filter_jit` ties with or beats `jax.jit` everywhere: {markdown.verdict(goal['ties_or_beats_jit_everywhere'], quick)}; "
        f">= {la.GOAL_VS_SLOW}x `eqx.filter_jit` in the band: "
        + (
            f"n/a (no train cell with {goal['band'][0]:g} <= H/D <= {goal['band'][1]:g} in this run)"
            if not goal.get("cells_in_band") and not quick
            else goals.text(goal["at_least_1_3x_filter_jit_in_band"], quick, tie_text="a tie")
        )
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
