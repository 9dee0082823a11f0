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


def _suite_lines(data: dict[str, Any]) -> list[str]:
    """One paragraph per tree of the test-suite report (:func:`jaxperf.eqx_patch.suite.sentences`);
    ``data``: all trees (``{"trees": ...}``) or one tree's report."""
    trees = data["trees"] if "trees" in data else {data["equinox"]["release"]: data}
    return [" ".join(suite.sentences(label, report)) for label, report in trees.items()]


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
    patches = {path.name: load.read_patch(path) for path in load.DIFF_PATHS}
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
Over `jax.jit` on params, `eqx.filter_jit` costs {_excess(_row(table, small, "filter_jit"))} at {
        small
    } leaves and
{_excess(_row(table, large, "filter_jit"))} at {
        large
    }, and waits for every call to finish. A training loop whose
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

**The patch**: three diffs, each one commit on Equinox's main (`{load.EQUINOX_MAIN[:12]}`), on top of the
previous, each applying unchanged to {load.PATCHED_RELEASE}; {
        "; ".join(
            f"`{name}`: " + ", ".join(f"`{p.path}` +{p.added} -{p.removed}" for p in files)
            for name, files in patches.items()
        )
    }.

1. `filter_pmap` looks up its `jax.pmap` per input structure (the wrapper's settings, non-array leaves, tree
   structure, array shapes and dtypes) in a cache that is bounded (128 entries, least recently used out),
   locked, and emptied by `eqx.clear_caches()`; `in_axes` is resolved once per structure (documented).
2. `filter_jit` traces the function to a jaxpr (an inlined `jax.jit`, still one trace) and returns its marker,
   and waits, only when that jaxpr or any jaxpr inside it (a reused `jax.jit` trace, a `while_loop` body, a
   nested `filter_jit`) calls back to `equinox._errors`: a call without an `eqx.error_if` dispatches
   asynchronously like `jax.jit`. Nothing is shared between traces, so threads do not interfere. Code that
   timed `filter_jit` calls without `block_until_ready` will now read the dispatch time, as with `jax.jit`.
3. Both rebuild their output with one unflatten (`filter_pmap` groups its outputs per output axis), and
   `filter_pmap`'s `_call` is a function, as `filter_jit`'s is.

<details><summary>The diffs</summary>

```diff
{chr(10).join(path.read_text().strip() for path in load.DIFF_PATHS)}
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
