"""Notebook 01's parameters as one typed, frozen object, with its quick preset in sight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .. import timing_config as timing
from ..errors import bad_value, check_choice, check_int, check_ints
from ..settings import StudySettings
from ..timing_config import TimingConfig
from .vocab import BASELINE, METHODS, STEPS

if TYPE_CHECKING:
    from .models import ModelSpec


@dataclass(frozen=True)
class DispatchSettings(StudySettings):
    """What the dispatch study runs: models, steps, methods, donation, and how long to time them.

    ``donate`` lists the donation settings each method is timed with (``False``: inputs
    kept; ``True``: model and optimiser state donated, as a real training loop does).
    """

    mlp_depths: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    transformer_layers: tuple[int, ...] = (2,)
    steps: tuple[str, ...] = STEPS
    methods: tuple[str, ...] = tuple(METHODS)
    donate: tuple[bool, ...] = (False, True)
    warmup: int = 3
    repeats: int = 7
    calls_per_repeat: int = 8
    breakdown_calls: int = 30

    # One MLP past 100 leaves and the smallest transformer: every method and both
    # steps still run, in a few minutes on a 2-core machine.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (16,),
        "transformer_layers": (1,),
        "repeats": 3,
        "calls_per_repeat": 4,
        "warmup": 1,
        "breakdown_calls": 5,
    }

    def validate(self) -> None:
        check_ints("mlp_depths", self.mlp_depths)
        if self.transformer_layers:
            check_ints("transformer_layers", self.transformer_layers)
        if not self.steps or isinstance(self.steps, str):
            raise bad_value("steps", self.steps, f"a non-empty list drawn from {list(STEPS)}")
        for step in self.steps:
            check_choice("steps[...]", step, STEPS)
        if isinstance(self.methods, str):
            raise bad_value("methods", self.methods, f"a list drawn from {list(METHODS)}")
        for method in self.methods:
            check_choice("methods[...]", method, METHODS)
        if BASELINE not in self.methods:
            raise bad_value("methods", list(self.methods), f"a list that includes the baseline {BASELINE!r}")
        if not self.donate or any(not isinstance(d, bool) for d in self.donate):
            raise bad_value("donate", self.donate, "a non-empty list of True/False")
        check_int("warmup", self.warmup, minimum=0)
        check_int("repeats", self.repeats, minimum=1)
        check_int("calls_per_repeat", self.calls_per_repeat, minimum=1)
        check_int("breakdown_calls", self.breakdown_calls, minimum=1)

    @property
    def specs(self) -> list[ModelSpec]:
        """The models to sweep: the MLP depths, then the transformers."""
        from .models import ModelSpec  # here: the settings check runs with the standard library only

        mlps = [ModelSpec("mlp", d) for d in self.mlp_depths]
        return mlps + [ModelSpec("transformer", n) for n in self.transformer_layers]

    @property
    def breakdown_specs(self) -> list[ModelSpec]:
        """The models whose filter_pmap call is split into stages: the smallest and largest MLP,
        and the first transformer."""
        from .models import ModelSpec

        depths = sorted({min(self.mlp_depths), max(self.mlp_depths)})
        return [ModelSpec("mlp", d) for d in depths] + [
            ModelSpec("transformer", n) for n in self.transformer_layers[:1]
        ]

    @property
    def timing(self) -> timing.TimingConfig:
        return timing.TimingConfig(warmup=self.warmup, repeats=self.repeats, number=self.calls_per_repeat)

    @property
    def ladder_timing(self) -> TimingConfig:
        """The inner-call ladder: blocked calls only (its question is host work per call)."""
        return timing.TimingConfig(
            warmup=max(self.warmup, 1),
            repeats=self.repeats,
            number=self.calls_per_repeat,
            dispatch_only=False,
        )

    @property
    def timed_batches(self) -> int:
        """How many timed batches the sweep runs (for a progress bar)."""
        return len(self.steps) * len(self.specs) * len(self.methods) * len(self.donate) * self.repeats
