"""Notebook 10's parameters: the reader's step factory and how precisely to answer.

Standard library only: ``./run_all.sh -p step_factory ...`` is checked with it before any
environment exists (a factory that does not import is the diagnosis' own clear error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxperf.diagnosis.cli import QUICK
from jaxperf.errors import bad_value
from jaxperf.timing_config import check_loop_seconds

from ..settings import StudySettings

#: the seed's no-op step under eqx.filter_pmap at 392 array leaves (MLP depth 64)
SEED_FACTORY = "jaxperf_study.dispatch.examples:seed_noop"


@dataclass(frozen=True)
class YourStepSettings(StudySettings):
    """``step_factory`` (``"package.module:function"``) is called with ``step_kwargs`` and
    returns the step and its arguments (see :mod:`jaxperf.diagnosis.factory`); the diagnosis
    stops when every ratio is within ``precision`` or after ``max_seconds`` in all; each path's
    loop lasts at least ``loop_seconds`` (and 50 calls), blocked once at its end."""

    step_factory: str = SEED_FACTORY
    step_kwargs: Mapping[str, Any] | None = None
    precision: float = 0.05
    max_seconds: float = 60.0
    loop_seconds: float = 1.0

    QUICK: ClassVar[Mapping[str, Any]] = QUICK
    # A GPU pass shares its window with notebooks 01, 02 and 11: half the TPU's cap (planned_seconds).
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {"gpu": {"max_seconds": 30.0}}

    def planned_seconds(self, backend: str) -> dict[str, float]:
        """The TPU's run (results/tpu/your_step/summary.json, and its logs): the notebook took 122-126 s
        around a diagnosis of 75.7 s, ``max_seconds`` (60) and 15.6 s of the paths' compiles; so about
        50 s outside it (papermill, JAX's start, the figure), the compiles, then ``max_seconds``."""
        return {"papermill, the notebook, its figure": 50.0, "the paths' compiles": 16.0} | {
            "the diagnosis (max_seconds)": float(self.max_seconds)
        }

    def validate(self) -> None:
        spec = self.step_factory
        if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
            raise bad_value("step_factory", spec, "'package.module:function'")
        if self.step_kwargs is not None and not isinstance(self.step_kwargs, Mapping):
            raise bad_value(
                "step_kwargs", self.step_kwargs, "a dict of keyword arguments for the factory, or None"
            )
        p = self.precision
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
            raise bad_value("precision", p, "a fraction in (0, 1), e.g. 0.05")
        m = self.max_seconds
        if isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0:
            raise bad_value("max_seconds", m, "a number of seconds > 0")
        check_loop_seconds(self.loop_seconds)
