"""The issue-ready text for equinox#192, rendered from measured numbers only.

:data:`REPRO_SCRIPT` is the short repro a reader runs; :func:`run_repro` runs it in a fresh
interpreter and parses what it printed. :func:`render` writes the text from the probe's summary
(:func:`jaxperf.eqx_patch.probe.summary`), the traversal counts
(:func:`~jaxperf.eqx_patch.probe.traversals`), the test-suite report (``test_suite.json``, from
:mod:`jaxperf.eqx_patch.suite`) and, when given, the repro's rows: every number in it comes from
those (the prior art's numbers are quotes, attributed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pandas as pd

from .. import markdown
from ..paths import PROJECT_ROOT
from . import load, probe, suite

REPRO_SCRIPT = """\
import time
import equinox as eqx, jax, jax.numpy as jnp

def step(model, x):  # the no-op step of equinox#192
    return 0.0, model

model = eqx.nn.MLP(32, 32, 32, depth=64, key=jax.random.PRNGKey(0))  # 130 arrays
params, static = eqx.partition(model, eqx.is_array)
on_params = lambda p, x: eqx.filter(step(eqx.combine(p, static), x), eqx.is_array)
stack = lambda tree: jax.tree.map(lambda a: a[None] if eqx.is_array(a) else a, tree)
x = jnp.ones((1, 32))
for name, f, args in [("jax.jit on params", jax.jit(on_params), (params, x)),
                      ("eqx.filter_jit", eqx.filter_jit(step), (model, x)),
                      ("jax.pmap on params", jax.pmap(on_params), stack((params, x))),
                      ("eqx.filter_pmap", eqx.filter_pmap(step), stack((model, x)))]:
    jax.block_until_ready(f(*args))
    start = time.thread_time()
    for _ in range(100):
        jax.block_until_ready(f(*args))
    print(f"{name}: {(time.thread_time() - start) * 10:.3f} ms of host CPU per call")
"""

_LINE = re.compile(r"^(.+): ([0-9.]+) ms of host CPU per call$")
PRIOR_ART = [
    "#192 (2022): a no-op step ran at ~8 it/s through `eqx.filter_pmap` and ~25 it/s through "
    "`jax.pmap` on params on a TPU v3-8, as the reporter measured;",
    '#289 (2023): the maintainer said the overhead "should now be substantially reduced" '
    '(f348af1, "Faster hashable partition/combine", in 0.10.0);',
    "#973: `filter_jit` at 423 µs vs `jax.jit` at 53 µs per call on a small case, as reported there, "
    "traced to `hashable_partition`; PR #983 (0.12.0) removed the inside-JIT check per call;",
    "#988: the marker that `filter_jit` waits on (fixed for tracers in fcfaa0b, 0.12.1); #897 "
    "(open): `filter_jit` slower than Flax's jit on CPU; PR #867 (listed by this study's issue, not "
    "read for this draft);",
    "Flax NNX has the same problem: its performance guide says `nnx.jit` traverses the object graph "
    "in Python on every call and offers `nnx.cached_partial`, which caches that traversal for a "
    "fixed set of objects.",
]


def parse(output: str) -> pd.DataFrame:
    """The repro's lines as rows (``variant``, ``cpu_ms_per_call``); other lines are ignored."""
    rows = []
    for line in output.splitlines():
        match = _LINE.match(line.strip())
        if match:
            rows.append({"variant": match[1], "cpu_ms_per_call": float(match[2])})
    return pd.DataFrame(rows, columns=["variant", "cpu_ms_per_call"])


def run_repro(timeout_s: int = 600) -> pd.DataFrame:
    """:data:`REPRO_SCRIPT` in a fresh interpreter on one CPU device; its rows. Raises
    RuntimeError with its stderr when it fails or prints other than four rows."""
    flag = "--xla_force_host_platform_device_count"
    flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": " ".join(flags + [f"{flag}=1"])}
    proc = subprocess.run(
        [sys.executable, "-c", REPRO_SCRIPT],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        cwd=PROJECT_ROOT,
    )
    rows = parse(proc.stdout)
    if proc.returncode != 0 or len(rows) != 4:
        raise RuntimeError(
            f"the repro exited {proc.returncode}, printing {proc.stdout!r}:\n{proc.stderr[-3000:]}"
        )
    return rows


