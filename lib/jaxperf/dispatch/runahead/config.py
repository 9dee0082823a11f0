"""The runs-ahead study's names and configs: its methods, references, XLA:CPU set-ups, and the
checked configs of the probe and the seed's loop.

Standard library only, so that :class:`~jaxperf.dispatch.runahead.settings.RunaheadSettings`
(and the device run's settings) can be checked before any environment exists; the modules
that run them (:mod:`.probe`, :mod:`.seed_loop`, :mod:`.setups`, :mod:`.methods`) take them from here.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ... import timing_config as timing
from ...errors import bad_value, check_choice, check_int
from ..vocab import METHODS, STEPS

if TYPE_CHECKING:
    from ..models import ModelSpec

PATCHED = "filter_jit_patched"
EXTRA: dict[str, str] = {
    PATCHED: "eqx.filter_jit, proposed change patched in (1 device)",
    "filter_pmap_patched": "eqx.filter_pmap, proposed change patched in",
    "jit_params": "jax.jit on params (1 device)",
}
ALL: dict[str, str] = {**METHODS, **EXTRA}
#: what the runs-ahead probe judges: every path the diagnosis engine times for the heavy train
#: step under eqx.filter_pmap (over the devices) and eqx.filter_jit (one device)
PROBE_METHODS = (
    "filter_pmap",
    "pmap_params",
    "cached_filter_pmap",
    "packed_pmap",
    "filter_pmap_patched",
    "filter_jit",
    "jit_params",
    "cached_filter_jit",
    "packed_jit",
    PATCHED,
)
PROBE_REFERENCE = "jit_params"  # jax.jit on the partitioned state, one device: known to run ahead

REFERENCE = "jit_single_device"  # jax.jit on params, one device
SLOW = "filter_jit"
FIX = "cached_filter_jit"
STEP_ALONE = "step alone"
LOADER_ALONE = "loader alone"

SETUPS: dict[str, tuple[str, ...]] = {
    "xla_default": (),
    "xla_single_thread": ("--xla_cpu_multi_thread_eigen=false",),
}


def check_setups(setups: Any) -> tuple[str, ...]:
    allowed = "a non-empty list drawn from " + ", ".join(SETUPS)
    if isinstance(setups, str) or not isinstance(setups, (list, tuple)) or not setups:
        raise bad_value("setups", setups, allowed)
    for setup in setups:
        if setup not in SETUPS:
            raise bad_value("setups", list(setups), allowed + f" ({setup!r} is not one)")
    return tuple(setups)


def check_cost(name: str, value: object) -> float:
    """``value`` as a float if it is a real, finite number >= 0 (seconds, or a fraction of
    the step's device time); else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise bad_value(name, value, "a finite number >= 0")
    if value < 0:
        raise bad_value(name, value, "a finite number >= 0")
    return float(value)


def check_costs(name: str, values: object) -> tuple[float, ...]:
    """A non-empty list of :func:`check_cost` values, each named ``name[i]`` in its error."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise bad_value(name, values, "a non-empty list of finite numbers >= 0")
    return tuple(check_cost(f"{name}[{i}]", v) for i, v in enumerate(values))


@dataclass(frozen=True)
class ProbeConfig:
    """The heavy step and how long to time it; ``methods`` x ``donate`` are judged."""

    methods: tuple[str, ...] = PROBE_METHODS
    donate: tuple[bool, ...] = (False, True)
    depth: int = 2
    width: int = 512
    batch_per_device: int = 16
    warmup: int = 1
    repeats: int = 5
    calls: int = 6

    def __post_init__(self) -> None:
        for name in ("methods", "donate"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if isinstance(self.methods, str) or not self.methods:
            raise bad_value("methods", self.methods, f"a non-empty list drawn from {list(PROBE_METHODS)}")
        for method in self.methods:
            check_choice("methods[...]", method, PROBE_METHODS)
        if PROBE_REFERENCE not in self.methods:
            raise bad_value(
                "methods", list(self.methods), f"a list that includes the reference {PROBE_REFERENCE!r}"
            )
        if not self.donate or any(not isinstance(d, bool) for d in self.donate):
            raise bad_value("donate", self.donate, "a non-empty list of True/False")
        for name in ("depth", "width", "batch_per_device", "repeats", "calls"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)

    @property
    def spec(self) -> ModelSpec:
        from ..models import ModelSpec  # here: the settings check runs with the standard library only

        return ModelSpec("mlp", self.depth, width=self.width, batch_per_device=self.batch_per_device)

    @property
    def timing(self) -> timing.TimingConfig:
        return timing.TimingConfig(warmup=self.warmup, repeats=self.repeats, number=self.calls)

    def timed_batches(self) -> int:
        """The probe's diagnoses (a progress bar's total): one per family and donation."""
        return 2 * len(self.donate)


@dataclass(frozen=True)
class LoopConfig:
    """What the seed's loop runs: ``methods`` (:data:`~jaxperf.dispatch.runahead.methods.ALL` ids, with
    ``jax.jit`` on params among them) on an MLP (``depth``, ``width``, a batch of ``batch``
    rows) for each of ``steps``, at loader costs ``cost_fractions`` x the train step's device
    time; ``batches`` loop iterations per timed loop, ``repeats`` interleaved repeats."""

    methods: tuple[str, ...] = (REFERENCE, SLOW)
    steps: tuple[str, ...] = STEPS
    cost_fractions: tuple[float, ...] = (0.0, 0.3, 0.6, 1.0, 1.3)
    depth: int = 3
    width: int = 512
    batch: int = 128
    batches: int = 12
    repeats: int = 7
    warmup: int = 2
    donate: bool = False

    def __post_init__(self) -> None:
        for name in ("methods", "steps", "cost_fractions"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        if isinstance(self.methods, str) or not self.methods:
            raise bad_value("methods", self.methods, f"a non-empty list drawn from {list(ALL)}")
        for method in self.methods:
            check_choice("methods[...]", method, ALL)
        if REFERENCE not in self.methods:
            raise bad_value(
                "methods", list(self.methods), f"a list that includes the reference {REFERENCE!r}"
            )
        if isinstance(self.steps, str) or not self.steps:
            raise bad_value("steps", self.steps, f"a non-empty list drawn from {list(STEPS)}")
        for step in self.steps:
            check_choice("steps[...]", step, STEPS)
        object.__setattr__(self, "cost_fractions", check_costs("cost_fractions", self.cost_fractions))
        for name in ("depth", "width", "batch", "batches", "repeats"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        if not isinstance(self.donate, bool):
            raise bad_value("donate", self.donate, "True or False")

    @property
    def spec(self) -> ModelSpec:
        from ..models import ModelSpec  # here: the settings check runs with the standard library only

        return ModelSpec("mlp", self.depth, width=self.width, batch_per_device=self.batch)
