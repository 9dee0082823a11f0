"""What one warp of a kernel issues: dynamic SASS instructions by class, read from machine code.

As :mod:`jaxperf.compilers.triton.estimate` counts them (an instruction outside loops
once, one inside as many times as the loops around it run, trip counts read
from the loop counters by :func:`jaxperf.compilers.triton.sass.loops`), but split by
:mod:`jaxperf.gpu_model.classes` and with the bytes shared-memory instructions
move. A loop whose trip count the machine code does not say leaves the count
unresolved (``per_class`` is None): no time is predicted from a guess.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from ..compilers.triton import sass as _sass
from .classes import CLASSES, classify, shared_bytes


@dataclass(frozen=True)
class WarpCounts:
    """Dynamic instructions one warp of one program issues, by class (None if unresolved)."""

    per_class: dict[str, float] | None
    shared_bytes: float  # bytes moved by shared-memory instructions, per warp
    static_instructions: int
    loop_trips: tuple[int | None, ...]
    how: str  # how the trips were read, or why one was not
    unclassified: tuple[str, ...] = ()  # opcodes counted as one issue slot each
    opcodes: dict[str, float] = field(default_factory=dict)  # dynamic count per opcode (for tables)

    @property
    def resolved(self) -> bool:
        return self.per_class is not None

    @property
    def total(self) -> float | None:
        return None if self.per_class is None else sum(self.per_class.values())


def warp_counts(sass_text: str) -> WarpCounts:
    """Count ``cuobjdump -sass`` text (one kernel) by class."""
    code = _sass.parse(sass_text)
    found = _sass.loops(code)
    per_class: Counter[str] = Counter()
    opcodes: Counter[str] = Counter()
    unclassified: set[str] = set()
    moved = 0.0
    resolved = True
    for ins in code:
        trips = [lp.trips for lp in found if lp.contains(ins.address)]
        if any(t is None for t in trips):
            resolved = False
            continue
        times = math.prod(t for t in trips if t is not None)
        kind = classify(ins)
        if kind is None:
            unclassified.add(ins.base)
            kind = "issue"
        per_class[kind] += times
        opcodes[ins.opcode] += times
        if kind == "shared":
            moved += times * shared_bytes(ins)
    return WarpCounts(
        per_class={name: float(per_class.get(name, 0)) for name in CLASSES} if resolved else None,
        shared_bytes=moved,
        static_instructions=len(code),
        loop_trips=tuple(lp.trips for lp in found),
        how="; ".join(lp.how for lp in found) or "no loop in SASS",
        unclassified=tuple(sorted(unclassified)),
        opcodes=dict(opcodes),
    )
