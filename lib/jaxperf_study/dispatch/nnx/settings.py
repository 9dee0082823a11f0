"""Notebook 11's parameters as one typed, frozen object (standard library only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxperf.errors import bad_value, check_choice, check_int, check_ints
from jaxperf.timing_config import check_loop_seconds

from ...settings import StudySettings, check_fraction, check_seconds

STEPS = ("noop", "train")


@dataclass(frozen=True)
class NnxSettings(StudySettings):
    """``depths``: MLP depths of 4-wide ``nnx.Linear`` layers (the Variables grow with them),
    each diagnosed for every step of ``steps``; ``heavy_width``: a wide train step that tells
    whether calls run ahead (0 leaves it out); ``stage_depths``: where one call is split into
    stages, over ``stage_rounds`` rounds; Flax's own benchmark at ``flax_benchmark_depths``
    (at least 3, as its script builds ``depth - 2`` blocks) with ``flax_benchmark_steps``. The
    diagnoses run in ``processes`` fresh processes, a third of the rounds each; the stage rounds
    (an accounting nothing quotes) in one; Flax's benchmark runs each of its cases in a fresh
    process of its own already. Every path runs the seed's loop (at least ``loop_calls`` calls and
    ``loop_seconds``, blocked once at its end), as notebook 01's.

    **The GPU preset** (:data:`GPU`, one H200, a share of one command of a pass): two depths, one
    process, two rounds, Flax's benchmark at depth 10 for 20 steps; :meth:`planned_seconds` adds it
    up with notebook 01's cost per path (``dispatch.settings.seed_loop_seconds``)."""

    depths: tuple[int, ...] = (1, 10, 100)
    steps: tuple[str, ...] = ("noop",)
    heavy_width: int = 0
    precision: float = 0.05
    seconds_per_cell: float = 1.0
    min_rounds: int = 3
    stage_depths: tuple[int, ...] = (10, 100)
    stage_rounds: int = 20
    processes: int = 3
    flax_benchmark_depths: tuple[int, ...] = (10, 100)
    flax_benchmark_steps: int = 100
    loop_seconds: float = 1.0
    loop_calls: int = 50

    QUICK: ClassVar[Mapping[str, Any]] = {
        "depths": (1, 10),
        "heavy_width": 64,
        "seconds_per_cell": 1.0,
        "min_rounds": 2,
        "stage_depths": (10,),
        "stage_rounds": 5,
        "flax_benchmark_depths": (10,),
        "flax_benchmark_steps": 20,
        "processes": 2,
        "loop_seconds": 0.05,
        "loop_calls": 5,
    }
    GPU: ClassVar[Mapping[str, Any]] = {
        "depths": (1, 100),
        "min_rounds": 2,
        "stage_depths": (100,),
        "stage_rounds": 5,
        "processes": 1,
        "flax_benchmark_depths": (10,),
        "flax_benchmark_steps": 20,
    }
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"gpu": GPU}
    #: the paths a cell times (report.PATHS and the baseline), a cell's compiles (the CPU records'
    #: most is 1.2 s: results/cpu/nnx/timings.csv), a process's start, a stage round, one depth of
    #: Flax's benchmark (its three modes, a fresh process each; their starts are not recorded: an
    #: assumption), and the notebook around them (papermill, summary, figures), in seconds
    PATHS_PER_CELL: ClassVar[int] = 7
    COMPILE_S: ClassVar[float] = 3.0
    PROCESS_START_S: ClassVar[float] = 15.0
    STAGE_ROUND_S: ClassVar[float] = 1.0
    FLAX_CASE_S: ClassVar[float] = 30.0
    AROUND_S: ClassVar[float] = 40.0

    def planned_seconds(self, backend: str) -> Mapping[str, float]:
        """The seconds a run of these settings plans (the arithmetic in the docstring)."""
        from ..settings import seed_loop_seconds

        cell = self.COMPILE_S + seed_loop_seconds(self.PATHS_PER_CELL, self.loop_seconds, self.min_rounds)
        plan = {f"{step} depth {d}": self.processes * cell for step in self.steps for d in self.depths}
        plan["process starts"] = self.processes * self.PROCESS_START_S
        plan["stage rounds"] = self.STAGE_ROUND_S * self.stage_rounds * len(self.stage_depths)
        plan["Flax's benchmark"] = self.FLAX_CASE_S * len(self.flax_benchmark_depths)
        plan["the notebook around them"] = self.AROUND_S
        return plan

    def validate(self) -> None:
        check_ints("depths", self.depths)
        if len(set(self.depths)) < 2:
            raise bad_value(
                "depths", self.depths, "at least two depths (a cost per Variable needs two sizes)"
            )
        if not self.steps or isinstance(self.steps, str):
            raise bad_value("steps", self.steps, f"a non-empty list drawn from {list(STEPS)}")
        for step in self.steps:
            check_choice("steps[...]", step, STEPS)
        check_int("heavy_width", self.heavy_width, minimum=0)
        check_fraction("precision", self.precision)
        check_seconds("seconds_per_cell", self.seconds_per_cell)
        check_int("min_rounds", self.min_rounds, minimum=2)
        check_ints("stage_depths", self.stage_depths)
        check_int("stage_rounds", self.stage_rounds, minimum=3)
        check_ints("flax_benchmark_depths", self.flax_benchmark_depths, minimum=3)
        check_int("flax_benchmark_steps", self.flax_benchmark_steps)
        check_int("processes", self.processes, minimum=1)
        check_int("loop_calls", self.loop_calls, minimum=1)
        check_loop_seconds(self.loop_seconds)
