"""summary.md of the dispatch study: the numbers of :func:`jaxperf.dispatch.report.headline`
as an answer to equinox#192, ready to paste into the issue."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import goals
from .. import markdown as md
from . import cells
from .cells import MEASURE_SHORT
from .methods import BASELINE, FAST_PATHS, FIX, SLOW
from .report import FAST_GOAL_NOOP, FAST_GOAL_TRAIN, GOAL_LEAVES, GOAL_VS_FILTER, GOAL_VS_PMAP

MEASURE_LONG = {"loop_it_per_s": "in the seed's pipelined loop", "it_per_s": "with each call blocked"}


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
    return md.details(title, body)


SEED_RATIO = 8 / 25  # equinox#192: 8 vs 25 it/s on a TPU v3-8


def _range(fp: dict[str, Any]) -> str:
    if fp.get("mlp_min") is None:
        return "n/a"
    leaves = fp["mlp_leaves"]
    return f"{fp['mlp_min']:.2f}–{fp['mlp_max']:.2f}× over MLPs of {min(leaves)}–{max(leaves)} array leaves"


def _reproduction(ans: dict[str, Any], quick: bool) -> str:
    """Bullet 1: the seed's pipelined loop first, each call blocked beside it."""
    by = ans.get("by_measure", {})
    parts = []
    for measure, a in by.items():
        fp, top = a["filter_pmap_over_pmap"], a.get("largest") or {}
        at = f" ({md.ratio(top.get('filter_pmap_over_pmap'))} at {top['leaves']})" if top else ""
        tr = fp.get("transformer")
        tr_text = f"; the {tr['model']}: {md.ratio(tr)}" if tr else ""
        parts.append(f"{MEASURE_LONG[measure]}: {_range(fp)}{at}{tr_text}")
    label = md.verdict(ans.get("reproduced"), quick, met_text="Reproduced", missed_text="Not reproduced")
    text = "; ".join(parts)
    return (
        f"- **{label}** (no-op step, no donation; `eqx.filter_pmap` it/s ÷ `jax.pmap` on params, per pair). "
        + text[:1].upper()
        + text[1:]
        + f". The seed: {SEED_RATIO:.2f}× (8 vs 25 it/s, TPU v3-8, 2022)."
    )


def _cause(breakdown: dict[str, Any]) -> str | None:
    """Bullet 2: where the extra time goes, at the largest model that was split."""
    if not breakdown:
        return None
    model, b = max(breakdown.items(), key=lambda kv: kv[1]["leaves"])
    inner = b.get("inner_call") or {}
    e = inner.get("excess_cpu_ms", {})
    sizes = inner.get("sizes", {})
    text = (
        f"- **Why: host work per call, not the program.** At {b['leaves']} leaves ({model}) one blocked "
        f"`filter_pmap` call takes {md.fmt_stat(b['whole_call_ms'], 1)} ms against "
        f"{md.fmt_stat(b['pmap_params_call_ms'], 1)} ms for `jax.pmap` on params (wall, same rounds). "
        f"Its own stages (axis resolution, partition, ShapeDtypeStruct, cache lookup, combine) take "
        f"{b['own_stages_ms']:.1f} ms. Timed stage by stage and summed per round, a call takes "
        f"{md.fmt_stat(b['staged_call_ms'], 1)} ms, "
        + (
            "a spread that overlaps the ordinary call's"
            if b["sums_to_call"]
            else "a spread clear of the ordinary call's (the stages do not add up to the call)"
        )
        + _freeing(b)
        + "."
    )
    if e:
        text += (
            f" Its inner `jax.pmap` call costs {md.fmt_stat(e['inner_over_pmap_params'], 2)} ms more host CPU than "
            f"pmap on params on the same program: Equinox hands `jax.pmap` a per-leaf `in_axes` pytree "
            f"({sizes.get('in_axes_nodes', '?')} nodes; alone +{e['in_axes_pytree']['median']:.2f} ms) and "
            f"{sizes.get('output_copies', '?')} filtered copies of the output tree "
            f"({sizes.get('inner_output_nodes', '?')} nodes vs {sizes.get('params_output_nodes', '?')}; alone "
            f"+{e['output_trees']['median']:.2f} ms), together +{e['both']['median']:.2f} ms."
        )
    return text


