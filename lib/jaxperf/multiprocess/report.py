"""summary.md (issue-ready, with the Equinox bug report) and summary.json."""

from __future__ import annotations

from typing import Any

import pandas as pd

from .. import markdown
from . import bug, scaling
from .analysis import BASELINE
from .methods import METHODS
from .run import StudyRun
from .settings import MultiprocessSettings

BROKEN = "filter_pmap"  # the method the bug breaks across processes

HOW_THEY_AVOID_IT = (
    "`jaxperf.cached_filter_pmap` resolves the axes once per input structure and builds its "
    "inner `jax.pmap` with `in_axes`/`out_axes` a single int when every leaf shares it, else a "
    "tuple (never a list), over a tuple of array leaves; the packed fast path's `packed_pmap` "
    "passes `out_axes=0` and returns `(aux, PackedState)`, whose leaves are the packed "
    "buffers; its jit form (`packed_jit`), `jax.jit` with `NamedSharding` and `jit(shard_map)` "
    "have no `out_axes` at all."
)


def _counts(run: StudyRun, correctness: pd.DataFrame, settings: MultiprocessSettings) -> dict[str, Any]:
    multi = correctness[correctness["processes"] > 1]
    wrong = multi[multi["correct"].eq(False) & (multi["method"] != BROKEN)]
    broken = multi[multi["method"] == BROKEN]
    return {
        "process_counts": list(settings.process_counts),
        "all_but_the_broken_method_correct": bool(wrong.empty),
        "incorrect_cases": wrong[["processes", "step", "method", "error"]].to_dict("records"),
        "filter_pmap_fails_across_processes": bool(not broken.empty and not broken["ran_everywhere"].any()),
        "filter_pmap_fixed_correct": bool(
            multi[multi["method"] == "filter_pmap_fixed"]["correct"].dropna().all()
        ),
    }


def _repro_section(run: StudyRun, settings: MultiprocessSettings) -> str:
    n = settings.processes
    at_n = run.repro[(run.repro["processes"] == n)]
    outcome = (
        at_n.groupby("case", sort=False)
        .agg(processes=("process_id", "size"), ok=("ok", "all"), error=("error", "first"))
        .reset_index()
    )
    outcome["result"] = [
        "works" if ok else f"fails: {err}" for ok, err in zip(outcome["ok"], outcome["error"])
    ]
    first = at_n[(at_n["process_id"] == 0) & (at_n["case"] == "eqx.filter_pmap")]
    trace = first["traceback"].iloc[0] if not first.empty and first["traceback"].iloc[0] else "(did not fail)"
    plain = at_n[(at_n["process_id"] == 0) & (at_n["case"] == "jax.pmap(out_axes=[0])")]
    plain_trace = (
        plain["traceback"].iloc[0] if not plain.empty and plain["traceback"].iloc[0] else "(did not fail)"
    )
    versions = ", ".join(f"{k} {v}" for k, v in run.versions.items())
    return f"""## Bug report for Equinox: `eqx.filter_pmap` fails in every multi-process job

**What happens.** Under `jax.distributed` with more than one process (a TPU pod slice, a
multi-node GPU job, or {n} local CPU processes here), the first call of any `eqx.filter_pmap`
raises `TypeError: unhashable type: 'list'` in every process. One process never shows it.

**Versions.** {versions}; Python 3.12, Linux, CPU backend, {n} processes x
{settings.global_devices // n} devices on 127.0.0.1 (gloo collectives).

**Minimal repro** (2 processes; the same happens on any multi-host TPU/GPU job):

```python
{bug.REPRO_SCRIPT}```

Outcome in each of the {n} processes of this run (recorded by the study, not typed in):

{markdown.table(outcome[["case", "processes", "result"]])}

**Traceback** (`eqx.filter_pmap`, process 0):

```
{trace.strip()}
```

Plain `jax.pmap(f, out_axes=[0])`, process 0:

```
{plain_trace.strip()}
```

**Cause.** Across processes, `jax.pmap` converts its global outputs back to host-local
arrays (`jax/_src/pmap.py`, `global_array_to_host_local_array`) through
`_get_out_shardings`, a `util.cache` whose key includes the output specs built from
`out_axes`; a list there is unhashable. In one process that path is skipped. Equinox's
`_filter_pmap_cache` passes `out_axes = (list(range(-max_out_size, max_out_size)), None, None)`.

**Proposed fix** (Equinox; tuples, hashable, same meaning), against the installed
`equinox/_vmap_pmap.py`:

```diff
{bug.fix_diff().strip()}
```

**Shown to work here:** the study recompiles Equinox's own `_filter_pmap_cache` from its
source with these two lines changed and swaps it in around each call (`jaxperf.multiprocess.bug.fixed`):
the `eqx.filter_pmap, fixed` row above, and the method `filter_pmap_fixed` in the correctness table, which gives
the same loss, parameters and optimiser state as every other method and as one device. JAX
could also accept lists there (hash the flattened specs), since its docs allow any pytree
prefix for `out_axes`; a tuple in Equinox fixes it for every JAX release.
"""


