"""The time model's arithmetic: milliseconds per kernel launch from SASS counts and device facts.

For one kernel: every program (CTA) runs ``warps_per_program`` warps, each
issuing the dynamic instructions of :class:`~jaxperf.gpu_model.counts.WarpCounts`.
Programs spread over the SMs (the busiest SM gets ``ceil(programs / SMs)``).
On one SM the groups of :mod:`jaxperf.gpu_model.classes` work in parallel, so
the SM needs as many cycles as its busiest resource:

- ``issue``: all its warp instructions over its schedulers (one each per clock);
- each execution group: the sum over its classes of ``count x results / rate``.

*Issue time* is those cycles over the clock. *Memory time* is the bytes the kernel
must move (its inputs read once, its outputs written once) over the DRAM
bandwidth. A kernel's time is ``max(issue, memory)``: with many programs
resident per SM (see :func:`occupancy`), one program's loads overlap the others'
arithmetic, so the slower of the two sets the pace. Kernels that run one after
the other (the harness's random numbers, the Pallas kernel, the mean) add.
Not modelled: launch and host latency, caches (L2 reuse), dependent-issue
stalls at low occupancy; :func:`occupancy` reports the warps each scheduler has
to hide latency with, so a reader can see where that assumption is thin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import bad_value
from .classes import CLASSES, GROUPS
from .counts import WarpCounts
from .devices import Device, Setting


@dataclass(frozen=True)
class KernelWork:
    """What one launch of a kernel does: per-warp counts, its grid and the bytes it moves."""

    name: str
    counts: WarpCounts
    warps_per_program: int
    programs: int
    bytes_read: float
    bytes_written: float
    registers: int = 0  # per thread (ptxas -v); 0 = unknown
    shared_bytes_per_program: int = 0

    def __post_init__(self) -> None:
        for name in ("warps_per_program", "programs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad_value(name, value, "an int >= 1")
        for name in ("bytes_read", "bytes_written"):
            if not getattr(self, name) >= 0:
                raise bad_value(name, getattr(self, name), "a number of bytes >= 0")


@dataclass(frozen=True)
class KernelTime:
    """One kernel's predicted time under one :class:`~jaxperf.gpu_model.devices.Setting`."""

    name: str
    issue_ms: float | None  # None when the counts are unresolved
    memory_ms: float
    bound: str  # "memory", or the SM resource that sets the issue time ("issue", "fma", ...)
    cycles_per_sm: dict[str, float]

    @property
    def ms(self) -> float | None:
        return None if self.issue_ms is None else max(self.issue_ms, self.memory_ms)


def sm_cycles_per_warp(counts: WarpCounts, dev: Device, setting: Setting) -> dict[str, float] | None:
    """SM cycles one warp's instructions occupy each resource of :data:`GROUPS` (None if unresolved)."""
    if counts.per_class is None:
        return None
    cycles = dict.fromkeys(GROUPS, 0.0)
    cycles["issue"] = sum(counts.per_class.values()) / dev.schedulers_per_sm.value
    for name, count in counts.per_class.items():
        kind = CLASSES[name]
        if kind.rate_key is None or kind.group == "shared":
            continue
        cycles[kind.group] += count * kind.results / setting.rates[kind.rate_key]
    cycles["shared"] = counts.shared_bytes / setting.rates["shared_bytes"]
    return cycles


def kernel_time(work: KernelWork, dev: Device, setting: Setting) -> KernelTime:
    """``work``'s time on ``dev`` at ``setting``: see the module docstring."""
    memory_ms = (work.bytes_read + work.bytes_written) / (
        dev.dram_gb_per_s.value * setting.dram_efficiency * 1e9
    )
    memory_ms *= 1e3
    per_warp = sm_cycles_per_warp(work.counts, dev, setting)
    if per_warp is None:
        return KernelTime(work.name, None, memory_ms, "unresolved", {})
    warps_per_sm = math.ceil(work.programs / dev.sms.value) * work.warps_per_program
    cycles = {group: c * warps_per_sm for group, c in per_warp.items()}
    busiest = max(cycles, key=lambda g: cycles[g])
    issue_ms = cycles[busiest] / (setting.clock_ghz * 1e9) * 1e3
    bound = "memory" if memory_ms > issue_ms else busiest
    return KernelTime(work.name, issue_ms, memory_ms, bound, cycles)


def occupancy(work: KernelWork, dev: Device) -> dict[str, Any]:
    """Programs resident per SM and warps per scheduler, from registers, shared memory and the
    device's limits (register allocation per warp rounded up to 256, 1 KB of shared memory
    reserved per block: :data:`jaxperf.gpu_model.devices.CPG_SPECS`)."""
    limits = {
        "blocks": int(dev.max_blocks_per_sm.value),
        "warps": int(dev.max_warps_per_sm.value) // work.warps_per_program,
    }
    if work.registers > 0:
        per_warp = math.ceil(work.registers * 32 / 256) * 256
        limits["registers"] = int(dev.registers_per_sm.value) // (per_warp * work.warps_per_program)
    per_block = work.shared_bytes_per_program + 1024
    limits["shared memory"] = int(dev.shared_kb_per_sm.value * 1024) // per_block
    blocks = max(min(limits.values()), 0)
    limiter = min(limits, key=lambda k: limits[k])
    warps = blocks * work.warps_per_program
    return {
        "blocks_per_sm": blocks,
        "limited_by": limiter,
        "warps_per_scheduler": warps / dev.schedulers_per_sm.value,
    }


def total_ms(times: list[KernelTime]) -> float | None:
    """Kernels launched one after the other: their times add (None if any is unresolved)."""
    parts = [t.ms for t in times]
    return None if any(p is None for p in parts) else float(sum(p for p in parts if p is not None))
