"""summary.md (issue-ready, with the Equinox bug report) and summary.json, grouped per model."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import markdown
from . import bug_report, scaling
from .analysis import BASELINE
from .methods import METHODS
from .run import StudyRun
from .settings import ATOL, RTOL, MultiprocessSettings

BROKEN = "filter_pmap"  # the method the bug breaks across processes
BUG_ERROR = "unhashable type: 'list'"  # how it breaks

HOW_THEY_AVOID_IT = (
    "`jaxperf.cached_filter_pmap` resolves the axes once per input structure and builds its "
    "inner `jax.pmap` with `in_axes`/`out_axes` a single int when every leaf shares it, else a "
    "tuple (never a list), over a tuple of array leaves; the packed fast path's `packed_pmap` "
    "passes `out_axes=0` and returns `(aux, PackedState)`, whose leaves are the packed "
    "buffers; its jit form (`packed_jit`), `jax.jit` with `NamedSharding` and `jit(shard_map)` "
    "have no `out_axes` at all."
)


def model_labels(run: StudyRun, settings: MultiprocessSettings) -> dict[str, str]:
    """Each model's name -> a reader's label with its array leaves per call (model, batch, optimiser state)."""
    leaves = run.checks.groupby("model")["leaves"].first().to_dict() if not run.checks.empty else {}
    labels = {}
    for name, model in zip(settings.model_names, settings.models):
        what = (
            f"MLP, depth {model['size']}"
            if model["kind"] == "mlp"
            else f"transformer, {model['size']} layer{'s' * (model['size'] != 1)}"
        )
        count = f", {leaves[name]} array leaves per call" if name in leaves else ""
        labels[name] = f"{what} (`{name}`{count}; {model['repeats']} repeat{'s' * (model['repeats'] != 1)})"
    return labels


def could_not_run(correctness: pd.DataFrame) -> pd.DataFrame:
    """Every (model, processes, step, method) that did not run in every process, with its error,
    except the bug itself (``filter_pmap`` across processes failing on the unhashable list)."""
    failed = correctness[~correctness["ran_everywhere"].astype(bool)]
    the_bug = (
        (failed["method"] == BROKEN)
        & (failed["processes"] > 1)
        & failed["error"].str.contains(BUG_ERROR, regex=False)
    )
    return failed[~the_bug][["model", "processes", "step", "method", "error"]].reset_index(drop=True)


def _verdicts(correctness: pd.DataFrame) -> dict[str, Any]:
    multi = correctness[correctness["processes"] > 1]
    wrong = multi[multi["correct"].eq(False) & (multi["method"] != BROKEN)]
    broken = multi[multi["method"] == BROKEN]
    return {
        "all_but_the_broken_method_correct": bool(wrong.empty),
        "incorrect_cases": wrong[["model", "processes", "step", "method", "error"]].to_dict("records"),
        "filter_pmap_fails_across_processes": bool(not broken.empty and not broken["ran_everywhere"].any()),
        "filter_pmap_fixed_correct": bool(
            multi[multi["method"] == "filter_pmap_fixed"]["correct"].dropna().all()
        ),
        "could_not_run": could_not_run(correctness).to_dict("records"),
    }


def _headline_ratios(ratios: pd.DataFrame, n: int, model: str) -> dict[str, dict[str, float]]:
    part = ratios[(ratios["processes"] == n) & (ratios["model"] == model)]
    return {
        step: {m: float(r) for m, r in zip(rows["method"], rows["median"])}
        for step, rows in part.groupby("step", sort=False)
        if step in ("noop", "train")
    }


def by_model(
    run: StudyRun, settings: MultiprocessSettings, correctness: pd.DataFrame, ratios: pd.DataFrame
) -> dict[str, dict[str, Any]]:
    """summary.json's ``by_model``: per model, its size, the verdicts on its own rows, and the
    median it/s over :data:`BASELINE` of each method at the headline process count."""
    leaves = run.checks.groupby("model")["leaves"].first().to_dict() if not run.checks.empty else {}
    out = {}
    for name, model in zip(settings.model_names, settings.models):
        out[name] = {
            **model,
            "leaves": int(leaves[name]) if name in leaves else None,
            **_verdicts(correctness[correctness["model"] == name]),
            "ratios_over_pmap_params_at_headline": _headline_ratios(ratios, settings.processes, name),
        }
    return out


def _at_a_glance(ratios: pd.DataFrame, correctness: pd.DataFrame, n: int, names: list[str]) -> str:
    """Method x (model, step): median it/s over the baseline at ``n`` processes; 'fails' where it did not run."""
    checked = correctness[correctness["processes"] == n]
    ran = {(r.model, r.step, r.method): bool(r.ran_everywhere) for r in checked.itertuples()}
    at_n = ratios[ratios["processes"] == n]
    ratio = {(r.model, r.step, r.method): float(r.median) for r in at_n.itertuples()}
    methods = [m for m in METHODS if m in set(checked["method"])]
    columns: dict[str, list[str]] = {"method": [METHODS[m] for m in methods]}
    for name in names:
        for step in ("noop", "train"):
            if not any(key[:2] == (name, step) for key in ran):
                continue
            columns[f"{name} {step}"] = [
                f"{ratio[(name, step, m)]:.2f}"
                if (name, step, m) in ratio
                else _missing(ran.get((name, step, m)))
                for m in methods
            ]
    return markdown.table(pd.DataFrame(columns))


def _missing(ran: bool | None) -> str:
    return "fails" if ran is False else "n/a"


def _timing_table(table: pd.DataFrame, ratios: pd.DataFrame, n: int, model: str) -> str:
    part = table[
        (table["processes"] == n) & (table["model"] == model) & table["step"].isin(["noop", "train"])
    ].merge(
        ratios.rename(columns={"median": "ratio", "q25": "ratio_q25", "q75": "ratio_q75"}),
        on=["processes", "model", "step", "method"],
        how="left",
    )
    rows = pd.DataFrame(
        {
            "step": part["step"],
            "method": [METHODS[m] for m in part["method"]],
            "it/s [IQR]": [markdown.fmt_stat(_stats(r, "it_per_s"), 1) for _, r in part.iterrows()],
            "host CPU ms/call": [
                markdown.fmt_stat(_stats(r, "cpu_ms_per_call"), 2) for _, r in part.iterrows()
            ],
            "enqueue ms/call": part["dispatch_ms_per_call"],
            f"it/s over {BASELINE}": [markdown.fmt_stat(_stats(r, "ratio"), 2) for _, r in part.iterrows()],
        }
    )
    return markdown.table(rows)


def _stats(row: pd.Series, name: str) -> dict[str, Any]:
    return {"median": row.get(name), "q25": row.get(f"{name}_q25"), "q75": row.get(f"{name}_q75")}


def _per_model(labels: dict[str, str], render: Any) -> str:
    """One ``### label`` subsection per model, its body ``render(model_name)``."""
    return "\n\n".join(f"### {label}\n\n{render(name)}" for name, label in labels.items())


