"""The issue-ready text for Flax, rendered from measured numbers only (:func:`render`): the
repro, the cost per call and per Variable, what ``cached_nnx_jit`` does and its measured result
against ``jax.jit`` on ``nnx.split`` state, Flax's own tests with it, and the prior art."""

from __future__ import annotations

import importlib.metadata
import platform

import pandas as pd

from .. import markdown
from . import probe, variants
from .graph_overhead import PUBLISHED

DROPIN = "cached_nnx_jit"
PRIOR_ART = (
    "google/flax#4045 (Significant performance difference of NNX relative to equinox)",
    "google/flax#4336 (slow steps traced to nnx.split)",
    "google/flax#4384 (the NNX performance guide: the graph walk in pure Python, nnx.cached_partial)",
    "google/flax#4399 (benchmarks/nnx_graph_overhead.py; as published there, depth 100: "
    + " vs ".join(f"{row['mode']} {row['us_per_step']} us per step" for row in PUBLISHED)
    + ")",
    "FLIP 5310 (tree mode, nnx.jit(..., graph=False))",
    "vllm-project/tpu-inference#2607 (~1.7x host-bound from _variable_flatten, fixed by flattening once)",
)
REPRO = """```python
import jax, jax.numpy as jnp, optax
from flax import nnx

class MLP(nnx.Module):
    def __init__(self, depth, rngs):
        self.layers = nnx.List([nnx.Linear(4, 4, rngs=rngs) for _ in range(depth)])
    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

model = MLP(100, nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss

x = y = jnp.ones((8, 4))
for _ in range(1000):
    train_step(model, optimizer, x, y)   # host CPU per call grows with the Variables
```"""


def per_variable_us(rows: pd.DataFrame, step: str, variant: str) -> float:
    """Microseconds of dispatching-thread CPU per call per Variable: the slope of the median
    between the smallest and the largest model of ``rows`` (``ValueError`` with one size)."""
    part = rows[(rows["step"] == step) & (rows["variant"] == variant)]
    medians = part.groupby("variables")["cpu_s_per_call"].median()
    if len(medians) < 2:
        raise ValueError(f"rows hold {len(medians)} model size(s) for step={step!r}: expected at least 2.")
    return 1e6 * (medians.iloc[-1] - medians.iloc[0]) / (medians.index[-1] - medians.index[0])


def _cost_table(rows: pd.DataFrame, step: str) -> str:
    stats = probe.summary(rows)
    part = stats[(stats["step"] == step) & (stats["measure"] == "cpu_s_per_call")]
    table = part.assign(us=[markdown.fmt_stat(r, 0) for _, r in part.iterrows()])
    wide = table.pivot(index="variant", columns="depth", values="us").reindex(
        [v for v in variants.VARIANTS if v in set(part["variant"])]
    )
    wide.columns = [f"depth {d}" for d in wide.columns]
    return markdown.table(wide.reset_index())


def _ratio_lines(rows: pd.DataFrame) -> list[str]:
    ratios = probe.ratios(rows)
    lines = []
    floor = ratios[(ratios["variant"] == "jax.jit leaves") & (ratios["measure"] == "cpu_s_per_call")]
    for (step, depth), part in ratios[ratios["variant"] == DROPIN].groupby(["step", "depth"]):
        by = {r["measure"]: r for _, r in part.iterrows()}
        line = (
            f"- {step} step, depth {depth}: thread CPU {markdown.ratio(by['cpu_s_per_call'])}, "
            f"blocked wall {markdown.ratio(by['wall_s_per_call'])}, "
            f"pipelined {markdown.ratio(by['loop_s_per_call'])}"
        )
        at = floor[(floor["step"] == step) & (floor["depth"] == depth)]
        if len(at):  # the state as one flat list of leaves: the floor of a functional loop
            line += f" (`jax.jit` on the flat leaves: thread CPU {markdown.ratio(at.iloc[0])})"
        lines.append(line)
    return lines


def render(
    rows: pd.DataFrame,
    flax_counts: pd.DataFrame | None = None,
    only_dropin: list[str] | None = None,
    overhead: pd.DataFrame | None = None,
) -> str:
    """The issue text: ``rows`` from :func:`jaxperf.nnx.probe.run` (at least two depths);
    optionally Flax's tests side by side (:func:`jaxperf.nnx.flax_sdist.compare`) and Flax's
    benchmark (:func:`jaxperf.nnx.graph_overhead.table`)."""
    versions = {p: importlib.metadata.version(p) for p in ("flax", "jax", "jaxlib", "optax")}
    env = ", ".join(f"{p} {v}" for p, v in versions.items()) + f", Python {platform.python_version()}"
    lines = [
        "## `nnx.jit` in graph mode walks the object graph twice per call: a per-structure cache closes the gap",
        "",
        f"Measured on {platform.machine()} CPU, one device ({env}); medians [interquartile range] of "
        "interleaved rounds, each variant first checked to compute what `nnx.jit` computes.",
        "",
        "### Repro",
        "",
        REPRO,
        "",
    ]
    for step in sorted(set(rows["step"])):
        slope = {v: per_variable_us(rows, step, v) for v in ("nnx.jit", variants.REFERENCE, DROPIN)}
        lines += [
            f"### Host CPU per call, {step} step (us, dispatching thread)",
            "",
            _cost_table(rows, step),
            "",
            f"Per call per Variable (slope between the smallest and largest model): `nnx.jit` "
            f"{slope['nnx.jit']:.2f} us, `jax.jit` on split state {slope[variants.REFERENCE]:.2f} us, "
            f"the cache below {slope[DROPIN]:.2f} us.",
            "",
        ]
    lines += [
        "### What a cache of the graph walk does",
        "",
        "`jaxperf.cached_nnx_jit` (same signature and semantics as `nnx.jit`) walks the graph once per "
        "structure with `graphlib.flatten`, keeps the Variables in Flax's leaf order, and on later calls "
        "checks the structure with one C-level comparison per node's `__dict__`, container and Variable "
        "metadata (the call's arguments held weakly), reads the raw values, calls one `jax.jit`, and "
        "writes back only the values the step changed. A structural change re-records; a new graph "
        "definition re-traces; anything it cannot record exactly goes to `nnx.jit`.",
        "",
        f"Its cost per call over `jax.jit` on split state (per-pair ratios, `{DROPIN}` / `jax.jit split`):",
        "",
        *_ratio_lines(rows),
        "",
    ]
    if flax_counts is not None:
        lines += ["### Flax's own tests with it patched in as `nnx.jit`", "", markdown.table(flax_counts), ""]
        if only_dropin:
            lines += ["Failing only with the drop-in: " + ", ".join(f"`{t}`" for t in only_dropin), ""]
    if overhead is not None:
        lines += [
            "### `benchmarks/nnx_graph_overhead.py` here and as published",
            "",
            markdown.table(overhead),
            "",
        ]
    lines += ["### Prior art", "", *[f"- {item}" for item in PRIOR_ART]]
    return "\n".join(lines) + "\n"
