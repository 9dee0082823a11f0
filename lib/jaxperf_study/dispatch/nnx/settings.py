"""Notebook 11's parameters as one typed, frozen object (standard library only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxperf.errors import bad_value, check_choice, check_int, check_ints

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
    process of its own already."""

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
    }

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
