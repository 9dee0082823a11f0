"""The per-call cost sweep of notebook 01: :func:`jaxperf.diagnosis.diagnose` on the study's models.

Each cell is the seed's step wrapped as a reader would wrap it (``eqx.filter_pmap`` over every
device, family ``pmap``, or ``eqx.filter_jit`` on one, family ``jit``); the diagnosis engine
derives every cheaper path, proves each returns the same outputs and next state, and times them
interleaved in the seed's loop: the study's numbers and a reader's diagnosis are one measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import pandas as pd

from jaxperf.diagnosis import diagnose
from jaxperf.diagnosis.paths import _as_pmap_outputs

from .eqx_patch.path import PATHS as PATCHED
from .models import ModelSpec, count_leaves
from .runners import Inputs, put
from .steps import AXIS, batch_first, get_step

FAMILIES = ("pmap", "jit")
#: the study's name for each path a diagnosis times (its palette id), by family
SLOW = {"pmap": "filter_pmap", "jit": "filter_jit", "nnx": "nnx_jit"}
BASELINE = {"pmap": "pmap_params", "jit": "jit_params", "nnx": "nnx_split_jit"}
FIX = {"pmap": "cached_filter_pmap", "jit": "cached_filter_jit", "nnx": "cached_nnx_jit"}
PACKED = {"pmap": "packed_pmap", "jit": "packed_jit"}
#: Equinox's "low-overhead training loops" recipe (docs/tricks.md), with the cell's own wrapper
RECIPE = {"pmap": "filter_pmap_recipe", "jit": "filter_jit_recipe"}


@dataclass(frozen=True)
class Cell:
    """One diagnosis of the sweep."""

    step: str
    spec: ModelSpec
    donated: bool
    family: str

    def make(self) -> tuple[Callable[..., Any], tuple]:
        """The seed's step wrapped as a reader wraps it, and its arguments placed for it."""
        model, opt_state = self.spec.build()
        devices = jax.devices()
        if self.family == "pmap":
            inputs = Inputs(self.step, model, opt_state, self.spec.batch(len(devices)), devices, False)
            args = _as_pmap_outputs(inputs.mapped(), devices, AXIS)
            wrapped = eqx.filter_pmap(
                get_step(self.step, AXIS), axis_name=AXIS, donate="all" if self.donated else "none"
            )
        else:
            x = self.spec.batch(1)
            model, x, opt_state = put((model, x, opt_state), devices[0])
            # the batch is the second argument; "all" would donate it too, so the seed's
            # loop (which reuses no batch) is mirrored by donating model and state only
            wrapped = eqx.filter_jit(
                batch_first(get_step(self.step, None)), donate="all-except-first" if self.donated else "none"
            )
            args = (x, model, opt_state)
        return wrapped, args

    @property
    def labels(self) -> dict[str, Any]:
        model, opt_state = self.spec.build()
        leaves = count_leaves(model, self.spec.batch(1), opt_state)
        return {
            "step": self.step,
            "model": self.spec.name,
            "kind": self.spec.kind,
            "leaves": leaves,
            "donated": self.donated,
            "family": self.family,
        }


def run_cell(
    cell: Cell,
    *,
    precision: float,
    max_seconds: float,
    min_rounds: int,
    calls_per_round: int | None = None,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """(timings with the cell's labels and a ``method`` column, {path: how it differs or why it
    was not offered}) of one diagnosis."""
    wrapped, args = cell.make()
    result = diagnose(
        wrapped,
        *args,
        precision=precision,
        max_seconds=max_seconds,
        timing_only=True,  # cells are timed alike, whatever their compiles cost
        min_rounds=min_rounds,
        calls_per_round=calls_per_round,
        # the patched Equinox, on Equinox's cells only: the study's path, not the tool's
        extra_paths=PATCHED if getattr(cell, "family", None) in FAMILIES else None,
    )
    timings = result.timings.assign(method=result.timings["variant"].map(result.methods), **cell.labels)
    notes = {**{k: f"not offered: {v}" for k, v in result.skipped.items()}, **result.problems}
    return timings, notes


def sweep(
    cell_list: list[Cell], *, precision: float, max_seconds: float, min_rounds: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every cell: (timings, one row per path a cell did not time, with why)."""
    frames, notes = [], []
    for cell in cell_list:
        timings, why = run_cell(cell, precision=precision, max_seconds=max_seconds, min_rounds=min_rounds)
        frames.append(timings)
        notes += [{**cell.labels, "path": path, "why": text} for path, text in why.items()]
    columns = ["step", "model", "kind", "leaves", "donated", "family", "path", "why"]
    return pd.concat(frames, ignore_index=True), pd.DataFrame(notes, columns=columns)
