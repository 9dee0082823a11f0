"""The seed's loader: host-side numpy batch preparation whose cost per batch is a parameter.

``for x in tqdm(loader)`` in equinox#192 hides whatever the host does to make a batch
(decoding, augmentation, collation). Here that work is a fixed number of passes of
elementwise numpy arithmetic over a scratch buffer (:func:`work`), then a fresh copy of
the batch, all in the calling thread, as a plain Python loader runs. How many passes
make a given cost is measured once, alone (:func:`calibrate`); after that the work per
batch is fixed, so a loader that is slowed down by the step running beside it shows as
a slower loop, not as a loader that quietly does less.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import bad_value, check_int
from .config import check_cost as check_cost
from .config import check_costs as check_costs

#: elements of the float32 scratch buffer one pass of work runs over (128 KiB: in cache)
WORK_ELEMENTS = 1 << 15


def work(buffer: np.ndarray, passes: int) -> None:
    """``passes`` passes of elementwise numpy arithmetic over ``buffer``, in place
    (single-threaded, as numpy's ufuncs run; no BLAS)."""
    for _ in range(passes):
        np.multiply(buffer, np.float32(1.0001), out=buffer)
        np.sin(buffer, out=buffer)


def scratch(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(WORK_ELEMENTS).astype(np.float32)


def calibrate(passes: int = 200, repeats: int = 7) -> float:
    """Seconds one pass of :func:`work` takes here, alone: the median of ``repeats`` timings
    of ``passes`` passes, after one warm-up."""
    check_int("passes", passes, minimum=1)
    check_int("repeats", repeats, minimum=1)
    buffer = scratch()
    work(buffer, passes)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work(buffer, passes)
        times.append((time.perf_counter() - start) / passes)
    return float(np.median(times))


@dataclass
class Loader:
    """``batches`` host batches, each made by ``passes`` passes of :func:`work` and then a
    fresh copy of the next array of ``pool`` (cycled): what ``for x in loader`` yields."""

    pool: list[np.ndarray]
    passes: int
    batches: int

    def __post_init__(self) -> None:
        check_int("passes", self.passes, minimum=0)
        check_int("batches", self.batches, minimum=1)
        if not self.pool:
            raise bad_value("pool", self.pool, "a non-empty list of host arrays")
        self._buffer = scratch()

    def __len__(self) -> int:
        return self.batches

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(self.batches):
            work(self._buffer, self.passes)
            yield self.pool[i % len(self.pool)].copy()


def passes_for(cost_s: float, pass_s: float) -> int:
    """Passes of :func:`work` that cost about ``cost_s`` seconds, at ``pass_s`` seconds a pass."""
    cost_s = check_cost("cost_s", cost_s)
    if not (isinstance(pass_s, numbers.Real) and math.isfinite(pass_s) and pass_s > 0):
        raise bad_value("pass_s", pass_s, "a finite number of seconds > 0 (from calibrate())")
    return int(round(cost_s / pass_s))


def make_pool(shape: Sequence[int], size: int = 4, seed: int = 1) -> list[np.ndarray]:
    """``size`` float32 host batches of ``shape``, drawn once: the same for every method."""
    check_int("size", size, minimum=1)
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(shape)).astype(np.float32) for _ in range(size)]