def _freeing(b: dict[str, Any]) -> str:
    """The breakdown's last stage, named: dropping the outputs is inside every timed call."""
    ms = (b.get("stage_ms") or {}).get("free the outputs")
    if ms is None:
        return ""
    return (
        f", freeing the outputs included ({ms:.1f} ms: the no-op step returns the whole model and optimiser "
        "state, as it does under pmap on params; the stage also drops the call's partition of its inputs, "
        "whose arrays the caller still holds, so only the outputs' buffers are freed)"
    )


def _fix(ans: dict[str, Any], summary: dict[str, Any], quick: bool) -> list[str]:
    """Bullets 3 and 4: what to write instead, each ratio beside its goal's verdict."""
    by = ans.get("by_measure", {})
    lines = []
    words = []
    for measure, a in by.items():
        top = a.get("largest")
        if not top or top.get("fix_over_pmap") is None:
            continue
        cells_text = cells.vs_filter_cells(summary, measure)
        overall = (summary.get("verdict") or {}).get(measure, {}).get("all_meet_vs_filter_pmap")
        words.append(
            f"{MEASURE_SHORT[measure]}: it {md.versus(top['fix_over_pmap'])} pmap on params at {top['leaves']} leaves "
            f"({md.ratio(top['fix_over_pmap'])}) and runs at {md.ratio(top['fix_over_filter_pmap'])} "
            f"`filter_pmap` there (goal ≥ {GOAL_VS_FILTER}× in every undonated cell of ≥ {GOAL_LEAVES} leaves: "
            f"**{goals.text(overall, quick, tie_text='a tie')}**, {cells_text})"
        )
    fixed = ans.get("fix_cells")
    goal = ""
    if fixed:
        counted = {
            goals.MET: fixed["meeting"],
            goals.TIE: fixed["ties"],
            goals.MISSED: fixed.get("missing", 0),
        }
        goal = (
            f"; goal ≥ {GOAL_VS_PMAP}× pmap on params in every (step, model, measure, donation) cell: "
            f"**{goals.text(fixed['verdict'], quick, tie_text='a tie')}** "
            f"({cells.count_text(counted, fixed['of'])}, lowest {fixed['lowest']:.2f}×)"
        )
    if words:
        lines.append(
            "- **What to write instead: partition once**, by hand as the seed did (`jax.pmap` over "
            "`eqx.partition(model, eqx.is_array)[0]`), or with the drop-in `jaxperf.cached_filter_pmap`. "
            + "; ".join(words)[:1].upper()
            + "; ".join(words)[1:]
            + goal
            + "."
        )
    packed = []
    for measure, a in by.items():
        top = a.get("largest") or {}
        if top.get("packed_jit_donated_over_pmap"):
            packed.append(
                f"{MEASURE_SHORT[measure]} {md.ratio(top['packed_jit_donated_over_pmap'])} (goal ≥ {FAST_GOAL_NOOP:g}×: "
                f"**{goals.text(top['packed_jit_meets'], quick, tie_text='a tie, its spread holds it')}**)"
            )
    if packed:
        lines.append(
            "- **When leaves dominate: pack the state** (`jaxperf.PackedState` + `packed_jit`, donated: one buffer "
            "per dtype crosses the call). On the no-op step at the largest MLP it runs at "
            + ", ".join(packed)
            + " the it/s of undonated `jax.pmap` on params; the training step gains less (details below)."
        )
    return lines


NOT_MEASURED = (
    "- **Not measured here:** no GPU or TPU executed anything. Compiled for a TPU v3-8 on this CPU "
    "(notebook 05), the train step from `eqx.filter_pmap`, `jax.pmap` on params and `cached_filter_pmap` "
    "is one and the same program; the GPU run is prepared (`tools/device/`), not run."
)


