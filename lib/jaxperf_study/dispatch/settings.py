"""Notebook 01's parameters as one typed, frozen object, with its quick and TPU presets in sight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from jaxperf.errors import bad_value, check_int, check_ints

from ..settings import StudySettings, check_fraction, check_seconds

if TYPE_CHECKING:
    from .cost import Cell
    from .models import ModelSpec


@dataclass(frozen=True)
class DispatchSettings(StudySettings):
    """What the dispatch study runs, each cell under ``eqx.filter_pmap`` or ``eqx.filter_jit``.

    The no-op step undonated on every model under ``eqx.filter_pmap`` (the seed's; the cost per
    leaf needs two sizes or more of each kind: MLP, transformer, CNN), and on the ``jit_depths``
    MLPs under ``eqx.filter_jit`` too; the train step (Adam) on the ``train_depths`` MLPs and the
    ``train_layers`` transformers under both, once per entry of ``microbatches`` (the batch
    accumulated in that many slices: the same leaves, more device time per call), and under
    ``eqx.filter_jit`` donated too with ``train_donated``; both steps donated under both on the
    ``donated_depths`` MLPs. The train step on one wide MLP (``heavy_width``, 0: none) has a
    device time far above any path's host time: it tells which paths wait for each call. Each
    cell's diagnosis stops when its ratios are within ``precision`` or after
    ``seconds_per_cell`` of timing (compiles not counted). The accounting splits one call at
    each of ``accounting_depths`` over ``accounting_rounds`` interleaved rounds. Every
    measurement runs in ``processes`` fresh processes, so each quoted number is a median over
    processes with its rerun range. ``deadline_s`` (0: none) is the time the sweep may take in
    all its processes together: cells run in :attr:`cells`' order (most wanted first), and the
    first process keeps only those the others can repeat in time (:class:`.cost.Budget`).

    **The TPU preset** (:data:`TPU`, ``DEVICE_PRESETS["tpu"]``; one TPU v5e chip, one
    command of at most 9 minutes, 540 s). Its arithmetic, from what was measured, not on a TPU:
    opening the chip took 7.4-8.7 s per process there, and starting a process and importing JAX
    and Equinox about 4 s more. On this 2-core VM (load 8; a CPU stand-in, one device), a cell
    took 2-12 s for a no-op step, 12-37 s for the MLP's train step and 125-153 s for the
    transformer's (93-126 s of it XLA:CPU compiling), with 9-36 programs compiled per cell; the
    same programs compiled for a v5e on this VM (libtpu) took 4.1 s (no-op, 392 leaves), 1.4 s
    (MLP train) and 5.5-11 s (transformer train) each. A TPU host's 13 idle cores are faster
    than this loaded VM by a factor no one measured, so process 1 may need 150 s or 600 s: the
    deadline decides, not an estimate. ``deadline_s=390``: process 1 keeps each cell while
    processes 2 and 3 (which load what it compiled from the run's shared cache, but trace and
    time again) can still repeat every cell kept, the least wanted cut first and named "not
    reached"; a later process that runs short stops too, and a cell missing from one process is
    not quoted. Around the sweep: installing the machine's index and the carried wheels (35 s),
    papermill and the notebook's own start (15 s), the summary and figures (30 s), packing (10
    s): 480 s at most of the 540. No compile time is measured here.
    """

    mlp_depths: tuple[int, ...] = (1, 16, 64)
    transformer_layers: tuple[int, ...] = (1, 4)
    cnn_layers: tuple[int, ...] = (4, 32)
    jit_depths: tuple[int, ...] = (1, 64)
    train_depths: tuple[int, ...] = ()
    train_layers: tuple[int, ...] = ()
    microbatches: tuple[int, ...] = (1,)
    train_donated: bool = False
    donated_depths: tuple[int, ...] = ()
    heavy_width: int = 512
    precision: float = 0.05
    seconds_per_cell: float = 3.0
    min_rounds: int = 6
    accounting_depths: tuple[int, ...] = (8, 64)
    accounting_rounds: int = 10
    processes: int = 3
    deadline_s: float = 0.0

    # Two small MLPs, both steps (the train step with 2 microbatches), both donations: every
    # path, the fit and the accounting still run, in a few minutes on a 2-core machine (and the
    # TPU preset's dry run on it: these replace its sizes).
    QUICK: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (1, 4),
        "transformer_layers": (),
        "cnn_layers": (),
        "jit_depths": (1, 4),
        "train_depths": (4,),
        "train_layers": (),
        "microbatches": (2,),
        "donated_depths": (4,),
        "heavy_width": 128,
        "seconds_per_cell": 1.0,
        "min_rounds": 2,
        "accounting_depths": (4,),
        "accounting_rounds": 4,
        "processes": 2,
    }
    # One TPU v5e chip (see the arithmetic above). Most wanted first: the no-op MLPs at 392, 14
    # and 800 leaves, the same under eqx.filter_jit, the train steps (an MLP of 104 leaves, a
    # transformer of 152) with 128 batches accumulated (device time above host time) and with
    # one, the other model families' no-op steps, then the donated train steps. No accounting: it
    # splits Python work alone, which the CPU study measures; no heavy cell: the accumulated
    # train steps say which paths wait.
    TPU: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (64, 1, 132),
        "jit_depths": (1, 64),
        "train_depths": (16,),
        "train_layers": (4,),
        "microbatches": (128, 1),
        "train_donated": True,
        "heavy_width": 0,
        "seconds_per_cell": 1.5,
        "accounting_depths": (),
        "deadline_s": 390.0,
    }
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"tpu": TPU}

    def validate(self) -> None:
        check_ints("mlp_depths", self.mlp_depths)
        if len(set(self.mlp_depths)) < 2:
            raise bad_value(
                "mlp_depths", self.mlp_depths, "at least two depths (a cost per leaf needs two sizes)"
            )
        for name in ("transformer_layers", "cnn_layers", "jit_depths", "train_depths", "train_layers"):
            if getattr(self, name):
                check_ints(name, getattr(self, name))
        for name in ("donated_depths", "accounting_depths"):
            if getattr(self, name):
                check_ints(name, getattr(self, name))
        check_ints("microbatches", self.microbatches)
        if not isinstance(self.train_donated, bool):
            raise bad_value("train_donated", self.train_donated, "True or False")
        check_fraction("precision", self.precision)
        check_seconds("seconds_per_cell", self.seconds_per_cell)
        check_int("min_rounds", self.min_rounds, minimum=2)
        check_int("accounting_rounds", self.accounting_rounds, minimum=3)
        check_int("processes", self.processes, minimum=1)
        check_int("heavy_width", self.heavy_width, minimum=0)
        if (
            isinstance(self.deadline_s, bool)
            or not isinstance(self.deadline_s, (int, float))
            or self.deadline_s < 0
        ):
            raise bad_value("deadline_s", self.deadline_s, "seconds >= 0 (0: no deadline)")

    @property
    def specs(self) -> list[ModelSpec]:
        """The models of the no-op sweep: the MLP depths, then the transformers and the CNNs."""
        from .models import ModelSpec  # here: the settings check runs with the standard library only

        mlps = [ModelSpec("mlp", d) for d in self.mlp_depths]
        others = [ModelSpec("transformer", n) for n in self.transformer_layers]
        return mlps + others + [ModelSpec("cnn", n) for n in self.cnn_layers]

    @property
    def cells(self) -> list[Cell]:
        """Every diagnosis of the sweep, the most wanted first (the order a deadline cuts from
        the end): the no-op MLPs, under eqx.filter_jit too, the train steps, the other no-op
        models, the donated cells, the heavy step."""
        from .cost import Cell
        from .models import ModelSpec

        trained = [ModelSpec("mlp", d, microbatches=k) for k in self.microbatches for d in self.train_depths]
        trained += [
            ModelSpec("transformer", n, microbatches=k) for k in self.microbatches for n in self.train_layers
        ]
        cells = [Cell("noop", spec, False, "pmap") for spec in self.specs[: len(self.mlp_depths)]]
        cells += [Cell("noop", ModelSpec("mlp", d), False, "jit") for d in self.jit_depths]
        cells += [Cell("train", spec, False, family) for spec in trained for family in ("pmap", "jit")]
        cells += [Cell("noop", spec, False, "pmap") for spec in self.specs[len(self.mlp_depths) :]]
        cells += [Cell("train", spec, True, "jit") for spec in trained if self.train_donated]
        donated = [ModelSpec("mlp", d) for d in self.donated_depths]
        cells += [
            Cell(step, spec, True, f)
            for step in ("noop", "train")
            for spec in donated
            for f in ("pmap", "jit")
        ]
        if self.heavy_width:
            cells.append(
                Cell("train", ModelSpec("mlp", 1, width=self.heavy_width, batch_per_device=256), False, "jit")
            )
        return cells

    @property
    def accounting_specs(self) -> list[ModelSpec]:
        from .models import ModelSpec

        return [ModelSpec("mlp", d) for d in self.accounting_depths]
