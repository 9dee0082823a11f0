"""The issue-ready text for Flax, rendered from measured numbers only (:func:`render`): the
repro, the cost per call and per Variable, what ``cached_nnx_jit`` does and its measured result
against ``jax.jit`` on ``nnx.split`` state, Flax's own tests with it, and the prior art."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any

import pandas as pd

from .. import markdown
from .graph_overhead import PUBLISHED
from .report import LABELS

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


def _per_variable(summary: dict[str, Any], method: str) -> str:
    line = summary["per_variable"].get(method)
    if not line:
        return "n/a"
    return (
        f"{line['b_us_per_leaf']:.1f} µs [{line['b_us_per_leaf_q25']:.1f}, {line['b_us_per_leaf_q75']:.1f}]"
    )


def _ratio_lines(summary: dict[str, Any]) -> list[str]:
    found = summary["ranges"].get(f"{DROPIN}/nnx_split_jit", {})
    lines = []
    for measure, words in (("loop_it_per_s", "pipelined"), ("it_per_s", "each call blocked")):
        for cell in found.get(measure, {}).get("by_cell", []):
            lines.append(
                f"- {cell['step']} step, {cell['leaves']} Variables, {words}: {markdown.ratio(cell)} the it/s "
                "of `jax.jit` on split state"
            )
    return lines


def render(summary: dict[str, Any]) -> str:
    """The issue text for Flax, from notebook 11's summary (:func:`jaxperf.nnx.report.headline`)."""
    versions = {p: importlib.metadata.version(p) for p in ("flax", "jax", "jaxlib", "optax")}
    env = ", ".join(f"{p} {v}" for p, v in versions.items()) + f", Python {platform.python_version()}"
    lines = [
        "## `nnx.jit` in graph mode walks the object graph on every call: a per-structure cache closes the gap",
        "",
        f"Measured on {platform.machine()} CPU, one device ({env}); medians [interquartile range] of "
        "interleaved rounds, each way of calling first checked to leave the same model and optimizer state.",
        "",
        "### Repro",
        "",
        REPRO,
        "",
        "### Host CPU per call per Variable, over `jax.jit` on `nnx.split` state (dispatching thread)",
        "",
        *[f"- {LABELS[m]}: {_per_variable(summary, m)}" for m in LABELS if m in summary["per_variable"]],
        "",
        "### What a cache of the graph walk does",
        "",
        "`jaxperf.cached_nnx_jit` (same signature and semantics as `nnx.jit`) walks the graph once per "
        "structure with `graphlib.flatten`, and on later calls checks the structure with one C-level "
        "comparison per node's `__dict__`, container and Variable metadata (the call's arguments held "
        "weakly), reads the raw values, calls one `jax.jit`, and writes back only the values the step "
        "changed. A structural change re-records; anything it cannot record exactly goes to `nnx.jit`.",
        "",
        *_ratio_lines(summary),
        "",
    ]
    tests = summary.get("flax_tests")
    if tests:
        lines += [
            "### Flax's own tests with it patched in as `nnx.jit`",
            "",
            markdown.table(pd.DataFrame(tests["counts"])),
            "",
        ]
        if tests.get("only_dropin"):
            lines += [
                "Failing only with the drop-in: " + ", ".join(f"`{t}`" for t in tests["only_dropin"]),
                "",
            ]
    if summary.get("flax_benchmark"):
        lines += [
            "### `benchmarks/nnx_graph_overhead.py` here and as published",
            "",
            markdown.table(pd.DataFrame(summary["flax_benchmark"])),
            "",
        ]
    lines += ["### Prior art", "", *[f"- {item}" for item in PRIOR_ART]]
    return "\n".join(lines) + "\n"
