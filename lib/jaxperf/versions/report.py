"""Per-pair tables, the figure and the issue-ready summary of a version matrix.

Every comparison is per pair: ``filter_pmap`` against ``jax.pmap`` on params
(``BASELINE``) in the same repeat, back to back, summarised as median and
interquartile range; absolute times drift between processes on a shared
machine, these within-process differences and ratios do not.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from ..markdown import fmt_stat
from ..timing import iqr_stats, pair_ratios
from .bench import BASELINE, MODELS, VARIANTS, BenchConfig, VersionMatrix
from .releases import release_key


def _paired_difference(df: pd.DataFrame, baseline: str, value: str, by: list[str]) -> pd.DataFrame:
    """Per-repeat ``value(variant) - value(baseline)`` inside each group, in column ``difference``.

    The difference counterpart of ``timing.pair_ratios``: pairs are matched on ``by + ['repeat']``.
    """
    keys = by + ["repeat"]
    base = df[df["variant"] == baseline][keys + [value]].rename(columns={value: "_base"})
    merged = df.merge(base, on=keys, how="inner")
    merged["difference"] = merged[value] - merged["_base"]
    return merged.drop(columns="_base")


# filter_pmap's extra cost over jax.pmap, per pair, three ways: the dispatching thread's CPU time (Equinox's
# host work, steadiest on a shared machine), blocked wall time (what a training loop feels), enqueue-only time.
EXTRA_MEASURES = {
    "extra_cpu_ms": "cpu_s_per_call",
    "extra_ms": "wall_s_per_call",
    "extra_dispatch_ms": "dispatch_s_per_call",
}


def tabulate(matrix: VersionMatrix) -> pd.DataFrame:
    """One row per (release, model), all per pair against ``jax.pmap`` on params
    (median, q25, q75): filter_pmap's extra host-CPU ms (``extra_cpu_ms_*``),
    extra wall ms (``extra_ms_*``) and extra enqueue ms (``extra_dispatch_ms_*``)
    per call, the it/s ratios of filter_pmap and the cached fix; plus median ms
    per call and it/s of each method. Failed releases get one row with their error."""
    by = ["release", "model", "round"]
    rows = []
    timings = matrix.timings
    for env in matrix.environments.itertuples(index=False):
        part = timings[timings["release"] == env.release] if len(timings) else timings
        if part.empty:
            rows.append(
                {
                    "release": env.release,
                    "jax": env.jax,
                    "python": env.python,
                    "model": "-",
                    "status": env.status,
                    "error": env.error,
                }
            )
            continue
        ratios = pair_ratios(part, BASELINE, "it_per_s", by=by)
        extras = {
            stem: _paired_difference(part, BASELINE, column, by=by) for stem, column in EXTRA_MEASURES.items()
        }
        for model in [m for m in MODELS if m in set(part["model"])]:
            row: dict[str, Any] = {
                "release": env.release,
                "jax": env.jax,
                "python": env.python,
                "model": model,
            }
            for variant in ("filter_pmap", "pmap_cached"):
                r = iqr_stats(ratios[(ratios["model"] == model) & (ratios["variant"] == variant)]["ratio"])
                row.update({f"{variant}_ratio_{k}": r[k] for k in ("median", "q25", "q75")})
            for stem, diffs in extras.items():
                e = iqr_stats(
                    1e3 * diffs[(diffs["model"] == model) & (diffs["variant"] == "filter_pmap")]["difference"]
                )
                row.update({f"{stem}_{k}": e[k] for k in ("median", "q25", "q75")})
            row["pairs"] = e["n"]
            for variant in VARIANTS:
                sel = part[(part["model"] == model) & (part["variant"] == variant)]
                row[f"{variant}_ms_per_call"] = 1e3 * float(np.median(sel["wall_s_per_call"]))
                row[f"{variant}_cpu_ms_per_call"] = 1e3 * float(np.median(sel["cpu_s_per_call"]))
                row[f"{variant}_it_per_s"] = float(np.median(sel["it_per_s"]))
            row.update({"status": env.status, "error": env.error})
            rows.append(row)
    return pd.DataFrame(rows)


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as it reads in an issue: ``median [q25, q75]`` strings."""
    out = []
    for r in table.to_dict("records"):
        if r.get("model", "-") == "-":
            out.append(
                {
                    "equinox": r["release"],
                    "jax": r["jax"],
                    "model": "-",
                    "filter_pmap / pmap it/s": "failed",
                    "extra CPU ms/call": "-",
                    "extra wall ms/call": "-",
                    "cached fix / pmap it/s": "-",
                    "pmap ms/call": "-",
                    "filter_pmap ms/call": "-",
                    "note": _short_error(r.get("error", "")),
                }
            )
            continue
        out.append(
            {
                "equinox": r["release"],
                "jax": r["jax"],
                "model": r["model"],
                "filter_pmap / pmap it/s": fmt_stat(
                    {k: r[f"filter_pmap_ratio_{k}"] for k in ("median", "q25", "q75")}
                ),
                "extra CPU ms/call": fmt_stat(
                    {k: r[f"extra_cpu_ms_{k}"] for k in ("median", "q25", "q75")}, 1
                ),
                "extra wall ms/call": fmt_stat({k: r[f"extra_ms_{k}"] for k in ("median", "q25", "q75")}, 1),
                "cached fix / pmap it/s": fmt_stat(
                    {k: r[f"pmap_cached_ratio_{k}"] for k in ("median", "q25", "q75")}
                ),
                "pmap ms/call": f"{r['pmap_params_ms_per_call']:.2f}",
                "filter_pmap ms/call": f"{r['filter_pmap_ms_per_call']:.2f}",
                "note": "",
            }
        )
    return pd.DataFrame(out)


