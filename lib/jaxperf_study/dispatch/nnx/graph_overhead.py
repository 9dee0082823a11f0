"""Flax's own ``benchmarks/nnx_graph_overhead.py`` (from the sdist of the installed Flax, see
:mod:`.flax_sdist`), run on this machine as shipped, beside the numbers Flax published.

The script builds an MLP of ``Block`` s (a ``Linear`` and a ``BatchNorm``) and an
``nnx.Optimizer``, and times ``total_steps`` calls of an empty step in one of three modes:
``nnx`` (``@nnx.jit`` in graph mode), ``jax`` (``jax.jit`` on ``nnx.split`` state, returning
it) and ``jit_partial`` (``nnx.jit_partial(..., graph=False)``). It prints the wall time per
step, the first (compiling) call included and no final wait: its numbers are its own method's,
read from its output, not this study's medians.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd

from jaxperf.errors import check_choice, check_int, check_ints

from .flax_sdist import SourcesNotCarried, sdist

MODES = ("nnx", "jax", "jit_partial")
#: as published in Flax PR #4399's description (2024-11-26), from
#: ``nnx_graph_overhead.py --mode=all --depth=100 --total_steps=1000``: us per step
PUBLISHED = (
    {"mode": "nnx", "depth": 100, "us_per_step": 7961.96, "source": "Flax PR #4399 (published)"},
    {"mode": "jax", "depth": 100, "us_per_step": 1789.88, "source": "Flax PR #4399 (published)"},
)
_PER_STEP = re.compile(r"time per step: ([0-9.]+)")
#: the one row of :func:`table` where Flax's sources cannot be had (a device with no network)
NOT_CARRIED = "Flax's suite not run: its sources are not carried"


def run_script(mode: str, depth: int, total_steps: int = 100, width: int = 32, timeout_s: int = 900) -> float:
    """Microseconds per step that the script prints for ``--mode=mode --depth=depth``."""
    check_choice("mode", mode, MODES)
    check_int("depth", depth, minimum=3)  # the script builds depth - 2 hidden blocks
    check_int("total_steps", total_steps)
    check_int("width", width)
    script = sdist() / "benchmarks" / "nnx_graph_overhead.py"
    args = [f"--mode={mode}", f"--depth={depth}", f"--total_steps={total_steps}", f"--width={width}"]
    proc = subprocess.run(
        [sys.executable, "-P", str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")},
        check=False,
    )
    found = _PER_STEP.findall(proc.stdout)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"nnx_graph_overhead.py {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return float(found[-1])


def table(depths: list[int], modes: tuple[str, ...] = MODES, total_steps: int = 100) -> pd.DataFrame:
    """One row per (mode, depth) run here (``source`` "this machine"), then Flax's published
    rows; ``us_per_step`` as the script prints it; :data:`NOT_CARRIED` without Flax's sources."""
    check_ints("depths", depths, minimum=3)
    try:
        sdist()
    except SourcesNotCarried as err:
        print(f"{NOT_CARRIED}: {err}")
        return pd.DataFrame([{"mode": ", ".join(modes), "source": NOT_CARRIED}, *PUBLISHED])
    rows = [
        {
            "mode": mode,
            "depth": depth,
            "us_per_step": run_script(mode, depth, total_steps),
            "source": "this machine",
        }
        for depth in depths
        for mode in modes
    ]
    return pd.DataFrame([*rows, *PUBLISHED])
