"""summary.json's numbers and summary.md's text for the runs-ahead study (notebook 07).

The answer: which methods wait for each call (the verdicts), what that costs in the seed's
loop here (eqx.filter_jit's per-pair it/s ratio to jax.jit where the loader's host time is
0.3-1x the step's device time). The Markdown is :mod:`.summary_md`'s; the issue text's prose is
templates/issue.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import markdown
from ... import runs_ahead as rule
from . import loop_analysis as la
from .config import PROBE_REFERENCE
from .methods import PATCHED, label
from .seed_loop import SLOW

CPU_LIMITS = (
    'On this CPU the step\'s "device" is the same two cores the loader runs on: XLA:CPU runs the step on '
    "worker threads while the loader's numpy work runs in the main thread, so they overlap only as far as "
    "a free core allows, and other processes on a shared machine take cores from both. The bounds are "
    "measured, not assumed; where even `jax.jit` stays near `1 / (H + D)` the CPU cannot show the cost of "
    "waiting, and the enqueue-vs-blocked verdict above is the robust signal. On an accelerator the step runs "
    "beside the host, and a call that waits turns `1 / max(H, D)` into `1 / (H + D)`: half the rate at H = D."
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
    fj, jj = _of(verdicts, SLOW), _of(verdicts, PROBE_REFERENCE)
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
