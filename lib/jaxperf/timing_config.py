"""The timing harness's configuration and clocks (:mod:`jaxperf.timing` times with them);
standard library only, so a study's settings can be checked before any environment exists."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import bad_value, check_int

_TICKS: dict[Callable[[], float], float] = {}


def cpu_tick(read: Callable[[], float] = time.thread_time, spin_s: float = 0.03) -> float:
    """The seconds between distinct readings of the CPU clock ``read`` (their median while spinning
    ``spin_s``), once per clock and process: ``clock_getres`` says 1 ns of a TPU host's, which moves in 10 ms."""
    if read not in _TICKS:
        steps, last, end = list[float](), read(), time.perf_counter() + spin_s
        while time.perf_counter() < end:
            if (now := read()) != last:
                steps, last = [*steps, now - last], now
        _TICKS[read] = sorted(steps)[len(steps) // 2] if steps else spin_s
    return _TICKS[read]


def check_loop_seconds(value: object) -> None:
    """The seed's loop's least seconds: a number from 0 (a loop of ``number`` calls) to 600."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 600:
        raise bad_value("loop_seconds", value, "seconds from 0 (short rounds) to 600, e.g. 1.0")


@dataclass
class Clock:
    """Wall and thread-CPU clocks; tests substitute a fake one."""

    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.thread_time


@dataclass
class TimingConfig:
    """How :func:`jaxperf.timing.compare` repeats its interleaved rounds: exactly ``repeats``
    (``precision=None``), or at least ``repeats`` and then more until every watched ratio's IQR
    is within ``±precision`` of its median, ``max_seconds`` pass or ``max_repeats`` rounds ran
    (the rows record which stopped it). Each round times ``number`` blocked calls per variant and,
    with ``dispatch_only``, a pipelined loop (each call enqueued, one block at its end) of
    ``number`` calls, or with ``loop_seconds`` the seed's loop (equinox#192's reporter read tqdm
    over a long loop): per variant at least ``loop_calls`` calls and at least ``loop_seconds``
    seconds, its length fixed once from a calibration after the warm-up."""

    warmup: int = 3
    repeats: int = 7  # rounds with fixed counts; the minimum with a precision target
    number: int = 20  # calls per repeat
    dispatch_only: bool = True
    clock: Clock = field(default_factory=Clock)
    precision: float | None = None  # target relative half-width of each watched ratio's IQR
    max_seconds: float = 60.0  # time cap of a precision-driven comparison (its timed rounds)
    max_repeats: int = 400
    loop_calls: int = 50  # the seed's loop: at least this many calls (with loop_seconds > 0) ...
    loop_seconds: float = 0.0  # ... and at least this long (0: a loop of ``number`` calls)

    def __post_init__(self) -> None:
        check_int("warmup", self.warmup, minimum=0)
        check_int("repeats", self.repeats, minimum=1)
        check_int("number", self.number, minimum=1)
        check_int("max_repeats", self.max_repeats, minimum=self.repeats)
        check_int("loop_calls", self.loop_calls, minimum=1)
        check_loop_seconds(self.loop_seconds)
        if self.precision is not None and (
            isinstance(self.precision, bool)
            or not isinstance(self.precision, (int, float))
            or not 0 < self.precision < 1
        ):
            raise bad_value(
                "precision", self.precision, "None (fixed repeats) or a fraction in (0, 1), e.g. 0.05"
            )
        if (
            isinstance(self.max_seconds, bool)
            or not isinstance(self.max_seconds, (int, float))
            or not self.max_seconds > 0
        ):
            raise bad_value("max_seconds", self.max_seconds, "a number of seconds > 0")
