"""The per-call cost sweep of notebook 01: :func:`jaxperf.diagnosis.diagnose` on the study's models.

Each cell is the seed's step wrapped as a reader would wrap it (``eqx.filter_pmap`` over every
device, family ``pmap``, or ``eqx.filter_jit`` on one, family ``jit``); the diagnosis engine
derives every cheaper path, proves each returns the same outputs and next state, and times them
interleaved in the seed's loop: the study's numbers and a reader's diagnosis are one measurement.
A :class:`Budget` holds the sweep over all its processes to one deadline.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import pandas as pd

from jaxperf.diagnosis import diagnose
from jaxperf.diagnosis.engine import Compiles
from jaxperf.diagnosis.paths import _as_pmap_outputs

from .eqx_patch.path import PATHS as PATCHED
from .models import ModelSpec, count_leaves
from .runners import mapped, put
from .sharded import PATHS as SHARDED
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
            args = _as_pmap_outputs(
                mapped(model, opt_state, self.spec.batch(len(devices)), devices), devices, AXIS
            )
            wrapped = eqx.filter_pmap(
                get_step(self.step, AXIS, self.spec.microbatches),
                axis_name=AXIS,
                donate="all" if self.donated else "none",
            )
        else:
            x = self.spec.batch(1)
            model, x, opt_state = put((model, x, opt_state), devices[0])
            # the batch is the second argument; "all" would donate it too, so the seed's
            # loop (which reuses no batch) is mirrored by donating model and state only
            wrapped = eqx.filter_jit(
                batch_first(get_step(self.step, None, self.spec.microbatches)),
                donate="all-except-first" if self.donated else "none",
            )
            args = (x, model, opt_state)
        return wrapped, args

    def loader(self, args: tuple) -> Callable[[], Any] | None:
        """None, or for a donated cell under ``eqx.filter_pmap`` (whose ``donate="all"`` donates
        the batch too, so a loop cannot reuse it) a loader: a fresh copy of the placed batch per
        call, as a data pipeline hands one, placed alike."""
        if not (self.donated and self.family == "pmap"):
            return None
        import jax.numpy as jnp

        source = jnp.copy(args[1])  # the cell's own batch may be donated by its first call
        return lambda: jnp.copy(source)

    @property
    def labels(self) -> dict[str, Any]:
        model, opt_state = self.spec.build()
        leaves = count_leaves(model, self.spec.batch(1), opt_state)
        return {
            "step": self.step,
            "model": self.spec.name,
            "microbatches": self.spec.microbatches,
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
    loop_calls: int = 50,
    loop_seconds: float = 1.0,
) -> tuple[pd.DataFrame, dict[str, str]]:
    """(timings with the cell's labels and a ``method`` column, {path: how it differs or why it
    was not offered}) of one diagnosis."""
    wrapped, args = cell.make()
    result = diagnose(
        wrapped,
        *args,
        loader=cell.loader(args) if isinstance(cell, Cell) else None,  # NNX cells carry their batch
        precision=precision,
        max_seconds=max_seconds,
        timing_only=True,  # cells are timed alike, whatever their compiles cost
        min_rounds=min_rounds,
        calls_per_round=calls_per_round,
        loop_calls=loop_calls,
        loop_seconds=loop_seconds,
        # the study's paths, not the tool's: the patched Equinox on Equinox's cells, and the
        # sharded paths Equinox and JAX advise instead of pmap on the pmap cells
        extra_paths={**PATCHED, **(SHARDED if cell.family == "pmap" else {})}
        if getattr(cell, "family", None) in FAMILIES
        else None,
    )
    timings = result.timings.assign(method=result.timings["variant"].map(result.methods), **cell.labels)
    notes = {**{k: f"not offered: {v}" for k, v in result.skipped.items()}, **result.problems}
    return timings, notes


@dataclass(frozen=True)
class Budget:
    """``seconds`` for a sweep in all of its ``processes``, which run one after another: the
    first runs the cells in order while the rest can still repeat them in time (its own
    compiles excepted: the others load them from the run's compilation cache), and writes the
    list to ``plan``; the others run that list, each stopping where its share ends. A cell not
    run reads "not reached"."""

    ends_at: float  # time.time() by which the last process must be done
    started_at: float
    processes: int
    plan: str  # a JSON file in a folder of the run's own

    #: what a cell is guessed to cost before one like it ran, by step (its compiles included)
    FIRST_GUESS_S = {"noop": 20.0, "train": 60.0}
    #: a cell's programs (about 10) loaded from the compilation cache by a later process
    CACHE_LOADS_S = 1.0

    @classmethod
    def start(cls, seconds: float, processes: int) -> Budget | None:
        """A budget of ``seconds`` from now (None for 0: no deadline)."""
        if not seconds:
            return None
        now = time.time()
        folder = tempfile.mkdtemp(prefix="jaxperf_budget_")
        return cls(now + seconds, now, processes, str(Path(folder) / "plan.json"))

    def cells(self, cell_list: list[Cell], spent: dict[int, tuple[float, float]]) -> Iterator[int]:
        """The indices of ``cell_list`` this process runs, in order, as ``spent`` (index ->
        (seconds, compile seconds) of each cell run here) fills; writes or reads the plan."""
        path, now = Path(self.plan), time.time()
        if path.is_file():  # a later process: the first's cells, while its share lasts
            plan = json.loads(path.read_text())
            plan["started"] += 1
            path.write_text(json.dumps(plan))
            after = self.processes - plan["started"]  # processes still to come after this one
            for i in plan["cells"]:
                left = self.ends_at - after * plan["each"] - time.time()
                if plan["rerun"][str(i)] <= left:
                    yield i
            return
        startup = now - self.started_at  # a process's start, imports and device open, as this one's
        planned: list[int] = []
        rerun: dict[str, float] = {}
        for i, cell in enumerate(cell_list):
            alike = [spent[j][0] for j in planned if _alike(cell_list[j], cell)]
            first = max(alike) if alike else self.FIRST_GUESS_S[cell.step]
            again = 1.2 * (sum(rerun.values()) + first / 2)  # a margin: a later process is no faster
            if time.time() + first + (self.processes - 1) * (startup + again) > self.ends_at:
                continue  # the later processes could not repeat it in time: not reached
            yield i
            seconds, compiling = spent[i]
            planned.append(i)
            rerun[str(i)] = max(seconds - compiling, 1.0) + self.CACHE_LOADS_S
        each = startup + sum(rerun.values())
        path.write_text(json.dumps({"cells": planned, "rerun": rerun, "each": each, "started": 1}))


def _alike(a: Cell, b: Cell) -> bool:
    """Whether two cells cost alike: the same step, family, kind of model and microbatches or not."""
    key = lambda c: (c.step, c.family, c.spec.kind, c.spec.microbatches > 1)  # noqa: E731
    return key(a) == key(b)


def sweep(
    cell_list: list[Cell],
    *,
    precision: float,
    max_seconds: float,
    min_rounds: int,
    budget: Budget | None = None,
    loop_calls: int = 50,
    loop_seconds: float = 1.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every cell (those the ``budget`` leaves time for): (timings, one row per path a cell did
    not time, or cell not reached, with why); every path in the seed's loop, at least
    ``loop_calls`` calls and ``loop_seconds`` long."""
    frames, notes, spent = [], [], dict[int, tuple[float, float]]()
    Compiles.start()  # the seconds JAX spends compiling: a cell's own compiles are told apart
    order = budget.cells(cell_list, spent) if budget else iter(range(len(cell_list)))
    for i in order:
        cell, started, compiled = cell_list[i], time.time(), Compiles.seconds
        timings, why = run_cell(
            cell,
            precision=precision,
            max_seconds=max_seconds,
            min_rounds=min_rounds,
            loop_calls=loop_calls,
            loop_seconds=loop_seconds,
        )
        spent[i] = (time.time() - started, Compiles.seconds - compiled)
        frames.append(timings.assign(cell_s=spent[i][0], compile_s=spent[i][1]))  # what sizes a part
        notes += [{**cell.labels, "path": path, "why": text} for path, text in why.items()]
    for i in sorted(set(range(len(cell_list))) - set(spent)):
        late = "not reached: the run's time budget (deadline_s) ended first"
        notes.append({**cell_list[i].labels, "path": "every path", "why": late})
    columns = ["step", "model", "microbatches", "kind", "leaves", "donated", "family", "path", "why"]
    timings = (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["method", *columns[:7]])
    )
    return timings, pd.DataFrame(notes, columns=columns)
