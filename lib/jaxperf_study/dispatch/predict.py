"""Predict, then measure: the it/s each TPU case of notebook 01 should reach by the CPU study's
law, written before the TPU runs it, and set beside what it measured (:func:`beside`).

    python tools/predict_tpu.py    # results/tpu/predictions/dispatch.json and .md, from this module

The law, per case (the TPU preset's, :data:`.settings.DispatchSettings.TPU`) and path:

- **host**: the path's host CPU per call on the CPU study's undonated no-op MLPs of its family
  (``results/cpu/dispatch/timings.csv``), a line ``a + b * leaves`` per process, read at the
  case's leaves (the median line and the processes' rerun range), times the TPU host's speed
  against the CPU's, not measured: :data:`HOST_SPEED` (a line read below 0 reads :data:`FLOOR_MS`).
  A call's host work is taken not to depend on what the step computes (a train step's host work
  is a no-op step's of its leaves). The pmap
  family's records come from 8 forced devices; the TPU has one, and ``jax.pmap``'s own work
  per leaf grows with devices: its host there is read high.
- **device**: a static estimate, the step on the partitioned state compiled for a TPU v5e on
  this CPU (libtpu): XLA's ``optimal_seconds`` (its roofline for that chip) times
  :data:`ROOFLINE_SHARE`, plus a launch of :data:`LAUNCH_MS` (assumed); a step of ``k``
  accumulated microbatches as ``k`` single ones (XLA counts a loop's body once).
- **it/s**: in the loop (pipelined), ``1 / max(host, device)`` for a path that runs ahead and
  ``1 / (host + device)`` for one that waits for each call (the CPU study's verdict); each call
  blocked, ``1 / (host + device)``. Each a range [lo, hi] from the ranges above.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jaxperf.paths import PROJECT_ROOT

from . import per_leaf
from .cost import BASELINE, FIX, PACKED, RECIPE, SLOW

#: the TPU host's Python against the CPU study's 2-core VM: per call host time x this (assumed)
HOST_SPEED = (0.5, 1.5)
#: the share of XLA's roofline a small program reaches, and a launch's ms (assumed)
ROOFLINE_SHARE, LAUNCH_MS = (1.0, 1 / 3), (0.01, 0.05)
#: a host line read below this at a case's leaves (noise at the line's low end) is read as this
FLOOR_MS = 0.001
#: a prediction whose it/s range spans at most this factor (hi / lo) can fail a test; a wider one says little
TESTABLE = 2.0
#: what names a case: the measured one and its prediction share these
KEYS = ("step", "model", "donated", "family", "method")


def methods(family: str) -> list[str]:
    """Every path a cell of ``family`` times, the reader's first."""
    return [
        SLOW[family],
        BASELINE[family],
        RECIPE[family],
        FIX[family],
        PACKED[family],
        f"{SLOW[family]}_patched",
    ]


