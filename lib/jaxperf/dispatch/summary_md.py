"""summary.md of the dispatch study: the numbers of :func:`jaxperf.dispatch.report.headline`
as an answer to equinox#192, ready to paste into the issue."""

from __future__ import annotations

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


def render(
    summary: dict[str, Any],
    info: Any,
    stages_ms: pd.DataFrame,
    profile: pd.DataFrame,
    profile_now: pd.DataFrame | None = None,
) -> str:
    """An answer to equinox#192 with numbers, ready to paste into the issue. ``profile_now``:
    cProfile of the fix and the fast path (:func:`jaxperf.dispatch.stages.profile_methods`)."""
    quick = not summary.get("judged", True)
    res = pd.DataFrame(summary["results"])
    lines = [
        "## equinox#192: eqx.filter_pmap vs jax.pmap, measured",
        "",
        md.smoke_notice(quick),
        "",
        f"Backend **{info.backend}**, {info.device_count} x {md.escape(info.device_kind)}. Each cell: median "
        "[interquartile range] over interleaved repeats; ratios are per pair (same repeat, same donation) "
        "against `jax.pmap` over `eqx.partition(model, eqx.is_array)[0]`, partitioned once outside the loop.",
        "",
    ]
    for (step, donated), part in res.groupby(["step", "donated"], sort=False):
        title = f"### {step} step, {'model and optimiser state donated' if donated else 'no donation'} (blocked it/s)"
        lines += [title, "", md.table(_results_table(part)), ""]
    lines += [
        "### The fix: `jaxperf.cached_filter_pmap` (a drop-in that partitions once per input structure)",
        "",
        "Blocked = each call waits for its result; pipelined = a loop that blocks once at the "
        "end, as a training loop lets dispatch run ahead.",
        "",
        md.table(_ratio_table(summary["fix"], with_method=False)),
        "",
    ]
    for measure, v in summary["verdict"].items():
        lines.append(
            f"- {MEASURE_SHORT.get(measure, measure)} it/s, no donation: fix ≥ {GOAL_VS_PMAP}× pmap at every size "
            f"**{md.verdict(v['all_meet_vs_pmap'], quick)}**; fix ≥ {GOAL_VS_FILTER}× filter_pmap at ≥ "
            f"{GOAL_LEAVES} leaves **{md.verdict(v['all_meet_vs_filter_pmap'], quick)}**."
        )
    handed = summary.get("cached_filter_pmap_fallbacks") or {}
    reasons = ", ".join(f"{reason}: {n}" for reason, n in handed.items())
    lines.append(f"- Calls the fix handed to `eqx.filter_pmap` during the sweep: {reasons or 'none'}.")
    if summary["fast_path"]:
        lines += [
            "",
            "### The packed fast path (`jaxperf.packed_pmap`, `jaxperf.packed_jit`)",
            "",
            "Model and optimiser state packed once into one buffer per dtype, carried packed and "
            "unpacked inside the compiled step.",
            "",
            md.table(_ratio_table(summary["fast_path"], with_method=True)),
            "",
        ]
        for g in summary["fast_path_goals"]:
            parts = [
                f"{step} ≥ {thr}× undonated pmap at {g[f'{step}_leaves']} leaves: {g[f'{step}_over_pmap_params']:.2f}× "
                f"**{md.verdict(g[f'{step}_meets'], quick)}**, host CPU spread {_times(g[f'{step}_cpu_spread'])} "
                f"**{md.verdict(g[f'{step}_cpu_meets'], quick)}**"
                for step, thr in (("noop", FAST_GOAL_NOOP), ("train", FAST_GOAL_TRAIN))
                if f"{step}_meets" in g
            ]
            donated = "donated" if g["donated"] else "not donated"
            lines.append(f"- `{g['method']}` ({donated}, pipelined): " + "; ".join(parts) + ".")
    lines.append("")
    if not stages_ms.empty:
        pivot = stages_ms.pivot_table(index="stage", columns="model", values="median_ms", sort=False)
        lines += ["### Where one filter_pmap call spends its time (median ms per stage)", ""]
        lines += [md.table(pivot.reset_index()), ""]
    if not profile.empty:
        lines += ["### cProfile: top self time per filter_pmap call", "", md.table(profile.head(8)), ""]
    if profile_now is not None and not profile_now.empty:
        model = profile_now["model"].iloc[0]
        lines += [f"### Where the time goes now: cProfile top self time per call ({model}, donated)", ""]
        for method, part in profile_now.groupby("method", sort=False):
            cols = ["function", "calls_per_step", "self_ms_per_step", "cumulative_ms_per_step"]
            lines += [f"`{method}`:", "", md.table(part[cols].head(5)), ""]
    if summary["unsupported"]:
        lines += [
            "### Methods that could not run a model",
            "",
            md.table(pd.DataFrame(summary["unsupported"])),
            "",
        ]
    return "\n".join(lines)
