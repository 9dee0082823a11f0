"""summary.md of the dispatch study: the numbers of :func:`jaxperf.dispatch.report.headline`
as an answer to equinox#192, ready to paste into the issue."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .. import markdown as md
from .methods import BASELINE, FAST_PATHS, FIX, SLOW
from .report import FAST_GOAL_NOOP, FAST_GOAL_TRAIN, GOAL_LEAVES, GOAL_VS_FILTER, GOAL_VS_PMAP, MEASURE_SHORT


def _times(value: float | None) -> str:
    return "n/a (one size)" if value is None else f"{value:.2f}×"


def _fmt(stat_or_none: dict[str, float] | None, digits: int = 2) -> str:
    return md.fmt_stat(stat_or_none, digits) if stat_or_none else "n/a"


def _results_table(part: pd.DataFrame) -> pd.DataFrame:
    """One row per model: it/s of pmap, filter_pmap, the fix and the fast paths, and ratios."""
    table = []
    for model in dict.fromkeys(part["model"]):
        m = part[part["model"] == model].set_index("method")
        row: dict[str, Any] = {"model": model, "leaves": int(m["leaves"].iloc[0])}
        for method in (BASELINE, SLOW, FIX, *FAST_PATHS):
            row[f"{method} it/s"] = _fmt(m.loc[method, "it_per_s"], 1) if method in m.index else "n/a"
        for method in (SLOW, FIX, *FAST_PATHS):
            ratio = m.loc[method, "ratio_to_pmap_params"] if method in m.index else None
            row[f"{method} / pmap"] = _fmt(ratio if isinstance(ratio, dict) else None)
        table.append(row)
    return pd.DataFrame(table)


def _ratio_table(rows: list[dict[str, Any]], with_method: bool) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    out = {"method": frame["method"]} if with_method else {}
    out.update(
        {
            "step": frame["step"],
            "model": frame["model"],
            "leaves": frame["leaves"],
            "donated": frame["donated"].map({True: "yes", False: "no"}),
            "it/s measure": frame["measure"].map(MEASURE_SHORT),
            "÷ pmap on params": [_fmt(s) for s in frame["over_pmap_params"]],
            "÷ filter_pmap": [_fmt(s) for s in frame["over_filter_pmap"]],
            "÷ pmap on params, no donation": [_fmt(s) for s in frame["over_pmap_params_undonated"]],
            "host CPU µs/call": [f"{v:.0f}" for v in frame["cpu_us_per_call"]],
            "host CPU ÷ pmap": [f"{v:.2f}" for v in frame["host_cpu_over_pmap_params"]],
        }
    )
    return pd.DataFrame(out)


def _details(title: str, body: list[str]) -> list[str]:
    """A folded block (GitHub and Jupyter both render Markdown inside it)."""
    return [f"<details><summary>{html.escape(title)}</summary>", "", *body, "", "</details>", ""]


def _answer_lines(summary: dict[str, Any], quick: bool) -> list[str]:
    """The reproduction and the fix's cell count, from ``summary["answer"]``."""
    ans, lines = summary.get("answer") or {}, []
    mlp, tr = ans.get("filter_pmap_over_pmap_mlp"), ans.get("filter_pmap_over_pmap_transformer")
    if mlp:
        slow = [
            r
            for r in summary["results"]
            if r["step"] == "noop" and not r["donated"] and not r["model"].startswith("transformer")
        ]
        top = max(r["leaves"] for r in slow)
        cpu = {
            r["method"]: r["cpu_us_per_call"]["median"]
            for r in slow
            if r["leaves"] == top and "cpu_us_per_call" in r
        }
        host = (
            f"; at {top} leaves its host CPU per call is {cpu[SLOW]:,.0f} µs against pmap's {cpu[BASELINE]:,.0f} µs"
            if {SLOW, BASELINE} <= set(cpu)
            else ""
        )
        label = md.verdict(ans.get("reproduced"), quick, met_text="Reproduced", missed_text="Not reproduced")
        lines.append(
            f"- **{label}:** `eqx.filter_pmap` runs at {mlp['min']:.2f}–{mlp['max']:.2f}× the it/s of "
            "`jax.pmap` on params for the MLPs (no-op step, each call blocked, no donation)"
            + (f" and {tr['min']:.2f}× for the transformer" if tr else "")
            + host
            + "."
        )
    cells = ans.get("fix_cells")
    if cells:
        at = cells["lowest_at"]
        where = f"{at['step']}, {at['model']}, {MEASURE_SHORT.get(at['measure'], at['measure'])}, " + (
            "donated" if at["donated"] else "no donation"
        )
        lines.append(
            f"- **The fix** (`cached_filter_pmap`): ≥ {GOAL_VS_PMAP}× pmap on params in {cells['meeting']} of "
            f"{cells['of']} cells (step, model, it/s measure, donation); the lowest is {cells['lowest']:.2f}× ({where})."
        )
    return lines