def _row(table: pd.DataFrame, leaves: int, variant: str) -> pd.Series:
    return table[(table["leaves"] == leaves) & (table["variant"] == variant)].iloc[0]


def _excess(row: pd.Series) -> str:
    stats = {k: row[f"excess_ms_{k}"] for k in ("median", "q25", "q75")}
    return (
        f"{markdown.fmt_stat(stats, 3)} ms ({markdown.ratio({k: row[f'ratio_{k}'] for k in stats})} its CPU)"
    )


def _per_leaf(slope: dict[str, float]) -> str:
    return f"{slope['median'] * 1e3:.1f} µs per leaf [{slope['low'] * 1e3:.1f}, {slope['high'] * 1e3:.1f}]"


def _benchmark_table(table: pd.DataFrame) -> str:
    shown = table.assign(
        cpu=[
            markdown.fmt_stat({k: r[f"cpu_ms_{k}"] for k in ("median", "q25", "q75")}, 3)
            for _, r in table.iterrows()
        ],
        vs=[
            ""
            if pd.isna(r["ratio_median"])
            else markdown.ratio({k: r[f"ratio_{k}"] for k in ("median", "q25", "q75")})
            for _, r in table.iterrows()
        ],
    )
    shown = shown[["leaves", "label", "cpu", "vs"]].rename(
        columns={"label": "variant", "cpu": "host CPU, ms per call", "vs": "per pair, / its JAX baseline"}
    )
    return markdown.table(shown)


def _suite_lines(report: dict[str, Any]) -> list[str]:
    counts = report["counts"]
    line = "; ".join(
        f"{run}: " + ", ".join(f"{counts[run][o]} {o}" for o in suite.OUTCOMES if counts[run][o])
        for run in suite.RUNS
    )
    reruns = report.get("reruns", {})

    def again(test: str) -> str:
        runs = reruns.get(test)
        if runs is None:
            return ""
        return ", run again: " + "; ".join(f"{r} {suite.tally(runs.get(r, []))}" for r in suite.RUNS)

    changed = [
        f"`{c['test']}` {c['unpatched']} -> {c['patched']}{again(c['test'])}" for c in report["changed"]
    ]
    failing = {
        run: {
            t["test"]: t["message"] for t in report["not_passed"][run] if t["outcome"] in ("failed", "error")
        }
        for run in suite.RUNS
    }
    both = sorted(set(failing["unpatched"]) & set(failing["patched"]))
    added = report["added"]
    failing_before = [a["test"].split("/")[-1] for a in added if a.get("unpatched") not in (None, "passed")]
    return [
        f"Equinox's whole suite ({report['command']}; {', '.join(f'{k} {v}' for k, v in report['environment'].items())}): {line}.",
        "Failing in both: "
        + ("; ".join(f"`{t}` ({failing['unpatched'][t][:70]})" for t in both) or "none")
        + ".",
        f"Outcomes the patch changes: {len(changed)}" + (f" ({'; '.join(changed)})" if changed else "") + ".",
        f"Tests it adds: {len(added)}, {sum(a['outcome'] == 'passed' for a in added)} passing; run against the "
        f"unpatched Equinox, {len(failing_before)} fail"
        + (": " + ", ".join(f"`{t}`" for t in failing_before) if failing_before else "")
        + " (the others guard behaviour the patch keeps).",
    ]


