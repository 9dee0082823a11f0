"""The multi-process study's settings: notebook 06's parameters, typed and frozen."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import bad_value, check_choice, check_int, check_ints
from ..settings import StudySettings
from .vocab import METHODS, STEPS

#: ``allclose`` to the one-device reference after one train step (loss, params, Adam state).
#: Every method and process agrees bitwise; against one device, the batch mean is summed in
#: another order, and Adam's first update ``lr * g / (|g| + eps)`` magnifies that rounding
#: up to ``lr / eps`` times where a gradient entry is near 0: in the 1-layer transformer one
#: query-projection entry (|g| ~ 1e-8) moves 2.6e-6. A missing or wrong all-reduce moves a
#: quarter of the entries by up to ``2 * lr = 2e-3``, far outside ``ATOL``.
RTOL, ATOL = 1e-5, 1e-5


@dataclasses.dataclass(frozen=True)
class MultiprocessSettings(StudySettings):
    """``processes``: the headline run (``./run_all.sh --processes N``); ``scaling_processes``:
    the process counts of the scaling figure (the headline count is always added).
    ``global_devices`` stays fixed: each of N processes gets ``global_devices / N`` CPU
    devices, so every run computes the same global step (the same batch, the same answer).
    Models: the MLP (``mlp_depth``) and the 2-layer transformer of the single-process study
    (``transformer_layers``; 0 skips it), timed over ``transformer_repeats`` repeats: its
    train step all-reduces 2.5x the MLP's leaves, and the repeats keep the full run short."""

    processes: int = 2
    scaling_processes: tuple[int, ...] = (1, 2, 4)
    global_devices: int = 8
    mlp_depth: int = 4
    transformer_layers: int = 2
    transformer_repeats: int = 2
    methods: tuple[str, ...] = tuple(METHODS)
    steps: tuple[str, ...] = STEPS
    warmup: int = 1
    repeats: int = 5
    calls_per_repeat: int = 3
    launch_timeout_s: int = 600
    pod_hosts: int = 64

    QUICK: ClassVar[Mapping[str, Any]] = {
        "scaling_processes": (1, 2),
        "mlp_depth": 2,
        "transformer_layers": 1,
        "transformer_repeats": 1,
        "warmup": 1,
        "repeats": 2,
        "calls_per_repeat": 2,
    }

    def validate(self) -> None:
        check_int("global_devices", self.global_devices, minimum=1)
        for name, counts in (("processes", [self.processes]), ("scaling_processes", self.scaling_processes)):
            for n in check_ints(name, counts, minimum=1):
                if self.global_devices % n:
                    raise bad_value(name, n, f"a divisor of global_devices={self.global_devices}")
        check_int("mlp_depth", self.mlp_depth, minimum=1)
        layers = self.transformer_layers
        if isinstance(layers, bool) or not isinstance(layers, int) or layers < 0:
            raise bad_value("transformer_layers", layers, "an integer >= 0 (0 skips the transformer)")
        check_int("transformer_repeats", self.transformer_repeats, minimum=1)
        for method in self.methods:
            check_choice("methods[...]", method, METHODS)
        if "pmap_params" not in self.methods:
            raise bad_value("methods", self.methods, "a list that includes the baseline 'pmap_params'")
        for step in self.steps:
            check_choice("steps[...]", step, STEPS)
        check_int("warmup", self.warmup, minimum=0)
        check_int("repeats", self.repeats, minimum=1)
        check_int("calls_per_repeat", self.calls_per_repeat, minimum=1)
        check_int("launch_timeout_s", self.launch_timeout_s, minimum=10)
        check_int("pod_hosts", self.pod_hosts, minimum=1)

    @property
    def process_counts(self) -> tuple[int, ...]:
        """Every process count to launch, ascending (the scaling counts plus ``processes``)."""
        return tuple(sorted({*self.scaling_processes, self.processes}))

    @property
    def models(self) -> list[dict[str, Any]]:
        """The models every launch sweeps, in order (the MLP first): kind, size, repeats."""
        models = [{"kind": "mlp", "size": self.mlp_depth, "repeats": self.repeats}]
        if self.transformer_layers:
            models.append(
                {"kind": "transformer", "size": self.transformer_layers, "repeats": self.transformer_repeats}
            )
        return models

    @property
    def model_names(self) -> list[str]:
        """The models' names as the records carry them (``mlp_depth4``, ``transformer_2layers``)."""
        from ..dispatch.models import (
            ModelSpec,  # here: the settings check runs with the standard library only
        )

        return [ModelSpec(kind=m["kind"], size=m["size"]).name for m in self.models]

    def worker_config(self) -> dict[str, Any]:
        """What every launched process reads (``study_worker.run``)."""
        return {
            "models": self.models,
            "methods": list(self.methods),
            "steps": list(self.steps),
            "warmup": self.warmup,
            "repeats": self.repeats,
            "number": self.calls_per_repeat,
            "rtol": RTOL,
            "atol": ATOL,
        }