def _sci(x: float) -> str:
    return np.format_float_scientific(x, trim="-", exp_digits=1)


def _could_not_run_text(failed: pd.DataFrame) -> str:
    if failed.empty:
        return "none: every other method ran every model in every launch."
    cases = "; ".join(
        f"`{r.method}` on `{r.model}` ({r.step} step, {r.processes} processes): {r.error}"
        for r in failed.itertuples()
    )
    return f"**{len(failed)}** (recorded, not crashed; counted as not correct above): {cases}."


def _speed_bullet(ratios: pd.DataFrame, n: int, models: list[str]) -> str:
    """The no-op step's ratios at ``n`` processes, per method and model, each read as a tie
    (interquartile range holding 1), faster or slower."""
    part = ratios[(ratios["processes"] == n) & (ratios["step"] == "noop")]
    cells = []
    for method, name in (
        ("filter_pmap_fixed", "patched `filter_pmap`"),
        ("cached_filter_pmap", "`cached_filter_pmap`"),
        ("packed_jit", "`packed_jit`"),
    ):
        per = []
        for model in models:
            row = part[(part["model"] == model) & (part["method"] == method)]
            if len(row):
                word = markdown.versus(row.iloc[0], tie="a tie", faster="faster", slower="slower")
                per.append(f"{model} {markdown.ratio(row.iloc[0])}, {word}")
        if per:
            cells.append(f"{name}: " + "; ".join(per))
    return f"- **Speed, no-op step, {n} processes** (it/s over pmap on params): " + " · ".join(cells) + "."


def _collective_bullet(split: pd.DataFrame) -> str:
    if split.empty or "collective_share" not in split:
        return ""
    shares = split["collective_share"].astype(float)
    return (
        f"- **Train step:** the cross-process all-reduce is {shares.min():.0%}–{shares.max():.0%} of the step here "
        "(gloo on a 2-core box), so dispatch cannot show in it; the pod projection below works from the measured "
        "host cost per call instead."
    )


