"""XLA's own output, read: what the optimized HLO of a program does in its loops (:func:`read_program`;
:mod:`jaxperf_study.jax20909.mechanism` reads jax#20909's variants with it)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

_HEADER = re.compile(r"^(ENTRY )?%(\S+) \(.*\) -> .* \{$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT )?%(\S+) = (.*)$")
_CALLED = re.compile(r"\b(calls|body|condition|to_apply)=%([\w.\-]+)")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


@dataclasses.dataclass(frozen=True)
class Instruction:
    name: str
    shape: str  # e.g. "f32[8,32,128,64]{3,2,1,0}" or a tuple "(s32[], f32[...])"
    opcode: str
    text: str

    def called(self, kind: str) -> str | None:
        """The computation named by ``calls=``/``body=``/``condition=``/``to_apply=``."""
        return next((name for k, name in _CALLED.findall(self.text) if k == kind), None)

    @property
    def dims(self) -> str:
        """The shape without its layout: ``f32[8,32,128,64]``."""
        return self.shape.split("{")[0]


def _split_shape(rest: str) -> tuple[str, str]:
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                return rest[: i + 1], rest[i + 2 :]
    shape, _, tail = rest.partition(" ")
    return shape, tail


def parse(hlo: str) -> tuple[dict[str, list[Instruction]], str]:
    """The HLO module's computations (name -> instructions) and the entry's name."""
    computations: dict[str, list[Instruction]] = {}
    entry, current = "", ""
    for line in hlo.splitlines():
        header = _HEADER.match(line)
        if header:
            current = header.group(2)
            computations[current] = []
            entry = current if header.group(1) else entry
            continue
        if line.startswith("}"):
            current = ""
            continue
        match = _INSTRUCTION.match(line) if current else None
        if match:
            shape, tail = _split_shape(match.group(2))
            opcode = tail.split("(", 1)[0].strip()
            computations[current].append(Instruction(match.group(1), shape, opcode, line))
    if not entry:
        raise ValueError("hlo has no ENTRY computation: pass compile().as_text() of a jitted function")
    return computations, entry


def _reduces(
    computations: dict[str, list[Instruction]], name: str, seen: frozenset[str] = frozenset()
) -> int:
    """Reductions in computation ``name`` and every computation it calls (fusions, calls)."""
    total = 0
    for ins in computations.get(name, []):
        total += ins.opcode == "reduce"
        for kind in ("calls", "to_apply"):
            callee = ins.called(kind)
            if callee and callee not in seen and ins.opcode != "reduce":
                total += _reduces(computations, callee, seen | {name})
    return total


def _walk(computations: dict[str, list[Instruction]], name: str) -> Iterable[Instruction]:
    """Instructions of ``name`` and of the computations it ``call``s (XLA:CPU wraps loops in calls)."""
    for ins in computations.get(name, []):
        yield ins
        if ins.opcode == "call" and ins.called("to_apply"):
            yield from _walk(computations, ins.called("to_apply") or "")


def read_program(hlo: str) -> dict[str, Any]:
    """Counts from one optimized HLO module: the while loops and their known trip counts; inside each
    while body, the fusions, whether a reduction runs there, and how many fusions write an array of
    the carry's shape (a pass over the carry, per iteration); outside loops, the reductions and the
    passes over the output."""
    computations, entry = parse(hlo)
    top = list(_walk(computations, entry))
    out_shape = next(i for i in computations[entry] if i.text.lstrip().startswith("ROOT")).dims
    loops: list[dict[str, Any]] = []
    for ins in (i for i in top if i.opcode == "while"):
        body = ins.called("body") or ""
        carry = max((s for s in _tuple_parts(ins.shape)), key=_elements)
        fusions = [i for i in computations[body] if i.opcode == "fusion"]
        trip = _TRIP.search(ins.text)
        loops.append(
            dict(
                trip_count=int(trip.group(1)) if trip else None,
                carry=carry,
                carry_elements=_elements(carry),
                body_fusions=len(fusions),
                body_reduces=_reduces(computations, body),
                carry_passes_per_iteration=sum(f.dims == carry for f in fusions),
            )
        )
    outside = [i for i in top if i.opcode == "fusion"]
    return dict(
        while_loops=len(loops),
        loops=loops,
        fusions_outside_loops=len(outside),
        reduces_outside_loops=sum(_reduces(computations, i.called("calls") or "") for i in outside),
        output=out_shape,
        full_size_fusions_outside_loops=[
            i.name for i in outside if _elements(i.dims) == _elements(out_shape)
        ],
        carry_passes_per_call=sum(
            loop["carry_passes_per_iteration"] * (loop["trip_count"] or 0) for loop in loops
        ),
        carry_elements_written_per_call=sum(
            loop["carry_passes_per_iteration"] * (loop["trip_count"] or 0) * loop["carry_elements"]
            for loop in loops
        ),
    )


def _tuple_parts(shape: str) -> list[str]:
    return [p.strip().split("{")[0] for p in re.split(r",\s*(?![^\[]*\])", shape.strip("()"))]


def _elements(dims: str) -> int:
    inner = dims[dims.find("[") + 1 : dims.rfind("]")]
    n = 1
    for d in filter(None, inner.split(",")):
        n *= int(d)
    return n
