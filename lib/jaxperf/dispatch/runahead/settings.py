"""Notebook 07's parameters as one typed, frozen object, with its quick preset in sight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ...errors import bad_value
from ...settings import StudySettings
from .config import (
    FIX,
    PATCHED,
    PROBE_METHODS,
    PROBE_REFERENCE,
    REFERENCE,
    SETUPS,
    SLOW,
    LoopConfig,
    ProbeConfig,
    check_setups,
)

# config field -> the notebook parameter that sets it
_PROBE_NAMES = {
    "methods": "verdict_methods",
    "donate": "verdict_donate",
    "depth": "verdict_depth",
    "width": "verdict_width",
    "batch_per_device": "verdict_batch_per_device",
    "repeats": "verdict_repeats",
    "calls": "verdict_calls",
}
_LOOP_NAMES = {
    "methods": "loop_methods",
    "steps": "loop_steps",
    "cost_fractions": "loader_cost_fractions",
    "depth": "loop_depth",
    "width": "loop_width",
    "batch": "loop_batch",
    "batches": "loop_batches",
    "repeats": "loop_repeats",
}


def _renamed(message: str, names: Mapping[str, str]) -> str:
    """A config's error message, naming the notebook parameter instead of the config field."""
    for field, parameter in names.items():
        for sep in ("=", "["):
            if message.startswith(field + sep):
                return parameter + message[len(field) :]
    return message


@dataclass(frozen=True)
class RunaheadSettings(StudySettings):
    """What the runs-ahead study runs.

    ``verdict_*``: every method (and ``donate`` setting) judged on a heavy train step over
    the ``host_devices`` devices (an MLP of ``verdict_depth`` hidden layers of
    ``verdict_width``, ``verdict_batch_per_device`` examples per device). ``loop_*``: the
    seed's loop on one device, at loader costs ``loader_cost_fractions`` x the train
    step's device time, for ``loop_steps``; on a CPU once per XLA:CPU set-up of ``setups``.
    """

    verdict_methods: tuple[str, ...] = PROBE_METHODS
    verdict_donate: tuple[bool, ...] = (False, True)
    verdict_depth: int = 1
    verdict_width: int = 512
    verdict_batch_per_device: int = 32
    verdict_repeats: int = 5
    verdict_calls: int = 6
    loop_methods: tuple[str, ...] = (REFERENCE, SLOW, FIX, PATCHED)
    loop_steps: tuple[str, ...] = ("noop", "train")
    loader_cost_fractions: tuple[float, ...] = (0.0, 0.3, 0.6, 1.0, 1.5)
    loop_depth: int = 3
    loop_width: int = 512
    loop_batch: int = 128
    loop_batches: int = 10
    loop_repeats: int = 5
    setups: tuple[str, ...] = tuple(SETUPS)

    # A smoke run: four methods (one over the devices) judged without donation, one short loop at
    # two costs, one set-up.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "verdict_methods": (PROBE_REFERENCE, SLOW, FIX, PATCHED, "filter_pmap", "pmap_params"),
        "verdict_donate": (False,),
        "verdict_repeats": 2,
        "verdict_calls": 3,
        "loader_cost_fractions": (0.0, 1.0),
        "loop_batches": 4,
        "loop_repeats": 2,
        "setups": ("xla_single_thread",),
    }

    def validate(self) -> None:
        # Building each config validates it; its errors are renamed to the notebook's parameters.
        for build, names in ((lambda: self.probe, _PROBE_NAMES), (lambda: self.loop, _LOOP_NAMES)):
            try:
                build()
            except ValueError as err:
                raise ValueError(_renamed(str(err), names)) from None
        object.__setattr__(self, "setups", check_setups(self.setups))
        if self.backend == "tpu":
            raise bad_value(
                "backend", self.backend, "'auto', 'cpu' or 'gpu' (the loop is timed on one device)"
            )

    @property
    def probe(self) -> ProbeConfig:
        return ProbeConfig(
            methods=self.verdict_methods,
            donate=self.verdict_donate,
            depth=self.verdict_depth,
            width=self.verdict_width,
            batch_per_device=self.verdict_batch_per_device,
            repeats=self.verdict_repeats,
            calls=self.verdict_calls,
        )

    @property
    def loop(self) -> LoopConfig:
        return LoopConfig(
            methods=self.loop_methods,
            steps=self.loop_steps,
            cost_fractions=self.loader_cost_fractions,
            depth=self.loop_depth,
            width=self.loop_width,
            batch=self.loop_batch,
            batches=self.loop_batches,
            repeats=self.loop_repeats,
        )