def build(
    run: StudyRun,
    settings: MultiprocessSettings,
    correctness: pd.DataFrame,
    table: pd.DataFrame,
    ratios: pd.DataFrame,
    split: pd.DataFrame,
    pod: pd.DataFrame,
) -> tuple[dict[str, Any], str]:
    """(summary.json payload, summary.md text)."""
    n = settings.processes
    counts = {"process_counts": list(settings.process_counts), **_verdicts(correctness)}
    labels = model_labels(run, settings)
    at_n = correctness[correctness["processes"] == n]
    correct_cols = [
        "step",
        "method",
        "ran_everywhere",
        "same_in_every_process",
        "matches_one_device",
        "max_abs_diff",
        "error",
    ]

    def correct_md(model: str) -> str:
        part = at_n[at_n["model"] == model]
        return markdown.table(part.assign(method=[METHODS[m] for m in part["method"]])[correct_cols])

    def scaling_md(model: str) -> str:
        part = table[(table["model"] == model) & table["step"].isin(["noop", "train"])]
        cols = ["processes", "step", "method", "it_per_s", "cpu_ms_per_call", "dispatch_ms_per_call"]
        return markdown.table(part[cols])

    pod_cols = ["model", "step", "method", "host_ms_per_call", "host_bound_ms", "host_bound_it_per_s"]
    pod_cols.append(next(c for c in pod.columns if c.startswith("share_of_a")))
    yes = lambda v: "yes" if v else "no"  # noqa: E731
    intro = [
        markdown.smoke_notice(settings.quick),
        "",
        f"{len(settings.process_counts)} launches ({', '.join(map(str, settings.process_counts))} local processes on "
        f"127.0.0.1, {settings.global_devices} CPU devices in all: each of N processes holds "
        f"{settings.global_devices}/N, so every launch computes the same global step); headline **{n} processes**. "
        "Models: " + "; ".join(labels.values()) + ". Ratios: it/s over `jax.pmap` on params, median "
        "[interquartile range] over every process and repeat; a range that holds 1 is a tie.",
    ]
    bullets = [
        f"- **Correct across processes:** every method except `eqx.filter_pmap`, on every model: "
        f"**{markdown.verdict(counts['all_but_the_broken_method_correct'], False, met_text='yes', missed_text='no')}** "
        f"(the same loss, parameters and optimiser state, bitwise, in every process, and `allclose` (rtol "
        f"{_sci(RTOL)}, atol {_sci(ATOL)}) to one device computing the whole batch). Could not run a model, other "
        f"than the bug: {_could_not_run_text(could_not_run(correctness))}",
        f"- **`eqx.filter_pmap` fails in every multi-process job:** "
        f"**{yes(counts['filter_pmap_fails_across_processes'])}** (`TypeError: {BUG_ERROR}`: multi-process "
        "`jax.pmap` hashes `out_axes`, and Equinox passes a list); with the two-line fix below patched in, correct: "
        f"**{yes(counts['filter_pmap_fixed_correct'])}**. The issue-ready report is folded below.",
        _speed_bullet(ratios, n, list(labels)),
        _collective_bullet(split),
        "- **Not measured:** a real cluster. This is one 2-core box; the pod numbers folded below are a "
        "projection from the measured host cost per call, with their assumptions.",
    ]
    folded = markdown.details(
        f"At a glance: it/s over {BASELINE}, {n} processes (median over every process and repeat)",
        [_at_a_glance(ratios, correctness, n, list(labels))],
    )
    folded += markdown.details(f"Correctness, {n} processes", [_per_model(labels, correct_md)])
    folded += markdown.details(
        f"Speed, {n} processes (median over every process and repeat)",
        [_per_model(labels, lambda m: _timing_table(table, ratios, n, m))],
    )
    folded += markdown.details(
        "Collective vs dispatch (train step)",
        [
            "Wall ms per call: the train step without its `pmean` (no collective), the `pmean` of the parameters "
            "alone, and the full step. The all-reduce runs on the same two host cores as everything else (gloo over "
            "TCP on 127.0.0.1 across processes), one all-reduce per array leaf: it dominates every step here and "
            "says nothing about a pod's interconnect.",
            "",
            markdown.table(split),
        ],
    )
    folded += markdown.details(
        f"Scaling: 1 to {max(settings.process_counts)} processes", [_per_model(labels, scaling_md)]
    )
    folded += markdown.details(
        f"On paper: a {settings.pod_hosts}-host pod",
        [
            scaling.MODEL,
            "",
            f"Assumed pod: {scaling.POD_LOCAL_DEVICES} devices per host, a {scaling.DEVICE_STEP_MS:g} ms device "
            "step (the reporter's transformer at 20 batches/s), for every model alike.",
            "",
            markdown.table(pod[pod_cols]),
        ],
    )
    folded += markdown.details(
        "Bug report for Equinox: eqx.filter_pmap fails in every multi-process job",
        [bug_report.section(run, settings)],
    )
    text = markdown.answer_page(
        "Beyond one machine: the dispatch methods across processes (jax.distributed)", intro, bullets, folded
    )
    summary = {
        "headline_processes": n,
        **counts,
        "models": list(labels),
        "by_model": by_model(run, settings, correctness, ratios),
        "correctness": correctness.to_dict("records"),
        "timings": table.to_dict("records"),
        "ratios_over_pmap_params": ratios.to_dict("records"),
        "collective_split": split.to_dict("records"),
        "pod_model": pod.to_dict("records"),
        "launches": run.launches.to_dict("records"),
    }
    return summary, text
