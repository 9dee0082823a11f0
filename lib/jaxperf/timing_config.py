"""The timing harness's configuration and clocks (:mod:`jaxperf.timing` times with them).

Standard library only, so that a study's settings object, which builds one, can be checked
before any environment exists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import check_int


@dataclass
class Clock:
    """Wall and thread-CPU clocks; tests substitute a fake one."""

    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.thread_time


@dataclass
class TimingConfig:
    warmup: int = 3
    repeats: int = 7
    number: int = 20  # calls per repeat
    dispatch_only: bool = True
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        check_int("warmup", self.warmup, minimum=0)
        check_int("repeats", self.repeats, minimum=1)
        check_int("number", self.number, minimum=1)