def _short_error(error: str, limit: int = 160) -> str:
    line = " ".join(str(error).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def plot_overhead_vs_release(table: pd.DataFrame):
    """Three panels vs Equinox release: filter_pmap's extra host-CPU ms and extra
    wall ms per call over ``jax.pmap`` on params, and the it/s ratio; per-pair
    median with IQR bars, one marker shape per JAX version, the releases that
    share one JAX shaded.

    Returns (figure, the plotted data).
    """
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = table[table["model"] != "-"].copy()
    if data.empty:
        raise ValueError("table has no measured release: every environment failed (see its error column).")
    order = sorted(dict.fromkeys(data["release"]), key=release_key)
    data["x"] = data["release"].map({r: i for i, r in enumerate(order)})
    jax_of = dict(zip(data["release"], data["jax"]))
    jax_versions = list(dict.fromkeys(jax_of[r] for r in order))
    markers = dict(zip(jax_versions, ["o", "s", "D", "^", "v", "P"]))
    models = [m for m in MODELS if m in set(data["model"])]
    colors = dict(zip(models, sns.color_palette("tab10", n_colors=len(models))))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    panels = [
        (
            "extra_cpu_ms",
            "filter_pmap's extra host-CPU ms per call over jax.pmap\n"
            "(dispatching thread; per-pair median, IQR bars)",
        ),
        (
            "extra_ms",
            "filter_pmap's extra wall ms per call over jax.pmap\n(blocked calls; per-pair median, IQR bars)",
        ),
        (
            "filter_pmap_ratio",
            "filter_pmap it/s ÷ jax.pmap it/s\n(per-pair median, IQR bars; 1 = no overhead)",
        ),
    ]
    offsets = {m: (i - (len(models) - 1) / 2) * 0.12 for i, m in enumerate(models)}
    for ax, (stem, label) in zip(axes, panels):
        for jax_version in jax_versions:
            group = [i for i, r in enumerate(order) if jax_of[r] == jax_version]
            if len(group) > 1:
                ax.axvspan(min(group) - 0.4, max(group) + 0.4, color="0.92", zorder=0)
                ax.text(
                    (min(group) + max(group)) / 2,
                    0.98,
                    f"same jax {jax_version}:\nEquinox's change only",
                    transform=ax.get_xaxis_transform(),
                    ha="center",
                    va="top",
                    fontsize=8,
                    color="0.3",
                )
        for model in models:
            part = data[data["model"] == model].sort_values("x")
            xs = part["x"] + offsets[model]
            ax.plot(xs, part[f"{stem}_median"], color=colors[model], lw=1, alpha=0.6)
            for x, row in zip(xs, part.itertuples(index=False)):
                med, lo, hi = (getattr(row, f"{stem}_{k}") for k in ("median", "q25", "q75"))
                ax.errorbar(
                    [x],
                    [med],
                    yerr=[[med - lo], [hi - med]],
                    fmt=markers[row.jax],
                    color=colors[model],
                    ms=6,
                    capsize=3,
                )
        if stem == "filter_pmap_ratio":
            ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
        else:
            ax.axhline(0.0, color="0.4", lw=0.8, ls="--")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels([f"{r}\njax {jax_of[r]}" for r in order], fontsize=8)
        ax.set_xlim(-0.6, len(order) - 0.4)
        ax.set_xlabel("Equinox release (and the JAX it ran on)")
        ax.set_ylabel(label, fontsize=9)
        # Headroom above the data for the shaded group's label (and, on the ratio panel, the legend).
        top = ax.get_ylim()[1] * 1.25
        ax.set_ylim(bottom=0, top=max(top, 1.75) if stem == "filter_pmap_ratio" else top)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[m], lw=2, label=m) for m in models]
    handles += [Line2D([], [], color="0.3", marker=markers[j], ls="", label=f"jax {j}") for j in jax_versions]
    axes[-1].legend(handles=handles, fontsize=7, loc="upper right", ncol=1, framealpha=0.9)
    fig.suptitle(
        "Does Equinox 0.10 make filter_pmap cheaper? (equinox#192; no-op step, 8 host devices)", fontsize=11
    )
    cols = ["release", "jax", "model", "x"] + [
        f"{s}_{k}" for s, _ in panels for k in ("median", "q25", "q75")
    ]
    return fig, data[cols].reset_index(drop=True)