def host_law(timings: pd.DataFrame) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(family, method) -> the (a ms, b ms per leaf) of each process, fitted on the undonated
    no-op MLP cells (a process's value per cell its median)."""
    rows = timings[
        (timings["step"] == "noop") & (timings["kind"] == "mlp") & ~timings["donated"].astype(bool)
    ]
    host = per_leaf.host_column(rows)
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for (family, method), part in rows.groupby(["family", "method"], sort=False):
        for proc in per_leaf.per_process(part):
            cells = proc.groupby("leaves")[host].median()
            if len(cells) >= 2:
                b, a = np.polyfit(cells.index.to_numpy(float), 1e3 * cells.to_numpy(float), 1)
                out.setdefault((str(family), str(method)), []).append((float(a), float(b)))
    return out


def device_estimate(cell: Any) -> tuple[float, float]:
    """(lo, hi) ms of one call of ``cell``'s step on a TPU v5e: static (module docstring)."""
    import equinox as eqx
    import jax

    from jaxperf.compilers.mosaic_tpu import topology

    from .models import ModelSpec
    from .runners import on_params
    from .steps import get_step

    spec = ModelSpec(**{**vars(cell.spec), "microbatches": 1})
    model, opt_state = spec.build()
    params, static = eqx.partition(model, eqx.is_array)
    args = topology.placed((params, spec.batch(1), opt_state), topology.mesh("v5e"))
    costs = (
        jax.jit(on_params(get_step(cell.step, None), static)).trace(*args).lower().compile().cost_analysis()
    )
    ms = (
        1e3
        * float((costs[0] if isinstance(costs, list) else costs)["optimal_seconds"])
        * cell.spec.microbatches
    )
    return ms / ROOFLINE_SHARE[0] + LAUNCH_MS[0], ms / ROOFLINE_SHARE[1] + LAUNCH_MS[1]


def predict(
    timings: pd.DataFrame,
    waits: dict[str, str],
    cells: list[Any],
    host_speed: tuple[float, float] = HOST_SPEED,
) -> list[dict[str, Any]]:
    """One row per (case, path): host ms [lo, mid, hi], device ms and it/s [lo, hi], the bound,
    and ``width``, the it/s range's hi over lo. ``host_speed``: the host the cases will run on
    against the one ``timings`` were measured on ((1, 1): the same)."""
    law, rows = host_law(timings), []
    for cell in cells:
        labels, device = cell.labels, device_estimate(cell)
        for method in [m for m in methods(cell.family) if (cell.family, m) in law]:
            at = per_leaf.spread(
                [max(a + b * labels["leaves"], FLOOR_MS) for a, b in law[(cell.family, method)]]
            )
            host = (at["lo"] * host_speed[0], at["median"], at["hi"] * host_speed[1])
            waiting = waits.get(method) == "waits for each call"
            slow, fast = (host[2], device[1]), (host[0], device[0])
            loop = (sum(slow), sum(fast)) if waiting else (max(slow), max(fast))
            bound = "host" if host[0] > device[1] else "device" if device[0] > host[2] else "either"
            rows.append(
                {k: labels[k] for k in ("step", "model", "microbatches", "leaves", "donated", "family")}
                | {"method": method, "host_ms": host, "device_ms": device, "waits": waiting, "bound": bound}
                | {"loop_it_per_s": [1e3 / t for t in loop], "it_per_s": [1e3 / sum(slow), 1e3 / sum(fast)]}
                | {"width": loop[0] / loop[1]}
            )
    return rows


def load(backend: str, root: Path = PROJECT_ROOT) -> dict[str, Any] | None:
    """The committed predictions for ``backend`` (None where there are none): beside the study's
    results folder, which a device run's results replace whole."""
    path = root / "results" / backend / "predictions" / "dispatch.json"
    return json.loads(path.read_text()) if path.is_file() else None


def beside(cases: list[dict[str, Any]], predictions: dict[str, Any]) -> dict[str, Any]:
    """Each measured case's pipelined it/s beside its predicted [lo, hi]: its fold (measured over
    the range's nearer end; 1 inside), and per bound how many lie inside and the folds' extremes."""
    wanted = {tuple(str(p[k]) for k in KEYS): p for p in predictions["cases"]}
    testable = [p for p in wanted.values() if p["loop_it_per_s"][1] / p["loop_it_per_s"][0] <= TESTABLE]
    rows = []
    for case in cases:
        found, measured = wanted.get(tuple(str(case[k]) for k in KEYS)), case["loop_it_per_s"]["median"]
        if found is not None and np.isfinite(measured):
            lo, hi = found["loop_it_per_s"]
            fold = measured / hi if measured > hi else measured / lo if measured < lo else 1.0
            rows.append(
                {k: case[k] for k in KEYS} | {"measured": measured, "predicted": [lo, hi], "fold": fold}
            )
            rows[-1]["bound"] = found["bound"]
            rows[-1]["width"] = hi / lo
    by_bound = {
        bound: {"n": len(folds), "inside": folds.count(1.0), "min": min(folds), "max": max(folds)}
        for bound in ("host", "device", "either")
        if (folds := [r["fold"] for r in rows if r["bound"] == bound])
    }
    inside = sum(r["fold"] == 1.0 for r in rows)
    tested = [r for r in rows if r["width"] <= TESTABLE]
    return {
        "n": len(rows),
        "inside": inside,
        "testable": len(testable),
        "tested": len(tested),
        "tested_inside": sum(r["fold"] == 1.0 for r in tested),
        "tested_folds": [
            min((r["fold"] for r in tested), default=1.0),
            max((r["fold"] for r in tested), default=1.0),
        ],
        "by_bound": by_bound,
        "rows": rows,
        "made_utc": predictions["made_utc"],
        "basis": predictions.get("basis", "the CPU study's records"),
    }
