"""The dispatch study's numbers: per-pair speedups, the goals, summary.json and summary.md.

Plotting lives in :mod:`jaxperf.dispatch.figures`; every table here comes from
the timing frame (one row per step, model, variant, repeat; ``variant`` is the
method, ``+donate`` when model and optimiser state were donated).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import markdown as md
from .. import timing
from .methods import BASELINE, FAST_PATHS, FIX, SLOW
from .sweep import paired_ratios

GOAL_VS_PMAP = 0.95  # the fix's it/s vs jax.pmap on params, every size
GOAL_VS_FILTER = 2.5  # the fix's it/s vs eqx.filter_pmap, at >= GOAL_LEAVES leaves
GOAL_LEAVES = 100
FAST_GOAL_NOOP = 10.0  # the packed path vs pmap on params, pipelined no-op step, largest MLP
FAST_GOAL_TRAIN = 1.5  # the same on the train step
FAST_GOAL_CPU_SPREAD = 2.0  # the packed path's host CPU per call, largest / smallest MLP
IT_MEASURES = {
    "it_per_s": "it/s, each call blocked",
    "loop_it_per_s": "it/s, pipelined loop (block once after the loop)",
}
#: ``over`` of the ratios against jax.pmap on params without donation, whatever the method's donation
REPORTER_BASELINE = "pmap_params_undonated"
MEASURE_SHORT = {"it_per_s": "blocked", "loop_it_per_s": "pipelined"}
SEED_NOTE = (
    "for scale: equinox#192 reported 8 it/s (filter_pmap) vs 25 it/s (pmap on params) on a TPU v3-8, 2022"
)


def stat(series: pd.Series) -> dict[str, float]:
    """Median and quartiles, the form every summary.json number takes."""
    s = timing.iqr_stats(series)
    return {"median": s["median"], "q25": s["q25"], "q75": s["q75"]}


def speedups(df: pd.DataFrame, methods: tuple[str, ...] = (FIX, *FAST_PATHS)) -> pd.DataFrame:
    """Per-pair it/s ratios of ``methods`` over eqx.filter_pmap and over jax.pmap on params,
    same donation, for each it/s measure; and over the reporter's own baseline, jax.pmap on
    params without donation (``over`` = :data:`REPORTER_BASELINE`). One row per (step, model,
    method, donated, repeat, over, measure)."""
    out = []
    cols = ["step", "model", "kind", "leaves", "method", "donated", "repeat", "ratio"]
    for measure in [m for m in IT_MEASURES if m in df]:
        for base in (SLOW, BASELINE):
            if base not in set(df["method"]):
                continue
            r = paired_ratios(df, base, measure)
            out.append(r[r["method"].isin(methods)][cols].assign(over=base, measure=measure))
        if BASELINE in set(df["variant"]):
            r = timing.pair_ratios(df, BASELINE, measure, by=["step", "model"])
            out.append(r[r["method"].isin(methods)][cols].assign(over=REPORTER_BASELINE, measure=measure))
    columns = ["step", "model", "kind", "leaves", "method", "donated", "repeat", "ratio", "over", "measure"]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=columns)


def stage_table(stages: pd.DataFrame) -> pd.DataFrame:
    """Median ms per stage of one filter_pmap call, per model: (model, leaves, stage, median_ms)."""
    return (
        stages.groupby(["model", "leaves", "stage"], sort=False)["seconds"]
        .median()
        .mul(1e3)
        .rename("median_ms")
        .reset_index()
    )


def _cpu_medians(df: pd.DataFrame, step: str, model: str, donated: bool) -> pd.Series:
    part = df[(df["step"] == step) & (df["model"] == model) & (df["donated"] == donated)]
    return part.groupby("method")["cpu_us_per_call"].median()


def _ratio_rows(df: pd.DataFrame, ratios: pd.DataFrame, method: str) -> list[dict[str, Any]]:
    """One row per (step, model, measure, donated) for ``method``: its ratios over pmap on
    params and over filter_pmap (median and quartiles), and host CPU per call."""
    rows = []
    mine = ratios[ratios["method"] == method]
    for (step, model, measure, donated), part in mine.groupby(
        ["step", "model", "measure", "donated"], sort=False
    ):
        cpu = _cpu_medians(df, step, model, bool(donated))
        over_pmap, over_filter, over_reporter = (
            part[part["over"] == o]["ratio"] for o in (BASELINE, SLOW, REPORTER_BASELINE)
        )
        rows.append(
            {
                "step": step,
                "model": model,
                "kind": part["kind"].iloc[0],
                "leaves": int(part["leaves"].iloc[0]),
                "measure": measure,
                "donated": bool(donated),
                "over_pmap_params": stat(over_pmap) if len(over_pmap) else None,
                "over_filter_pmap": stat(over_filter) if len(over_filter) else None,
                "over_pmap_params_undonated": stat(over_reporter) if len(over_reporter) else None,
                "cpu_us_per_call": float(cpu.get(method, np.nan)),
                "host_cpu_filter_pmap_over_this": float(cpu.get(SLOW, np.nan) / cpu.get(method, np.nan)),
            }
        )
    return rows


def fix_rows(df: pd.DataFrame, ratios: pd.DataFrame) -> list[dict[str, Any]]:
    """summary.json's ``fix`` rows (cached_filter_pmap), with their goals."""
    rows = []
    for row in _ratio_rows(df, ratios, FIX):
        vs_pmap, vs_filter = row["over_pmap_params"], row["over_filter_pmap"]
        row["fix_over_pmap_params"], row["fix_over_filter_pmap"] = vs_pmap, vs_filter
        row["meets_vs_pmap"] = bool(vs_pmap["median"] >= GOAL_VS_PMAP) if vs_pmap else None
        at_size = row["leaves"] >= GOAL_LEAVES and vs_filter is not None
        row["meets_vs_filter_pmap"] = bool(vs_filter["median"] >= GOAL_VS_FILTER) if at_size else None
        row["host_cpu_filter_pmap_over_fix"] = row.pop("host_cpu_filter_pmap_over_this")
        rows.append(row)
    return rows