def _row(table: pd.DataFrame, release: str, model: str) -> dict[str, Any] | None:
    sel = table[(table["release"] == release) & (table["model"] == model)]
    return None if sel.empty else sel.iloc[0].to_dict()


def _stats(row: dict[str, Any], stem: str) -> dict[str, float]:
    return {k: float(row[f"{stem}_{k}"]) for k in ("median", "q25", "q75")}


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return not (a["q75"] < b["q25"] or b["q75"] < a["q25"])


def _change(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    cut = 1 - after["median"] / before["median"] if before["median"] > 0 else None
    return {"before": before, "after": after, "cut_fraction": cut, "iqr_overlap": _overlap(before, after)}


def _change_text(change: dict[str, Any], unit: str = " ms per call") -> str:
    cut = change["cut_fraction"]
    how = "n/a" if cut is None else (f"{cut:.0%} less" if cut >= 0 else f"{-cut:.0%} more")
    return (
        f"{fmt_stat(change['before'], 1)} -> {fmt_stat(change['after'], 1)}{unit} ({how}; IQRs "
        f"{'overlap' if change['iqr_overlap'] else 'do not overlap'})"
    )


def summarize(
    table: pd.DataFrame, environments: pd.DataFrame, *, bench: BenchConfig, rounds: int, host_devices: int
) -> tuple[dict[str, Any], str]:
    """summary.json's content and an issue-ready summary.md for equinox#192.

    The verdict on 0.10 compares the last pre-0.10 release with the 0.10 release
    on the same JAX, by filter_pmap's extra host-CPU ms per call over
    ``jax.pmap``: "yes" when it is lower for every model with non-overlapping
    IQRs, "partly" for some, else "no measurable change". Wall time and it/s
    ratios are reported beside it.
    """
    measured = table[table["model"] != "-"]
    releases = sorted(dict.fromkeys(measured["release"]), key=release_key)
    jax_of = dict(zip(measured["release"], measured["jax"]))
    models = [m for m in MODELS if m in set(measured["model"])]
    before = [r for r in releases if release_key(r) < (0, 10)]
    after = [r for r in releases if (0, 10) <= release_key(r) < (0, 11)]
    pairs = [(b, a) for a in after for b in before if jax_of[a] == jax_of[b]]
    comparisons: dict[str, Any] = {}
    verdict: dict[str, Any] | None = None
    lines = ["## Does Equinox 0.10 make `filter_pmap` cheaper? Numbers for #192", ""]
    method = [
        f"The seed's no-op step `step(model, x, opt_state) -> (0.0, model, opt_state)` on {host_devices} forced "
        "CPU host devices, timed three ways in one process per Equinox release: `eqx.filter_pmap(step)`; "
        "`jax.pmap` over `eqx.partition(model, eqx.is_array)[0]`, partitioned once outside the loop (the baseline); "
        "and a cached fix (params and optimiser state flattened once, treedef cached, one `jax.pmap` over the flat "
        "leaves reused, the loop carrying the flat leaves). "
        f"Models: an `eqx.nn.MLP` (depth {bench.mlp_depth}, width {bench.mlp_width}) and a {bench.blocks}-block "
        f"transformer (d_model {bench.d_model}, `eqx.nn.MultiheadAttention`), with momentum-like optimiser state "
        "mirroring the params. Every method returns the same pytree (checked first). "
        f"Warm-up {bench.warmup} calls excluded; {bench.repeats} repeats x {rounds} round(s) of {bench.number} "
        "blocked calls per method, methods interleaved in rotated order, releases round-robin; differences and "
        "ratios are per pair (same repeat, back to back), summarised as median [q25, q75].",
        "",
        "*Extra CPU ms* is the dispatching thread's CPU time per call (`time.thread_time`) of `filter_pmap` minus "
        "`jax.pmap`: the host work Equinox adds, and the steadiest measure on a shared machine. *Extra wall ms* is "
        "the same for blocked wall time, which also carries the 8-device execution and other processes' noise.",
        "",
    ]
    if pairs:
        for b, a in pairs:
            for model in models:
                rb, ra = _row(measured, b, model), _row(measured, a, model)
                comparisons[f"{model}: {b} -> {a}"] = {
                    "model": model,
                    "before": b,
                    "after": a,
                    "jax": jax_of[a],
                    "extra_cpu_ms": _change(_stats(rb, "extra_cpu_ms"), _stats(ra, "extra_cpu_ms")),
                    "extra_wall_ms": _change(_stats(rb, "extra_ms"), _stats(ra, "extra_ms")),
                    "it_per_s_ratio": _change(
                        _stats(rb, "filter_pmap_ratio"), _stats(ra, "filter_pmap_ratio")
                    ),
                }
        # The maintainer's question is about the step into 0.10: judge it against the last release before it.
        b, a = pairs[-1]
        judged = [v for v in comparisons.values() if v["before"] == b and v["after"] == a]
        helped = [
            v["model"]
            for v in judged
            if (v["extra_cpu_ms"]["cut_fraction"] or 0) > 0 and not v["extra_cpu_ms"]["iqr_overlap"]
        ]
        answer = "yes" if len(helped) == len(judged) else ("partly" if helped else "no measurable change")
        verdict = {
            "before": b,
            "after": a,
            "jax": jax_of[a],
            "answer": answer,
            "helped_models": helped,
            "judged_by": "extra host-CPU ms per call, per pair, non-overlapping IQRs",
        }
        lines += [
            f"**Does 0.10 help? {answer[0].upper() + answer[1:]}.** Equinox {b} -> {a}, both on jax "
            f"{jax_of[a]}, so the change is Equinox's alone:",
            "",
        ]
        for v in judged:
            lines.append(
                f"- {v['model']}: extra CPU {_change_text(v['extra_cpu_ms'])}; extra wall "
                f"{_change_text(v['extra_wall_ms'])}; it/s vs `jax.pmap` "
                f"{fmt_stat(v['it_per_s_ratio']['before'])} -> {fmt_stat(v['it_per_s_ratio']['after'])}."
            )
        others = [v for v in comparisons.values() if (v["before"], v["after"]) != (b, a)]
        if others:
            lines += ["", "Earlier releases on the same JAX (0.7.1 was current when #192 was filed):", ""]
            for v in others:
                lines.append(
                    f"- {v['model']}, {v['before']} -> {v['after']}: extra CPU "
                    f"{_change_text(v['extra_cpu_ms'])}; extra wall "
                    f"{_change_text(v['extra_wall_ms'])}."
                )
        if any(v["extra_wall_ms"]["iqr_overlap"] for v in judged):
            lines += [
                "",
                "In blocked wall time the change is within this shared machine's noise for some model "
                "(IQRs overlap): the wall clock also carries the 8-device execution on 2 cores and other "
                "processes; the thread-CPU measure isolates the host work that Equinox changed.",
            ]
        after_ratios = [v["it_per_s_ratio"]["after"]["median"] for v in judged]
        lines += [
            "",
            f"0.10 does not close the gap: after it, `filter_pmap` still runs at "
            f"{min(after_ratios):.2f}-{max(after_ratios):.2f}x the it/s of `jax.pmap` on params here."
            if max(after_ratios) < 0.9
            else "After 0.10, `filter_pmap` is within 10% of `jax.pmap`'s it/s.",
        ]
    else:
        lines += [
            "**Not answered in this run:** it did not measure a pre-0.10 and a 0.10 release on the same JAX "
            "(the full run does: 0.7.1, 0.9.2 and 0.10.2 all on jax 0.4.13)."
        ]
    lines.append("")
    today: dict[str, Any] = {}
    if len(releases) > 1:
        newest, oldest = releases[-1], releases[0]
        lines += [
            f"**Today's release ({newest}, jax {jax_of[newest]}) against {oldest} (jax {jax_of[oldest]}):**",
            "",
        ]
        for model in models:
            rn, ro = _row(measured, newest, model), _row(measured, oldest, model)
            today[model] = {
                "release": newest,
                "jax": jax_of[newest],
                "against": oldest,
                "extra_cpu_ms": _change(_stats(ro, "extra_cpu_ms"), _stats(rn, "extra_cpu_ms")),
                "extra_wall_ms": _change(_stats(ro, "extra_ms"), _stats(rn, "extra_ms")),
                "it_per_s_ratio": _stats(rn, "filter_pmap_ratio"),
                "cached_fix_ratio": _stats(rn, "pmap_cached_ratio"),
                "pmap_cpu_ms_per_call": rn["pmap_params_cpu_ms_per_call"],
                "pmap_cpu_ms_per_call_then": ro["pmap_params_cpu_ms_per_call"],
            }
            # The baseline moved with JAX too; its thread-CPU time is the measure steady enough to compare
            # across processes (its wall time drifted either way between runs on this machine).
            slower_pmap = rn["pmap_params_cpu_ms_per_call"] > 1.1 * ro["pmap_params_cpu_ms_per_call"]
            lines.append(
                f"- {model}: extra CPU {_change_text(today[model]['extra_cpu_ms'])}; extra wall "
                f"{_change_text(today[model]['extra_wall_ms'])}; it/s vs `jax.pmap` {fmt_stat(_stats(rn, 'filter_pmap_ratio'))} "
                f"(was {fmt_stat(_stats(ro, 'filter_pmap_ratio'))}). `jax.pmap` on params itself: "
                f"{rn['pmap_params_cpu_ms_per_call']:.2f} host-CPU ms per call (was {ro['pmap_params_cpu_ms_per_call']:.2f})"
                + (", slower, so part of a better ratio is a slower baseline" if slower_pmap else "")
                + f". The cached fix: {fmt_stat(_stats(rn, 'pmap_cached_ratio'))}x `jax.pmap`'s it/s."
            )
        lines.append("")
    failed = environments[environments["status"] != "ok"] if "status" in environments else environments
    display = display_table(table)
    lines += ["| " + " | ".join(display.columns) + " |", "|" + "|".join("---" for _ in display.columns) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in display.itertuples(index=False)]
    lines += [
        "",
        "Ratios: per-pair it/s of the method over `jax.pmap` on params. Compare releases by these within-process "
        "differences and ratios: absolute times drift between processes on a shared machine.",
        "",
        "**What cannot be reproduced here:**",
        "",
        "- 2022's JAX: PyPI no longer serves a jaxlib older than 0.4.13 (`pip index versions jaxlib` lists 0.4.13 "
        "as the oldest for Python 3.8 to 3.11, checked 2026-11), so 0.7.1 runs on jax 0.4.13 (mid-2023), not on the "
        "jax 0.3.x it was released with; the absolute 2022 numbers cannot be rebuilt.",
        "- The TPU v3-8 of the report: these are 8 forced host devices on a small shared CPU, where even a no-op "
        "across 8 devices costs milliseconds; the extra host milliseconds carry over, the it/s do not.",
        "- Equinox 0.10.0 and 0.10.1 do not import on jax 0.4.13 (they use `jax.interpreters.xla.xla_call_p`); "
        "0.10.2 stands for the 0.10 line.",
        "- Later rows change JAX as well as Equinox (0.11.12 on jax 0.5.1, 0.13.8 on jax 0.12.0.1): only releases "
        "on the same JAX isolate Equinox's change.",
    ]
    if len(failed):
        lines += ["", "**Environments that failed** (reported, not measured):", ""]
        lines += [
            f"- equinox {r.release}: {_short_error(r.error, 400)}" for r in failed.itertuples(index=False)
        ]
    summary = {
        "question": "equinox#192: does Equinox 0.10 make filter_pmap faster at a fixed JAX, and how does today's release compare?",
        "method_note": " ".join(method).strip(),
        "releases_measured": releases,
        "releases_failed": {r.release: r.error for r in failed.itertuples(index=False)},
        "jax_of_release": jax_of,
        "verdict": verdict,
        "fixed_jax_comparisons": comparisons,
        "today": today,
        "table": table.to_dict("records"),
        "bench": dataclasses.asdict(bench),
        "rounds": rounds,
        "host_devices": host_devices,
    }
    return summary, "\n".join(lines[:2] + method + lines[2:])