def _timing_table(table: pd.DataFrame, ratios: pd.DataFrame, n: int) -> str:
    part = table[(table["processes"] == n) & table["step"].isin(["noop", "train"])].merge(
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
    counts = _counts(run, correctness, settings)
    at_n = correctness[correctness["processes"] == n]
    correct_md = markdown.table(
        at_n.assign(method=[METHODS[m] for m in at_n["method"]])[
            [
                "step",
                "method",
                "ran_everywhere",
                "same_in_every_process",
                "matches_one_device",
                "max_abs_diff",
                "error",
            ]
        ]
    )
    scaling_md = markdown.table(
        table[table["step"].isin(["noop", "train"])][
            ["processes", "step", "method", "it_per_s", "cpu_ms_per_call", "dispatch_ms_per_call"]
        ]
    )
    pod_cols = ["step", "method", "host_ms_per_call", "host_bound_ms", "host_bound_it_per_s"]
    pod_cols.append(next(c for c in pod.columns if c.startswith("share_of_a")))
    text = f"""# Beyond one machine: the dispatch methods across processes (`jax.distributed`)

{markdown.smoke_notice(settings.quick)}

{len(settings.process_counts)} launches ({", ".join(map(str, settings.process_counts))} local processes on
127.0.0.1, {settings.global_devices} CPU devices in all: each of N processes holds
{settings.global_devices}/N, so every launch computes the same global step), MLP depth
{settings.mlp_depth}. Headline: **{n} processes**.

- Every method except `eqx.filter_pmap` is correct across processes (checked in every
  run, smoke runs included):
  **{markdown.verdict(counts["all_but_the_broken_method_correct"], False, met_text="yes", missed_text="no")}**
  (the same loss, parameters and optimiser state, bitwise, in every process, and `allclose`
  to one device computing the whole batch).
- `eqx.filter_pmap` fails across processes: **{"yes" if counts["filter_pmap_fails_across_processes"] else "no"}**;
  with the proposed fix patched in, correct: **{"yes" if counts["filter_pmap_fixed_correct"] else "no"}**.
- How the others avoid the bug: {HOW_THEY_AVOID_IT}

## Correctness, {n} processes

{correct_md}

## Speed, {n} processes (median over every process and repeat)

{_timing_table(table, ratios, n)}

## Collective vs dispatch (train step)

Wall ms per call: the train step without its `pmean` (no collective), the `pmean` of the
parameters alone, and the full step. Here the all-reduce runs on the same two host cores
as everything else (in one process: XLA:CPU's collectives across 8 device threads; across
processes: gloo over TCP on 127.0.0.1), one all-reduce per array leaf, on a machine shared
with other jobs; so it dominates every step here and says nothing about a pod's
interconnect. Dispatch is what the host CPU column above measures.

{markdown.table(split)}

## Scaling: 1 to {max(settings.process_counts)} processes

{scaling_md}

## On paper: a {settings.pod_hosts}-host pod

{scaling.MODEL}

Assumed pod: {scaling.POD_LOCAL_DEVICES} devices per host, a {scaling.DEVICE_STEP_MS:g} ms device step
(the reporter's transformer at 20 batches/s).

{markdown.table(pod[pod_cols])}

{_repro_section(run, settings)}"""
    summary = {
        "headline_processes": n,
        **counts,
        "correctness": correctness.to_dict("records"),
        "timings": table.to_dict("records"),
        "ratios_over_pmap_params": ratios.to_dict("records"),
        "collective_split": split.to_dict("records"),
        "pod_model": pod.to_dict("records"),
        "launches": run.launches.to_dict("records"),
    }
    return summary, text