def fast_path_rows(df: pd.DataFrame, ratios: pd.DataFrame) -> list[dict[str, Any]]:
    """summary.json's ``fast_path`` rows: each packed method, as the ``fix`` rows are built."""
    return [{"method": m, **row} for m in FAST_PATHS for row in _ratio_rows(df, ratios, m)]


def fast_path_goals(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per packed method and donation: it/s over the reporter's baseline (jax.pmap on params,
    no donation) at the largest MLP (pipelined; >= 10x on the no-op step, >= 1.5x on the train
    step) and the spread of host CPU per call between the smallest and largest MLP (<= 2x)."""
    frame = pd.DataFrame(rows)
    goals: list[dict[str, Any]] = []
    if frame.empty:
        return goals
    mlp = frame[(frame["kind"] == "mlp") & (frame["measure"] == "loop_it_per_s")]
    for (method, donated), part in mlp.groupby(["method", "donated"], sort=False):
        goal = {"method": method, "donated": bool(donated)}
        for step, threshold in (("noop", FAST_GOAL_NOOP), ("train", FAST_GOAL_TRAIN)):
            s = part[part["step"] == step].sort_values("leaves")
            if s.empty:
                continue
            last = s.iloc[-1]
            # The reporter's baseline when it ran; else the same donation's.
            stat_ = last.get("over_pmap_params_undonated") or last["over_pmap_params"]
            if stat_ is None:
                continue
            ratio = stat_["median"]
            goal[f"{step}_leaves"] = int(s["leaves"].iloc[-1])
            goal[f"{step}_over_pmap_params"] = ratio
            goal[f"{step}_meets"] = bool(ratio >= threshold)
            cpu = s["cpu_us_per_call"].to_numpy()
            goal[f"{step}_cpu_spread"] = float(cpu[-1] / cpu[0]) if len(cpu) > 1 else None
            goal[f"{step}_cpu_meets"] = (
                bool(cpu[-1] / cpu[0] <= FAST_GOAL_CPU_SPREAD) if len(cpu) > 1 else None
            )
        goals.append(goal)
    return goals


def headline(
    df: pd.DataFrame,
    ratios: pd.DataFrame,
    failures: pd.DataFrame,
    *,
    quick: bool = False,
    fallbacks: dict[str, int] | None = None,
) -> dict[str, Any]:
    """summary.json's numbers: per (step, model, method, donated) leaves, it/s, ratio to pmap
    and host time per call; the fix and fast-path rows; and the goals, judged on each it/s
    measure (never in a smoke run: ``judged`` is False when ``quick``). ``fallbacks``: the
    calls cached_filter_pmap handed to eqx.filter_pmap during the sweep, by reason."""
    rows = []
    for (step, model, method, donated), part in df.groupby(
        ["step", "model", "method", "donated"], sort=False
    ):
        row = {"step": step, "model": model, "method": method, "donated": bool(donated)}
        row["leaves"] = int(part["leaves"].iloc[0])
        for col in (
            "it_per_s",
            "loop_it_per_s",
            "ratio_to_pmap_params",
            "cpu_us_per_call",
            "dispatch_us_per_call",
        ):
            if col in part and part[col].notna().any():
                row[col] = stat(part[col].dropna())
        rows.append(row)
    fix = fix_rows(df, ratios)
    verdict = {}
    for measure in dict.fromkeys(g["measure"] for g in fix):
        mine = [g for g in fix if g["measure"] == measure and not g["donated"]]
        verdict[measure] = {
            "all_meet_vs_pmap": all(g["meets_vs_pmap"] for g in mine),
            "all_meet_vs_filter_pmap": all(g["meets_vs_filter_pmap"] in (True, None) for g in mine),
        }
    fast = fast_path_rows(df, ratios)
    return {
        "baseline": BASELINE,
        "judged": not quick,
        "goals": {
            "fix_vs_pmap_params_min": GOAL_VS_PMAP,
            "fix_vs_filter_pmap_min": GOAL_VS_FILTER,
            "at_leaves_min": GOAL_LEAVES,
            "fast_path_noop_vs_pmap_params_min": FAST_GOAL_NOOP,
            "fast_path_train_vs_pmap_params_min": FAST_GOAL_TRAIN,
            "fast_path_cpu_spread_max": FAST_GOAL_CPU_SPREAD,
        },
        "results": rows,
        "fix": fix,
        "verdict": verdict,
        "fast_path": fast,
        "fast_path_goals": fast_path_goals(fast),
        "unsupported": failures.to_dict(orient="records"),
        "cached_filter_pmap_fallbacks": dict(fallbacks or {}),
    }


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
        }
    )
    return pd.DataFrame(out)


def markdown(
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