def render(
    table: pd.DataFrame,
    counts: pd.DataFrame,
    suite_report: dict[str, Any],
    *,
    repro: pd.DataFrame | None = None,
    versions: dict[str, str] | None = None,
    where: str = "CPU",
) -> str:
    """The issue text. ``table``: :func:`~jaxperf.eqx_patch.probe.summary` of a probe at two or
    more sizes; ``counts``: :func:`~jaxperf.eqx_patch.probe.traversals`; ``suite_report``: the
    test-suite report; ``repro``: :func:`run_repro`'s rows; ``where``: the machine, in words."""
    slopes = probe.per_leaf(table)
    small, large = int(slopes["filter_pmap"]["leaves_small"]), int(slopes["filter_pmap"]["leaves_large"])
    versions_text = ", ".join(f"{k} {v}" for k, v in (versions or {}).items())
    patch_files = [p for p in load.read_patch() if p.path.startswith("equinox/")]
    test_files = [p for p in load.read_patch() if p.path.startswith("tests/")]
    traversal_rows = counts[["label", "flattens", "unflattens"]].rename(columns={"label": "one call of"})
    repro_text = ""
    if repro is not None:
        shown = repro.rename(columns={"cpu_ms_per_call": "host CPU, ms per call"})
        repro_text = "What it printed here (one CPU device):\n\n" + markdown.table(shown, "{:.3f}") + "\n"
    return f"""## `eqx.filter_pmap` and `eqx.filter_jit` cost host CPU per call in proportion to the array leaves, and a patch

**What it costs.** Measured as the dispatching thread's CPU per call (blocked calls, the study's no-op
step, MLP + Adam state, {where}{"; " + versions_text if versions_text else ""}), over `jax.pmap` on
the model's arrays, `eqx.filter_pmap` costs {_excess(_row(table, small, "filter_pmap"))} at {small} array
leaves and {_excess(_row(table, large, "filter_pmap"))} at {large}: {_per_leaf(slopes["filter_pmap"])}.
Over `jax.jit` on params, `eqx.filter_jit` costs {_excess(_row(table, small, "filter_jit"))} at {small} leaves and
{_excess(_row(table, large, "filter_jit"))} at {large}, and waits for every call to finish. A training loop whose
device step takes less than this excess is host-bound by it. (Medians of per-pair differences, [interquartile
range]; per leaf: between the two sizes, the range from the quartiles.)

**Repro:**

```python
{REPRO_SCRIPT}```

{repro_text}
**Where it goes.** Per call, `filter_pmap` resolves `in_axes` over every leaf, `partition`s (three
`tree_map`s), builds a `ShapeDtypeStruct` per array and flattens and hashes all of it to look up
`_filter_pmap_cache`; `jax.pmap` then broadcasts the `in_axes` prefix over the leaves, and `_postprocess`
`combine`s one output tree per output axis. `filter_jit` `combine`s its output with `Static.value`'s. Counted
on a pytree node that counts its own flattens (the call after the compiling one):

{markdown.table(traversal_rows)}

**The patch** (against v{load.PATCHED_RELEASE}; {", ".join(f"`{p.path}` +{p.added} -{p.removed}" for p in patch_files)};
tests in {", ".join(f"`{p.path}` +{p.added}" for p in test_files)}):

1. `filter_jit` partitions its output flat inside the trace (`hashable_partition`) and rebuilds it with one
   unflatten (`hashable_combine`) instead of `combine`.
2. `filter_jit` waits only when the compiled function holds a runtime error check: `_filter_jit_cache` counts
   the `eqx.error_if` checks (raise or breakpoint mode) traced in the function, and the markers of nested
   `filter_jit`s that hold one; with none, it returns no marker and the call dispatches asynchronously like
   `jax.jit`. A check inside a function whose trace JAX reuses from an earlier trace (a plain `jax.jit`, a
   `lax.while_loop` body traced before with the same shapes) is not seen; on an asynchronous backend its
   failure then surfaces at the next synchronisation, as JAX's `JaxRuntimeError`, as it does under `jax.jit`. Code that timed `filter_jit` calls
   without `block_until_ready` will now read the dispatch time, as with `jax.jit`.
3. `filter_pmap` keeps, per wrapper, a cache from input structure (tree structure, non-array leaves, array
   shapes and dtypes) to its `jax.pmap` and flat `in_axes`, which takes the arrays as positional arguments
   (`jax.pmap`'s fast path for flat `in_axes`) and returns its outputs grouped by output axis, rebuilt with one
   unflatten. Callables in `in_axes` are then evaluated once per input structure, as those in `out_axes`
   already are once per trace (documented in the docstring).

<details><summary>The diff</summary>

```diff
{load.DIFF_PATH.read_text().strip()}
```

</details>

**Tests.** {" ".join(_suite_lines(suite_report))}

**Benchmark** (same measure as above, interleaved, {int(table["cpu_ms_n"].max())} repeats per variant;
per leaf with the patch: `filter_pmap` {_per_leaf(slopes["filter_pmap_patched"])},
`filter_jit` {_per_leaf(slopes["filter_jit_patched"])}):

{_benchmark_table(table)}

**Prior art.**

{chr(10).join("- " + item for item in PRIOR_ART)}
"""