def render(
    summary: dict[str, Any],
    info: Any,
    stages_ms: pd.DataFrame,
    profile: pd.DataFrame,
    profile_now: pd.DataFrame | None = None,
) -> str:
    """An answer to equinox#192 with numbers, ready to paste into the issue: at most five
    bullets first, goals and every table folded below. ``profile_now``: cProfile of the fix
    and the fast path (:func:`jaxperf.dispatch.stages.profile_methods`)."""
    quick = not summary.get("judged", True)
    res = pd.DataFrame(summary["results"])
    ans = summary.get("answer") or {}
    bullets = [
        _reproduction(ans, quick),
        _cause(summary.get("breakdown") or {}),
        *_fix(ans, summary, quick),
        NOT_MEASURED,
    ]
    intro = [
        md.smoke_notice(quick),
        "",
        f"Backend **{info.backend}**, {info.device_count} x {md.escape(info.device_kind)}. Numbers: median "
        "[interquartile range] over interleaved repeats; ratios per pair (same repeat). *Pipelined*: a loop "
        "that blocks once at its end, as the seed's training loop runs; *blocked*: each call waits for its "
        "result. A ratio whose range holds 1 is a tie.",
    ]
    folded = _details("Goals and their verdicts", _goal_lines(summary, quick))
    folded += _tables(summary, res, stages_ms, profile, profile_now)
    title = "equinox#192: eqx.filter_pmap vs jax.pmap, measured"
    return md.answer_page(title, intro, [b for b in bullets if b][:5], folded)


def _goal_lines(summary: dict[str, Any], quick: bool) -> list[str]:
    lines = []
    for measure, v in summary["verdict"].items():
        lines.append(
            f"- Fix, {MEASURE_SHORT.get(measure, measure)} it/s, no donation: ≥ {GOAL_VS_PMAP}× pmap at every size "
            f"**{goals.text(v['all_meet_vs_pmap'], quick, tie_text='a tie')}**"
            + ("" if quick else cells.missed_text(v.get("missed_vs_pmap") or []))
            + f"; ≥ {GOAL_VS_FILTER}× filter_pmap at ≥ {GOAL_LEAVES} leaves "
            f"**{goals.text(v['all_meet_vs_filter_pmap'], quick, tie_text='a tie')}**"
            + ("" if quick else cells.missed_text(v.get("missed_vs_filter_pmap") or []))
            + "."
        )
    handed = summary.get("cached_filter_pmap_fallbacks") or {}
    reasons = ", ".join(f"{reason}: {n}" for reason, n in handed.items())
    lines.append(f"- Calls the fix handed to `eqx.filter_pmap` during the sweep: {reasons or 'none'}.")
    for g in summary["fast_path_goals"]:
        parts = [
            f"{step} ≥ {thr}× undonated pmap at {g[f'{step}_leaves']} leaves: {md.ratio(g[f'{step}_over_pmap_params'])} "
            f"**{goals.text(g[f'{step}_meets'], quick, tie_text='a tie')}**, host CPU spread {_times(g[f'{step}_cpu_spread'])} "
            f"**{md.verdict(g[f'{step}_cpu_meets'], quick)}**"
            for step, thr in (("noop", FAST_GOAL_NOOP), ("train", FAST_GOAL_TRAIN))
            if f"{step}_meets" in g
        ]
        donated = "donated" if g["donated"] else "not donated"
        lines.append(f"- Packed fast path, `{g['method']}` ({donated}, pipelined): " + "; ".join(parts) + ".")
    return lines


def _tables(
    summary: dict[str, Any],
    res: pd.DataFrame,
    stages_ms: pd.DataFrame,
    profile: pd.DataFrame,
    profile_now: pd.DataFrame | None,
) -> list[str]:
    lines: list[str] = []
    for (step, donated), part in res.groupby(["step", "donated"], sort=False):
        title = f"{step} step, {'model and optimiser state donated' if donated else 'no donation'}: it/s per method (blocked)"
        lines += _details(title, [md.table(_results_table(part))])
    if summary["fix"]:
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
            "Where one filter_pmap call spends its time (median wall ms per stage, staged calls)",
            [md.table(pivot.reset_index())],
        )
    inner = {m: b["inner_call"] for m, b in (summary.get("breakdown") or {}).items() if b.get("inner_call")}
    if inner:
        rows = [
            {
                "model": m,
                "rung": rung,
                "host CPU ms": md.fmt_stat(v["cpu_ms"][rung]),
                "wall ms": md.fmt_stat(v["wall_ms"][rung]),
            }
            for m, v in inner.items()
            for rung in v["cpu_ms"]
        ]
        lines += _details(
            "The inner jax.pmap call, rung by rung (per blocked call)", [md.table(pd.DataFrame(rows))]
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
        lines += _details(
            "Methods that could not run a model", [md.table(pd.DataFrame(summary["unsupported"]))]
        )
    return lines