def render(
    summary: dict[str, Any],
    info: Any,
    stages_ms: pd.DataFrame,
    profile: pd.DataFrame,
    profile_now: pd.DataFrame | None = None,
) -> str:
    """An answer to equinox#192 with numbers, ready to paste into the issue: the answer and the
    goals first, every table folded below. ``profile_now``: cProfile of the fix and the fast
    path (:func:`jaxperf.dispatch.stages.profile_methods`)."""
    quick = not summary.get("judged", True)
    res = pd.DataFrame(summary["results"])
    lines = [
        "## equinox#192: eqx.filter_pmap vs jax.pmap, measured",
        "",
        md.smoke_notice(quick),
        "",
        f"Backend **{info.backend}**, {info.device_count} x {md.escape(info.device_kind)}. Each cell: median "
        "[interquartile range] over interleaved repeats; ratios are per pair (same repeat, same donation) "
        "against `jax.pmap` over `eqx.partition(model, eqx.is_array)[0]`, partitioned once outside the loop. "
        "Blocked = each call waits for its result; pipelined = a loop that blocks once at the end, as a "
        "training loop lets dispatch run ahead.",
        "",
        "### The answer, in numbers",
        "",
        *_answer_lines(summary, quick),
    ]
    for measure, v in summary["verdict"].items():
        lines.append(
            f"- Fix, {MEASURE_SHORT.get(measure, measure)} it/s, no donation: ≥ {GOAL_VS_PMAP}× pmap at every size "
            f"**{md.verdict(v['all_meet_vs_pmap'], quick)}**; ≥ {GOAL_VS_FILTER}× filter_pmap at ≥ "
            f"{GOAL_LEAVES} leaves **{md.verdict(v['all_meet_vs_filter_pmap'], quick)}**."
        )
    handed = summary.get("cached_filter_pmap_fallbacks") or {}
    reasons = ", ".join(f"{reason}: {n}" for reason, n in handed.items())
    lines.append(f"- Calls the fix handed to `eqx.filter_pmap` during the sweep: {reasons or 'none'}.")
    for g in summary["fast_path_goals"]:
        parts = [
            f"{step} ≥ {thr}× undonated pmap at {g[f'{step}_leaves']} leaves: {g[f'{step}_over_pmap_params']:.2f}× "
            f"**{md.verdict(g[f'{step}_meets'], quick)}**, host CPU spread {_times(g[f'{step}_cpu_spread'])} "
            f"**{md.verdict(g[f'{step}_cpu_meets'], quick)}**"
            for step, thr in (("noop", FAST_GOAL_NOOP), ("train", FAST_GOAL_TRAIN))
            if f"{step}_meets" in g
        ]
        donated = "donated" if g["donated"] else "not donated"
        lines.append(f"- Packed fast path, `{g['method']}` ({donated}, pipelined): " + "; ".join(parts) + ".")
    lines += ["", "### The numbers behind it", ""]
    for (step, donated), part in res.groupby(["step", "donated"], sort=False):
        title = f"{step} step, {'model and optimiser state donated' if donated else 'no donation'}: it/s per method (blocked)"
        lines += _details(title, [md.table(_results_table(part))])
    lines += _details(
        "The fix, cached_filter_pmap (a drop-in that partitions once per input structure): every cell",
        [md.table(_ratio_table(summary["fix"], with_method=False))],
    )
    if summary["fast_path"]:
        lines += _details(
            "The packed fast path, packed_pmap and packed_jit (model and optimiser state packed once into one "
            "buffer per dtype, carried packed, unpacked inside the compiled step): every cell",
            [md.table(_ratio_table(summary["fast_path"], with_method=True))],
        )
    if not stages_ms.empty:
        pivot = stages_ms.pivot_table(index="stage", columns="model", values="median_ms", sort=False)
        lines += _details(
            "Where one filter_pmap call spends its time (median ms per stage)",
            [md.table(pivot.reset_index())],
        )
    if not profile.empty:
        lines += _details("cProfile: top self time per filter_pmap call", [md.table(profile.head(8))])
    if profile_now is not None and not profile_now.empty:
        model = profile_now["model"].iloc[0]
        body = []
        for method, part in profile_now.groupby("method", sort=False):
            cols = ["function", "calls_per_step", "self_ms_per_step", "cumulative_ms_per_step"]
            body += [f"`{method}`:", "", md.table(part[cols].head(5)), ""]
        lines += _details(
            f"Where the time goes now: cProfile top self time per call ({model}, donated)", body
        )
    if summary["unsupported"]:
        lines += [
            "### Methods that could not run a model",
            "",
            md.table(pd.DataFrame(summary["unsupported"])),
            "",
        ]
    return "\n".join(lines)
