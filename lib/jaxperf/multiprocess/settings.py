"""The multi-process study's settings: notebook 06's parameters, typed and frozen."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import bad_value, check_choice, check_int, check_ints
from ..settings import StudySettings
from .methods import METHODS, STEPS


@dataclasses.dataclass(frozen=True)
class MultiprocessSettings(StudySettings):
    """``processes``: the headline run (``./run_all.sh --processes N``); ``scaling_processes``:
    the process counts of the scaling figure (the headline count is always added).
    ``global_devices`` stays fixed: each of N processes gets ``global_devices / N`` CPU
    devices, so every run computes the same global step (the same batch, the same answer)."""

    processes: int = 2
    scaling_processes: tuple[int, ...] = (1, 2, 4)
    global_devices: int = 8
    mlp_depth: int = 4
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

    def worker_config(self) -> dict[str, Any]:
        """What every launched process reads (``study_worker.run``)."""
        return {
            "models": [{"kind": "mlp", "size": self.mlp_depth}],
            "methods": list(self.methods),
            "steps": list(self.steps),
            "warmup": self.warmup,
            "repeats": self.repeats,
            "number": self.calls_per_repeat,
            "rtol": 1e-5,
            "atol": 1e-6,
        }
