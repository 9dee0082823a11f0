"""The notebook's tables and summary: device facts, the check against the reporter, the registered H200 file."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .. import markdown
from . import compiled, devices, model, registry, reporter


def facts_table(devs: Sequence[devices.Device] = (devices.RTX_A6000, devices.H200)) -> pd.DataFrame:
    """One row per (device, fact): the value, its range where it is assumed, and the source."""
    rows = []
    for dev in devs:
        for name, f in dev.facts().items():
            span = f"{f.low if f.low is not None else f.value:g} .. {f.high if f.high is not None else f.value:g}"
            rows.append(
                {
                    "device": dev.name,
                    "fact": name,
                    "value": f"{f.value:g} {f.unit}",
                    "assumed range": span if f.is_range else "",
                    "source": f.source + (f" ({f.note})" if f.note else ""),
                }
            )
    return pd.DataFrame(rows)


def loop_costs(T: int, dev: devices.Device = devices.RTX_A6000) -> pd.DataFrame:
    """SM cycles per warp of the reporter's fori_loop and Python loop at ``T`` on ``dev``, per
    resource, at every value of the FP16x2 rate: which unit sets the loop's pace."""
    rows = []
    fp16 = dev.rates["fp16x2"]
    for variant in reporter.VARIANTS:
        point = compiled.seed_point(variant, T, target=dev.target, carry_dtype=reporter.CARRY)
        if point.work is None:
            continue
        for rate in fp16.ends():
            setting = devices.point(dev)
            setting = dataclasses.replace(setting, rates={**setting.rates, "fp16x2": rate})
            cycles = model.sm_cycles_per_warp(point.work.counts, dev, setting) or {}
            busiest = max(cycles, key=lambda g: cycles[g]) if cycles else ""
            rows.append(
                {"variant": variant, "T": T, "FP16x2 results/clk/SM": rate, **cycles, "busiest": busiest}
            )
    return pd.DataFrame(rows)


def extra_by_setting(pred: pd.DataFrame) -> pd.DataFrame:
    """Predicted extra time (fori - Python) over his, per T >= 16384 and setting."""
    his = reporter.measured().set_index("T")
    wide = pred.pivot_table(index=["T", "setting"], columns="variant", values="ms_per_call").reset_index()
    labels = pred.drop_duplicates("setting").set_index("setting")["setting_label"]
    wide = wide[wide["T"] >= reporter.EXTRA_FROM_T]
    wide["predicted / his"] = (wide["fori u=1"] - wide["python"]) / wide["T"].map(
        his["fori u=1"] - his["python"]
    )
    table = wide.pivot_table(index="setting", columns="T", values="predicted / his")
    table.index = [labels[s] for s in table.index]
    return table.rename_axis("setting").reset_index()


def registered_table(name: str = "") -> tuple[dict[str, Any] | None, pd.DataFrame]:
    """The registered H200 prediction ``name`` (or the latest): its JSON and its rows."""
    pairs = [p for p in registry.registered() if p[0].get("name", "").startswith("h200")]
    if name:
        pairs = [p for p in pairs if p[0].get("name") == name]
    if not pairs:
        return None, pd.DataFrame()
    meta, rows = pairs[-1]
    cols = ["part", "variant", "T", "status", "predicted_ms", "band_low_ms", "band_high_ms", "kernel_bound"]
    return meta, rows[[c for c in cols if c in rows]]


def goal_verdict(goal: dict[str, Any], quick: bool) -> str:
    """A goal's verdict as the summary says it (never judged in a smoke run)."""
    met = None if quick else goal["verdict"].startswith("met")
    return markdown.verdict(met, quick, met_text=goal["verdict"], missed_text=goal["verdict"])


def goals_markdown(goals: dict[str, Any], quick: bool) -> str:
    """One line per goal: what it asks, and its verdict."""
    return "\n\n".join(f"**{g['goal']}**: {goal_verdict(g, quick)}" for g in goals.values())


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def reporter_tables(table: pd.DataFrame) -> str:
    """:func:`reporter.table` as two Markdown tables, each led by T (the loops' ms; then their
    ratio and the loop's own cost): thirteen columns in one are wider than a notebook."""
    loops = [c for c in table.columns if c.startswith(("Python loop ms", "fori_loop ms"))]
    rest = [c for c in table.columns if c != "T" and c not in loops]
    return markdown.table(table[["T", *loops]]) + "\n\n" + markdown.table(table[["T", *rest]])


def summary(
    pred: pd.DataFrame,
    goals: dict[str, Any],
    meta: dict[str, Any] | None,
    problems: list[str],
    *,
    quick: bool,
) -> tuple[dict[str, Any], str]:
    """summary.json's dict and summary.md's text (an answer page: five bullets, the rest folded)."""
    table = reporter.table(pred)
    shared = reporter.shared_part(pred)
    big = table[table["T"] >= reporter.EXTRA_FROM_T]
    extra = "; ".join(
        f"T={r['T']}: {_fmt(r['extra ms (fori - Python), predicted'])} ms "
        f"[{r['extra ms (fori - Python), band']}] vs his {_fmt(r['extra ms (fori - Python), his'])}"
        for _, r in big.iterrows()
    )
    missing = shared["missing ps per number"].median() if len(shared) else float("nan")
    low = (shared["predicted ms"] / shared["his ms"]).min() if len(shared) else float("nan")
    history = "its history checks out" if not problems else "PROBLEMS: " + "; ".join(problems)
    registered = (
        f"`{meta['name']}` (made at commit {meta['git']['commit'][:10]}, model {meta['model_version']}); {history}"
        if meta
        else "none yet"
    )
    bullets = [
        "- **Predicted, not measured**: milliseconds per kernel call from SASS compiled on this CPU "
        "(sm_86 for his RTX A6000), issue time by execution unit, memory time, max per kernel, kernels "
        "summed; device facts from NVIDIA's documents; nothing fitted to his numbers.",
        f"- **The loop's own cost** (his fori_loop minus his Python loop): {extra or 'not predicted'}. "
        + goal_verdict(goals["extra"], quick),
        f"- **Absolute ms**: the model predicts his Python loop at {_fmt(low)}x of his time or more; it lacks "
        f"about {_fmt(missing)} ps per random number at every T, a cost both loops share (the harness's "
        f"random numbers and memory traffic; XLA's own GPU kernels cannot be compiled here). "
        + goal_verdict(goals["absolute"], quick),
        "- **What sets the loop's pace**: the fori_loop body's HADD2s. At the Programming Guide's FP16x2 rate "
        "for sm_86 (256 results/clk/SM) they issue at the schedulers' rate and the loop's cost comes out near "
        "half of his; at the GA102 whitepaper's (FP16 = FP32 FLOPs, 128) the FMA pipes set it.",
        f"- **H200 predictions registered before any GPU run**: {registered}.",
    ]
    folded = markdown.fold_sections(
        ["## The reporter's table beside the model", "", reporter_tables(table), ""]
        + ["## Where his Python loop's time goes (point)", "", markdown.table(shared), ""]
    )
    text = markdown.answer_page(
        "jax#20909: a GPU time model", [markdown.smoke_notice(quick)], bullets, folded
    )
    out = {
        "label": "predicted (not measured)",
        "quick": quick,
        "goals": goals,
        "reporter_table": table.to_dict(orient="records"),
        "shared_part": shared.to_dict(orient="records"),
        "registered": meta["name"] if meta else None,
        "registered_problems": problems,
    }
    return out, text
