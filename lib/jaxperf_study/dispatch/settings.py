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
        leaf needs two sizes or more of each kind: MLP, transformer, CNN), and under
        ``eqx.filter_jit`` on the ``jit_depths`` MLPs and on every transformer and CNN; the train
        step (Adam) on the ``train_depths`` MLPs, the ``train_layers`` transformers and the
        ``train_cnn_layers`` CNNs under both, once per entry of ``microbatches`` (the batch
        accumulated in that many slices: the same leaves, more device time per call), and under
        ``eqx.filter_jit`` donated too with ``train_donated``; both steps donated under both on the
        ``donated_depths`` MLPs. The train step on one wide MLP (``heavy_width``, 0: none) has a
        device time far above any path's host time: it tells which paths wait for each call. Each
        cell's diagnosis stops when its ratios are within ``precision`` or after
        ``seconds_per_cell`` of timing (compiles not counted). The accounting splits one call at
        each of ``accounting_depths`` over ``accounting_rounds`` interleaved rounds. Every
        measurement runs in ``processes`` fresh processes, so each quoted number is a median over
        processes with its rerun range. ``deadline_s`` (0: none) is the time a run may take in all
        its processes together: cells run in :attr:`cells`' order (most wanted first), and the first
        process keeps only those the others can repeat in time (:class:`.cost.Budget`); a cell cut
        reads "not reached".

        ``part`` (:data:`PARTS`) runs one part of the cells: a device command runs one part, and
        tools/device/unpack.sh merges the parts' records, so that every cell is reached without a
        deadline cutting it.

        **The TPU preset** (:data:`TPU`; one TPU v5e chip, commands of at most 9 minutes, 540 s,
        one part each; a pmap cell times 9 paths, a jit cell 6, each for ``seconds_per_cell`` (1 s:
    the TPU's two runs at 2b842c2 agreed within 5% after 1.5 s)). Measured there at 2b842c2: opening the chip took 6-15 s per process, one run
        of the no-op MLP cells (5) and two accumulated MLP train cells took 390 s over 3 processes,
        the later processes loading what the first compiled from the run's compilation cache.
        Compiled for a v5e on this VM, a no-op program took 4.1 s (392 leaves), an MLP train program
        1.4 s and a transformer's 5.5-11 s. Each part is sized to a little under 390 s of sweep in
        its 3 processes: ``noop`` 5 no-op MLP cells and the accounting, ``models`` 8 no-op cells on
        transformers and CNNs, ``train`` 6 accumulated train cells (433 s at 822d930: over, so it runs
        as two commands, ``train_pmap`` and ``train_jit``); ``deadline_s`` stays as a guard
        (a cell cut reads "not reached"). Around the sweep: installing the machine's index and the
        carried wheels (35 s, once per machine), papermill and the notebook's start (15 s), the
        summary and figures (30 s), packing (10 s). Each cell records its seconds and its compile
        seconds (``cell_s``, ``compile_s``), so the next sizing reads them.
    """

    mlp_depths: tuple[int, ...] = (1, 16, 64)
    transformer_layers: tuple[int, ...] = (1, 4)
    cnn_layers: tuple[int, ...] = (4, 32)
    jit_depths: tuple[int, ...] = (1, 64)
    train_depths: tuple[int, ...] = (4,)
    train_layers: tuple[int, ...] = (1,)
    train_cnn_layers: tuple[int, ...] = (4,)
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

    PARTS: ClassVar[Mapping[str, str]] = {
        "noop": "the no-op step on the MLPs under both wrappers, the donated cells, the heavy step and the accounting",
        "models": "the no-op step on the transformers and CNNs under both wrappers",
        "train": "the train steps",
        "train_pmap": "part train's steps under eqx.filter_pmap (train in two commands: this and the next)",
        "train_jit": "part train's steps under eqx.filter_jit",
    }
    # Two small MLPs, both steps (the train step with 2 microbatches), both donations, a 1-layer
    # transformer: every path, every part, the fit and the accounting still run, in a few minutes
    # on a 2-core machine (and the TPU preset's dry run on it: these replace its sizes).
    QUICK: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (1, 4),
        "transformer_layers": (1,),
        "cnn_layers": (),
        "jit_depths": (1, 4),
        "train_depths": (4,),
        "train_layers": (),
        "train_cnn_layers": (),
        "microbatches": (2,),
        "donated_depths": (4,),
        "heavy_width": 128,
        "seconds_per_cell": 1.0,
        "min_rounds": 2,
        "accounting_depths": (4,),
        "accounting_rounds": 4,
        "processes": 2,
    }
    # One TPU v5e chip (see the arithmetic above). Most wanted first within each part: the no-op
    # MLPs at 392, 14 and 800 leaves, the same under eqx.filter_jit; the transformers (152 and 440
    # leaves: a 12-layer one is where a reader measured the drop-in) and the CNNs; the train
    # steps with 128 batches accumulated (device time above host time). No heavy cell: the
    # accumulated train steps say which paths wait.
    TPU: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (64, 1, 132),
        "transformer_layers": (4, 12),
        "jit_depths": (1, 64),
        "train_depths": (16,),
        "train_layers": (4,),
        "train_cnn_layers": (4,),
        "microbatches": (128,),
        "heavy_width": 0,
        "seconds_per_cell": 1.0,
        "accounting_depths": (64,),
        "deadline_s": 390.0,
    }
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"tpu": TPU}

    def validate(self) -> None:
        check_ints("mlp_depths", self.mlp_depths)
        if len(set(self.mlp_depths)) < 2:
            raise bad_value(
                "mlp_depths", self.mlp_depths, "at least two depths (a cost per leaf needs two sizes)"
            )
        for name in (
            "transformer_layers",
            "cnn_layers",
            "jit_depths",
            "train_depths",
            "train_layers",
            "train_cnn_layers",
        ):
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
        empty = {
            "models": not (self.transformer_layers or self.cnn_layers),
            "train": not (self.train_depths or self.train_layers or self.train_cnn_layers),
        }
        empty["train_pmap"] = empty["train_jit"] = empty["train"]
        if empty.get(self.part):
            raise bad_value(
                "part", self.part, f"a part that holds a case with these sizes ({self.PARTS[self.part]})"
            )
        if (
            isinstance(self.deadline_s, bool)
            or not isinstance(self.deadline_s, (int, float))
            or self.deadline_s < 0
        ):
            raise bad_value("deadline_s", self.deadline_s, "seconds >= 0 (0: no deadline)")

    @property
    def cells(self) -> list[Cell]:
        """Every diagnosis of :attr:`part` (all parts for ""), the most wanted first (the order a
        deadline cuts from the end): the no-op MLPs under both wrappers, the donated cells and
        the heavy step (``noop``); the other models' no-op step under both (``models``); the
        train steps (``train``)."""
        from .cost import Cell
        from .models import ModelSpec

        models = [ModelSpec("transformer", n) for n in self.transformer_layers]
        models += [ModelSpec("cnn", n) for n in self.cnn_layers]
        trained = [
            ModelSpec(kind, n, microbatches=k)
            for k in self.microbatches
            for kind, sizes in (("mlp", self.train_depths), ("transformer", self.train_layers))
            + (("cnn", self.train_cnn_layers),)
            for n in sizes
        ]
        donated = [ModelSpec("mlp", d) for d in self.donated_depths]
        parts = {
            "noop": [Cell("noop", ModelSpec("mlp", d), False, "pmap") for d in self.mlp_depths]
            + [Cell("noop", ModelSpec("mlp", d), False, "jit") for d in self.jit_depths]
            + [Cell(s, spec, True, f) for s in ("noop", "train") for spec in donated for f in ("pmap", "jit")]
            + [
                Cell("train", ModelSpec("mlp", 1, width=self.heavy_width, batch_per_device=256), False, "jit")
                for _ in range(1 if self.heavy_width else 0)
            ],
            "models": [Cell("noop", spec, False, f) for spec in models for f in ("pmap", "jit")],
            "train": [Cell("train", spec, False, f) for spec in trained for f in ("pmap", "jit")]
            + [Cell("train", spec, True, "jit") for spec in trained if self.train_donated],
        }
        for family in ("pmap", "jit"):  # part train's halves
            parts[f"train_{family}"] = [c for c in parts["train"] if c.family == family]
        return parts[self.part] if self.part else [c for p in ("noop", "models", "train") for c in parts[p]]

    @property
    def accounting_specs(self) -> list[ModelSpec]:
        """The accounting's models: part ``noop``'s (or every part's)."""
        from .models import ModelSpec

        return [ModelSpec("mlp", d) for d in self.accounting_depths if self.part in ("", "noop")]
