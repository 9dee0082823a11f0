"""A static cycle estimate from a kernel's final bundles: a TPU core issues one VLIW bundle per
cycle, so a call costs its straight-line bundles plus, per loop, trips x body (inner loops counted
alike). No stall is counted: the schedule's length, "compiled on a CPU, not executed"."""

from __future__ import annotations

import re

from .bundles import Schedule


def loop_cycles(schedule: Schedule, index: int) -> int:
    """Cycles of loop ``index``: trips x (own bundles + its inner loops' cycles); ValueError
    when a trip count is unknown."""
    count = _trips(schedule, index)
    return count * iteration_cycles(schedule, index) if count > 0 else 0


def _trips(schedule: Schedule, index: int) -> int:
    count = schedule.loops[index].trips
    if count is None:
        raise ValueError(f"loop {index} of {schedule.name!r} has no constant trip count")
    return count


def iteration_cycles(schedule: Schedule, index: int) -> int:
    """Cycles of one iteration of loop ``index`` (its own bundles plus its inner loops' cycles)."""
    return schedule.own_bundles(index) + sum(loop_cycles(schedule, c) for c in schedule.children(index))


def static_cycles(schedule: Schedule) -> int:
    """Cycles of one kernel call: straight-line bundles plus every top-level loop's cycles."""
    return schedule.own_bundles(None) + sum(loop_cycles(schedule, i) for i in schedule.children(None))


#: The slots a loop step's cost is read in: a TPU bundle issues operations of each kind at once.
SLOTS = ("vector", "matrix", "cross-lane", "transcendental", "load/store", "scalar", "control")
_OP = re.compile(r"=\s*([a-z][\w.]*)|^\s*([a-z][\w.]*)")


def slot(op: str) -> str | None:
    """The slot of one bundle operation by its full name (None for a phi, which issues nothing)."""
    base, parts = op.split(".")[0], set(op.split(".")[1:])
    if base.endswith("phi"):
        return None
    if base.startswith("vmat") or any(p.startswith("mxu") for p in parts):
        return "matrix"
    if "xlane" in parts or any(p.startswith("xlu") for p in parts):
        return "cross-lane"
    if "eup" in parts:
        return "transcendental"
    if base in ("vld", "vst", "sld", "sst") or base.startswith(("dma", "vsync", "vwait")):
        return "load/store"
    if base in ("sbr", "shalt", "sfence"):
        return "control"
    return "vector" if base.startswith("v") else "scalar"


def slot_counts(schedule: Schedule) -> dict[str, int]:
    """Operations of one kernel call per slot of :data:`SLOTS`: each bundle's operations times
    the trips of the loops around it (ValueError when one has no constant trip count)."""
    weight = [1] * schedule.total
    for index, loop in enumerate(schedule.loops):
        count = _trips(schedule, index)
        for b in range(loop.start, loop.end + 1):
            weight[b] *= count
    out = dict.fromkeys(SLOTS, 0)
    for bundle, w in zip(schedule.bundles, weight, strict=True):
        for part in bundle.text.split(";;"):
            found = _OP.search(part.strip(" {}>\n"))
            kind = slot(found.group(1) or found.group(2)) if found else None
            if kind is not None:
                out[kind] += w
    return out
