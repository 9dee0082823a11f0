"""The issue-ready text for Flax, rendered from measured numbers only (:func:`render`): the
repro, the cost per call and per Variable, what ``cached_nnx_jit`` does and its measured result
against ``jax.jit`` on ``nnx.split`` state, Flax's own tests with it, and the prior art. Its
prose is templates/issue.md; this module only picks the values."""

from __future__ import annotations

import importlib.metadata
import platform
from typing import Any

import pandas as pd

from .. import markdown
from .graph_overhead import PUBLISHED
from .report import LABELS

DROPIN = "cached_nnx_jit"


def _ratio_lines(summary: dict[str, Any]) -> list[str]:
    found = summary["ranges"].get(f"{DROPIN}/nnx_split_jit", {})
    return [
        f"- {cell['step']} step, {cell['leaves']} Variables, {words}: {markdown.ratio(cell)}"
        for measure, words in (("loop_it_per_s", "pipelined"), ("it_per_s", "each call blocked"))
        for cell in found.get(measure, {}).get("by_cell", [])
    ]


def render(summary: dict[str, Any]) -> str:
    """The issue text for Flax, from notebook 11's summary (:func:`jaxperf.nnx.report.headline`)."""
    versions = {p: importlib.metadata.version(p) for p in ("flax", "jax", "jaxlib", "optax")}
    per_variable = [
        f"- {LABELS[m]}: {line['b_us_per_leaf']:.1f} µs [{line['b_us_per_leaf_q25']:.1f}, "
        f"{line['b_us_per_leaf_q75']:.1f}]"
        for m, line in summary["per_variable"].items()
        if m in LABELS
    ]
    tests = summary.get("flax_tests")
    flax_tests = markdown.table(pd.DataFrame(tests["counts"])) if tests else "Not run here."
    if tests and tests.get("only_dropin"):
        flax_tests += "\n\nFailing only with the drop-in: " + ", ".join(
            f"`{t}`" for t in tests["only_dropin"]
        )
    bench = summary.get("flax_benchmark")
    values = {
        "machine": platform.machine(),
        "env": ", ".join(f"{p} {v}" for p, v in versions.items()) + f", Python {platform.python_version()}",
        "per_variable": "\n".join(per_variable) or "Not measured.",
        "ratios": "\n".join(_ratio_lines(summary)) or "Not measured.",
        "flax_tests": flax_tests,
        "benchmark": markdown.table(pd.DataFrame(bench)) if bench else "Not run here.",
        "published": " vs ".join(f"{row['mode']} {row['us_per_step']} us per step" for row in PUBLISHED),
    }
    return markdown.fill(markdown.template("jaxperf.nnx", "issue.md"), values)
