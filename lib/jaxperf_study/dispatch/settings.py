"""Notebook 01's parameters as one typed, frozen object, with its quick and TPU presets in sight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from jaxperf.errors import bad_value, check_int, check_ints
from jaxperf.timing_config import check_loop_seconds

from ..settings import StudySettings, check_fraction, check_seconds

if TYPE_CHECKING:
    from .cost import Cell
    from .models import ModelSpec


def seed_loop_seconds(paths: int, loop_seconds: float, rounds: int) -> float:
    """One process's timed seconds for a cell of ``paths`` paths: each path's seed's loop sized
    once (about ``loop_seconds``), then run ``rounds`` times (10% over, for its calibration's
    margin) beside a few blocked calls (about 0.1 s)."""
    return paths * (loop_seconds + rounds * (1.1 * loop_seconds + 0.1))


@dataclass(frozen=True)
class DispatchSettings(StudySettings):
    """What the dispatch study runs, each cell under ``eqx.filter_pmap`` or ``eqx.filter_jit``.

    The no-op step undonated on every model under ``eqx.filter_pmap`` (the seed's; a cost per
    leaf is a line through three sizes or more of each kind: MLP, transformer, CNN), and under
    ``eqx.filter_jit`` on the ``jit_depths`` MLPs and on every transformer and CNN; the train
    step (optax Adam) on the ``train_depths`` MLPs, the ``train_layers`` transformers and the
    ``train_cnn_layers`` CNNs under ``train_families``, once per entry of ``microbatches`` (the batch
    accumulated in that many slices: the same leaves, more device time per call), with model
    and optimiser state donated (``train_donated``, as a training loop donates them); both steps
    donated under both on the ``donated_depths`` MLPs. The train step on one wide MLP
    (``heavy_width``, 0: none) has a device time far above any path's host time: it tells which
    paths wait for each call. Every path is timed in the seed's loop: calls enqueued one after
    another, each fed the previous call's state, blocked once at the end, at least
    ``loop_calls`` calls and ``loop_seconds`` long (the reporter read tqdm's it/s over such a
    loop), beside calls blocked one by one. Each cell's diagnosis stops when its ratios are
    within ``precision`` or after ``seconds_per_cell`` of timing (compiles not counted), after
    ``min_rounds`` rounds at least. The accounting splits one call at each of
    ``accounting_depths`` over ``accounting_rounds`` interleaved rounds. Every measurement runs
    in ``processes`` fresh processes, so each quoted number is a median over processes with
    its rerun range. ``deadline_s`` (0: none) is the time a run may take in all its processes
    together: cells run in :attr:`cells`' order (most wanted first), and the first process
    keeps only those the others can repeat in time (:class:`.cost.Budget`); a cell cut reads
    "not reached".

    ``part`` (:data:`PARTS`) runs one part of the cells: a device command runs one part, and
    tools/device/unpack.sh merges the parts' records, so that every cell is reached without a
    deadline cutting it.

    **Device presets and what they plan.** Every path of a cell runs the seed's loop, so a cell
    costs about ``paths x (loop_seconds + min_rounds x (1.1 x loop_seconds + 0.1))`` seconds
    per process (the loop's length fixed once, then each round's loop and a few blocked calls),
    plus its compiles: :meth:`planned_seconds` adds these up from the compile seconds the
    committed records hold per kind of cell (:data:`COMPILE_S`, held to the records by
    tests/test_device_budget.py), and each device command's part must fit the 495 s that
    tools/device/run.sh leaves a command (tests/test_dispatch.py, tests/test_device_budget.py).

    **The TPU preset** (:data:`TPU`, one TPU v5e chip): one process per command, each part run
    twice (two commands, merged by tools/device/unpack.sh into two processes), three rounds, three
    sizes of each model family; the parts ``noop``, ``models_pmap``, ``models_jit``,
    ``train_pmap`` and ``train_jit`` each plan under 495 s. Measured there at 2b842c2: opening the
    chip took 6-15 s per process; at b839ce0 a pmap no-op compile took 11-38 s on the MLPs, a
    transformer's train step 43-68 s (the compilation cache loads few pmap programs).

    **The GPU preset** (:data:`GPU`, one H200; a pass of the whole study is two device commands,
    this notebook one of them): jax#20909 was filed from a GPU, equinox#192 from a TPU, so this
    notebook takes one command's smaller share: one process, two rounds, the seed's no-op step at
    392 leaves and the train step (optax Adam, donated, 16 microbatches) on an MLP, a transformer
    and a CNN under ``eqx.filter_pmap`` (no line per leaf: the TPU and the CPU draw those); a
    second pass in a later window merges into two
    processes. No GPU has run it yet: its compile seconds are the CPU records' (XLA compiles the
    same programs for either; the GPU's own replace them once it has run).
    """

    mlp_depths: tuple[int, ...] = (1, 16, 64)
    transformer_layers: tuple[int, ...] = (1, 2, 4)
    cnn_layers: tuple[int, ...] = (4, 16, 32)
    jit_depths: tuple[int, ...] = (1, 64)
    train_depths: tuple[int, ...] = (4,)
    train_layers: tuple[int, ...] = (1,)
    train_cnn_layers: tuple[int, ...] = (4,)
    microbatches: tuple[int, ...] = (4,)
    train_donated: bool = True
    train_families: tuple[str, ...] = ("pmap", "jit")
    donated_depths: tuple[int, ...] = ()
    heavy_width: int = 512
    precision: float = 0.05
    seconds_per_cell: float = 3.0
    min_rounds: int = 3
    loop_seconds: float = 1.0
    loop_calls: int = 50
    accounting_depths: tuple[int, ...] = (8, 64)
    accounting_rounds: int = 10
    processes: int = 3
    deadline_s: float = 0.0

    PARTS: ClassVar[Mapping[str, str]] = {
        "noop": "the no-op step on the MLPs under both wrappers, the donated cells, the heavy step and the accounting",
        "models": "the no-op step on the transformers and CNNs under both wrappers",
        "models_pmap": "part models' steps under eqx.filter_pmap (models in two commands: this and the next)",
        "models_jit": "part models' steps under eqx.filter_jit",
        "train": "the train steps",
        "train_pmap": "part train's steps under eqx.filter_pmap (train in two commands: this and the next)",
        "train_jit": "part train's steps under eqx.filter_jit",
    }
    # Two small MLPs, both steps (the train step with 2 microbatches), both donations, a 1-layer
    # transformer: every path, every part, the fit and the accounting still run, in a few minutes
    # on a 2-core machine (and the TPU preset's dry run on it: these replace its sizes).
    QUICK: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (1, 2, 4),
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
        "loop_seconds": 0.05,
        "loop_calls": 5,
        "accounting_depths": (4,),
        "accounting_rounds": 4,
        "processes": 2,
    }
    # One TPU v5e chip (see the arithmetic above). Most wanted first within each part: the no-op
    # MLPs at 392, 14 and 800 leaves, the same under eqx.filter_jit; the transformers (152, 440 and
    # 44 leaves: a 12-layer one is where a reader measured the drop-in) and the CNNs; the train
    # steps with 128 batches accumulated (device time above host time). No heavy cell: the
    # accumulated train steps say which paths wait.
    TPU: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (64, 1, 132),
        "transformer_layers": (4, 12, 1),
        "cnn_layers": (4, 32, 16),
        "jit_depths": (1, 64),
        "train_depths": (16,),
        "train_layers": (4,),
        "train_cnn_layers": (4,),
        "microbatches": (128,),
        "heavy_width": 0,
        "seconds_per_cell": 1.0,
        "min_rounds": 3,
        "accounting_depths": (64,),
        "processes": 1,
        "deadline_s": 400.0,
    }
    # One H200, one command of a two-command pass (see above): the seed's step, then the train steps.
    GPU: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (64,),
        "transformer_layers": (),
        "cnn_layers": (),
        "jit_depths": (),
        "train_depths": (),
        "train_layers": (4,),
        "train_cnn_layers": (4,),
        "microbatches": (16,),
        "train_families": ("pmap",),
        "heavy_width": 0,
        "seconds_per_cell": 1.0,
        "min_rounds": 2,
        "accounting_depths": (),
        "processes": 1,
        "deadline_s": 300.0,
    }
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"tpu": TPU, "gpu": GPU}
    #: compile seconds of one cell in a process, by backend and (step, family, kind): the most any
    #: committed record's process spent (``compile_s``: results/<backend>/dispatch/timings.csv); the
    #: GPU's are the CPU's until a GPU has run
    COMPILE_S: ClassVar[Mapping[str, Mapping[tuple[str, str, str], float]]] = {
        "cpu": {
            ("noop", "pmap", "mlp"): 9.0,
            ("noop", "pmap", "transformer"): 4.0,
            ("noop", "pmap", "cnn"): 6.5,
            ("noop", "jit", "mlp"): 1.1,
            ("noop", "jit", "transformer"): 0.7,
            ("noop", "jit", "cnn"): 0.7,
            ("train", "pmap", "mlp"): 6.0,
            ("train", "pmap", "transformer"): 20.5,
            ("train", "pmap", "cnn"): 10.0,
            ("train", "jit", "mlp"): 3.0,
            ("train", "jit", "transformer"): 12.0,
            ("train", "jit", "cnn"): 6.0,
        },
        "tpu": {
            ("noop", "pmap", "mlp"): 38.5,
            ("noop", "pmap", "transformer"): 21.0,
            ("noop", "pmap", "cnn"): 12.0,
            ("noop", "jit", "mlp"): 8.0,
            ("noop", "jit", "transformer"): 12.5,
            ("noop", "jit", "cnn"): 7.5,
            ("train", "pmap", "mlp"): 33.0,
            ("train", "pmap", "transformer"): 68.5,
            ("train", "pmap", "cnn"): 20.0,
            ("train", "jit", "mlp"): 18.5,
            ("train", "jit", "transformer"): 45.5,
            ("train", "jit", "cnn"): 15.5,
        },
    }
    #: paths a cell times, by family (the records': the reader's, the baseline, the drop-in, the
    #: packed path, Equinox's recipe, the patched Equinox; on pmap the three sharded paths too)
    PATHS_PER_CELL: ClassVar[Mapping[str, int]] = {"pmap": 9, "jit": 6}
    #: a process's start (JAX, the device: a TPU's took 6-15 s), the notebook around the sweep
    #: (papermill 15 s, the summary and figures 25 s, as notebook 02's on the TPU), and the
    #: accounting's rounds, in seconds
    PROCESS_START_S: ClassVar[float] = 15.0
    AROUND_S: ClassVar[float] = 40.0
    ACCOUNTING_S: ClassVar[float] = 30.0

    def validate(self) -> None:
        check_ints("mlp_depths", self.mlp_depths)
        if len(set(self.mlp_depths)) == 2:
            raise bad_value(
                "mlp_depths",
                self.mlp_depths,
                "one depth (no cost per leaf), or three or more (a cost per leaf is a line through three sizes)",
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
        if not self.train_families or any(f not in ("pmap", "jit") for f in self.train_families):
            raise bad_value("train_families", self.train_families, "one or both of 'pmap' and 'jit'")
        if not isinstance(self.train_donated, bool):
            raise bad_value("train_donated", self.train_donated, "True or False")
        check_fraction("precision", self.precision)
        check_seconds("seconds_per_cell", self.seconds_per_cell)
        check_int("min_rounds", self.min_rounds, minimum=2)
        check_int("loop_calls", self.loop_calls, minimum=1)
        check_loop_seconds(self.loop_seconds)
        check_int("accounting_rounds", self.accounting_rounds, minimum=3)
        check_int("processes", self.processes, minimum=1)
        check_int("heavy_width", self.heavy_width, minimum=0)
        empty = {
            "models": not (self.transformer_layers or self.cnn_layers),
            "train": not (self.train_depths or self.train_layers or self.train_cnn_layers),
        }
        empty["train_pmap"] = empty["train_jit"] = empty["train"]
        empty["models_pmap"] = empty["models_jit"] = empty["models"]
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
            "train": [
                Cell("train", spec, self.train_donated, f) for spec in trained for f in self.train_families
            ],
        }
        for family in ("pmap", "jit"):  # part models' and part train's halves
            for whole in ("models", "train"):
                parts[f"{whole}_{family}"] = [c for c in parts[whole] if c.family == family]
        return parts[self.part] if self.part else [c for p in ("noop", "models", "train") for c in parts[p]]

    def cell_seconds(self, cell: Cell, backend: str) -> float:
        """One process's planned seconds for ``cell`` on ``backend``: its compiles, then every path's
        seed's loop sized once and run ``min_rounds`` times beside a few blocked calls."""
        compiles = self.COMPILE_S.get(backend, self.COMPILE_S["cpu"])
        timed = seed_loop_seconds(self.PATHS_PER_CELL[cell.family], self.loop_seconds, self.min_rounds)
        return compiles[(cell.step, cell.family, cell.spec.kind)] + timed

    def planned_seconds(self, backend: str) -> Mapping[str, float]:
        """The seconds a run of these settings plans on ``backend`` (its :attr:`part`, or all),
        item by item: each cell in all its processes, the processes' starts, the accounting and
        what the notebook does around the sweep (the arithmetic in the docstring)."""
        plan = {
            f"{c.step} {c.family} {c.spec.name}{' donated' if c.donated else ''}": self.processes
            * self.cell_seconds(c, backend)
            for c in self.cells
        }
        plan["process starts"] = self.processes * self.PROCESS_START_S
        if self.accounting_specs:
            plan["accounting"] = self.processes * self.ACCOUNTING_S
        plan["the notebook around the sweep"] = self.AROUND_S
        return plan

    @property
    def accounting_specs(self) -> list[ModelSpec]:
        """The accounting's models: part ``noop``'s (or every part's)."""
        from .models import ModelSpec

        return [ModelSpec("mlp", d) for d in self.accounting_depths if self.part in ("", "noop")]
