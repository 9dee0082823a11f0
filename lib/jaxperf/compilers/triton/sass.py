"""Read machine code (``cuobjdump -sass`` text) without a GPU: :func:`parse` it, find the
:func:`loops` left (a backward branch) with their trips where the counter is a register stepped by
an immediate to an immediate bound, sort opcodes by :func:`category`, and :func:`dynamic_counts`:
the instructions one warp issues per program, each in-loop one weighted by its loops' trips (a
static estimate, never a measurement)."""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .toolchain import require

_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", re.MULTILINE)
_PREDICATE = re.compile(r"^@(!?U?P[T0-9]+)\s+")
_BRANCH_TARGET = re.compile(r"^(?:BRA|BRX|JMP|CALL\.REL(?:\.NOINC)?)\b[^0-9]*?(0x[0-9a-f]+)")

# The instruction mix, in the order tables show it. Opcodes are matched on
# their base (before the first dot), except the few whose suffix changes the kind.
CATEGORIES = tuple(
    "global load|global store|shared memory|shuffle|barrier|fp arithmetic|conversion|integer/address|"
    "move|control|other".split("|")
)


def _by_base(opcodes: dict[str, str]) -> dict[str, str]:
    """``{opcode: kind}`` from ``{kind: "OPCODE OPCODE ..."}``."""
    return {op: kind for kind, ops in opcodes.items() for op in ops.split()}


_BY_BASE = _by_base(
    {
        "global load": "LDG LD",
        "global store": "STG ST RED ATOM ATOMG",
        "shared memory": "LDS STS STSM LDSM ATOMS LDL STL",
        "shuffle": "SHFL",
        "barrier": "BAR MEMBAR WARPSYNC DEPBAR SYNCS",
        "fp arithmetic": "FADD FMUL FFMA FMNMX FSETP FSEL HADD2 HMUL2 HFMA2 HMNMX2 MUFU HMMA",
        "conversion": "I2F F2F F2FP F2I I2FP F2IP",
        "integer/address": "IADD3 IMAD LOP3 SHF LEA ISETP SGXT IABS IMNMX VIADD SEL PLOP3 P2R R2P",
        "move": "MOV CS2R PRMT S2R S2UR LDC ULDC UMOV R2UR SHFL_IDX",
        "control": "BRA BRX EXIT BSSY BSYNC JMP CALL RET WARPSYNC",
    }
)


#: The classes a loop step's cost is read in (coarser than :data:`CATEGORIES`, and naming the
#: tensor core and async copies that :func:`category` leaves in "other").
CLASSES = ("tensor core", "memory", "integer/address", "float ALU", "control", "other")
_CLASS_BY_BASE = _by_base(
    {
        "tensor core": "HMMA HGMMA IMMA IGMMA QGMMA BMMA DMMA UTCHMMA",
        "memory": "LDGSTS LDGDEPBAR UTMALDG UTMASTG UBLKCP UTMAPF CCTL ARRIVES SYNCS",
        "float ALU": "FADD FMUL FFMA FMNMX FSETP FSEL HADD2 HMUL2 HFMA2 HMNMX2 MUFU FCHK DADD DMUL DFMA "
        "FSWZADD HSETP2",
    }
)
_CLASS_BY_CATEGORY = {
    **dict.fromkeys(("global load", "global store", "shared memory", "shuffle"), "memory"),
    **dict.fromkeys(("fp arithmetic", "conversion"), "float ALU"),
    **dict.fromkeys(("integer/address", "move"), "integer/address"),
    **dict.fromkeys(("barrier", "control"), "control"),
}


def step_class(instruction: Instruction) -> str:
    """The instruction's class in :data:`CLASSES`: tensor core (HMMA, HGMMA), memory (global,
    shared, async copies such as LDGSTS, shuffles), integer/address (IMAD, IADD3, LEA, moves),
    float ALU (FFMA, MUFU, conversions), control (branches, barriers)."""
    base = instruction.base
    if base in _CLASS_BY_BASE:
        return _CLASS_BY_BASE[base]
    if base.startswith("U") and base[1:] in _CLASS_BY_BASE:
        return _CLASS_BY_BASE[base[1:]]
    return _CLASS_BY_CATEGORY.get(category(instruction), "other")


@dataclass(frozen=True)
class Instruction:
    address: int
    predicate: str  # "" or e.g. "P0", "!P1"
    opcode: str  # with modifiers, e.g. "LDG.E.128"
    operands: str

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


@dataclass(frozen=True)
class Loop:
    """A loop left in machine code: the body runs from ``head`` to the backward branch at ``branch``."""

    head: int
    branch: int
    trips: int | None  # times the body runs per program, when the counter could be read; else None
    how: str  # how ``trips`` was read, or why not

    def contains(self, address: int) -> bool:
        return self.head <= address <= self.branch


def disassemble(cubin: bytes) -> str:
    """``cuobjdump -sass`` of a cubin, with the cuobjdump shipped in the triton wheel."""
    cuobjdump = require().cuobjdump
    assert cuobjdump is not None  # require() guarantees it
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        proc = subprocess.run([cuobjdump, "-sass", handle.name], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump -sass failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def parse(sass: str) -> list[Instruction]:
    """Every instruction of ``cuobjdump -sass`` text, in address order, NOP padding excluded."""
    out = []
    for match in _SASS_LINE.finditer(sass):
        text = match.group(2)
        predicate = _PREDICATE.match(text)
        if predicate:
            text = text[predicate.end() :]
        opcode, _, operands = text.partition(" ")
        if opcode == "NOP":
            continue
        guard = predicate.group(1) if predicate else ""
        out.append(Instruction(int(match.group(1), 16), guard, opcode, operands.strip()))
    return out


def category(instruction: Instruction) -> str:
    """The instruction's kind in :data:`CATEGORIES`. ``HADD2.F32 R, -RZ, R.H0_H0`` widens
    a half to float (a conversion); ``HFMA2.MMA R, -RZ, RZ, ...`` loads a constant (a move)."""
    if instruction.opcode.startswith("HADD2.F32") and instruction.operands.split(",")[1].strip() == "-RZ":
        return "conversion"
    if instruction.opcode.startswith("HFMA2.MMA") and "-RZ, RZ" in instruction.operands:
        return "move"
    base = instruction.base
    if base not in _BY_BASE and base.startswith("U") and base[1:] in _BY_BASE:
        base = base[1:]  # the uniform datapath's twin (USHF, ULEA, UIADD3, ...)
    return _BY_BASE.get(base, "other")


def _backward_branch(instruction: Instruction) -> int | None:
    found = _BRANCH_TARGET.match(f"{instruction.opcode} {instruction.operands}")
    if found and int(found.group(1), 16) < instruction.address:
        return int(found.group(1), 16)
    return None


_IMM = re.compile(r"^(?:0x[0-9a-f]+|\d+)$")


def _imm(text: str) -> int | None:
    text = text.strip()
    return 0 if text in ("RZ", "URZ") else int(text, 0) if _IMM.match(text) else None


def _half2_bits(halves: list[str]) -> int | None:
    """The 32-bit word ``HFMA2.MMA R, -RZ, RZ, hi, lo`` writes: two fp16 immediates, the high
    half first (``0, 4.17e-07``, i.e. 0 and 7 x 2^-24, is the integer 7)."""
    import numpy as np

    if len(halves) != 2:
        return None
    try:
        hi, lo = (int(np.array(float(h), np.float16).view(np.uint16)) for h in halves)
    except ValueError:
        return None
    return (hi << 16) | lo


def _initial_value(code: list[Instruction], register: str, before: int) -> int | None:
    """The constant last written to ``register`` before address ``before`` (None if not a constant).
    ``CS2R Rn, SRZ`` zeroes the pair Rn, Rn+1."""
    pair = re.fullmatch(r"R(\d+)", register)
    low_half = f"R{int(pair.group(1)) - 1}" if pair else None
    for ins in reversed([i for i in code if i.address < before]):
        ops = [o.strip() for o in ins.operands.split(",")]
        if ins.base == "CS2R" and ops[0] in (register, low_half) and ops[1:] == ["SRZ"]:
            return 0
        if not ops or ops[0] != register:
            continue
        if ins.base in ("MOV", "UMOV"):
            return _imm(ops[1])
        if ins.opcode.startswith("HFMA2.MMA") and ops[1:3] == ["-RZ", "RZ"]:
            return _half2_bits(ops[3:])
        if ins.opcode.startswith("IMAD.MOV") and ops[1:3] == ["RZ", "RZ"]:
            return _imm(ops[3])
        return None
    return None


def _operands(ins: Instruction) -> list[str]:
    """Register and immediate operands, predicates (``P0``, ``PT``, ``!PT``) left out."""
    return [o for o in (o.strip() for o in ins.operands.split(",")) if not re.fullmatch(r"!?U?P[T0-9]", o)]


def _trips(code: list[Instruction], head: int, branch: Instruction) -> tuple[int | None, str]:
    """Read the loop's counter: ``ISETP.NE R, bound`` setting the branch's predicate (for a
    64-bit counter, the low word's compare before the ``.EX`` one), ``IADD3 R, R, step`` in the
    body, and R's constant start before the loop."""
    body = [i for i in code if head <= i.address < branch.address]
    guard = branch if branch.predicate else _exit(body, branch)
    predicate = guard.predicate.lstrip("!")
    writer = next((i for i in reversed(body) if i.operands.split(",")[0].strip() == predicate), branch)
    copied = re.fullmatch(r"P\d, PT, PT, PT, (UP\d), 0x80, 0x0", writer.operands.strip())  # P = UPn
    predicate = copied.group(1) if copied and writer.base == "PLOP3" else predicate
    compares = [i for i in body if i.base.endswith("ISETP") and i.operands.split(",")[0].strip() == predicate]
    compares = [i for i in compares if ".EX" not in i.opcode]  # a 64-bit counter: its low word's compare
    if not compares:
        return None, f"no ISETP sets {guard.predicate or 'the branch predicate'} in the loop"
    compare = compares[-1]
    ops = _operands(compare)
    if ".NE." not in compare.opcode + "." or len(ops) < 2 or (_imm(ops[0]) is None) == (_imm(ops[1]) is None):
        return None, f"counter compare not read: {compare.opcode} {compare.operands}"
    if _imm(ops[0]) is not None and _imm(ops[1]) is None:  # "ISETP.NE P, PT, RZ, R": bound first
        ops = [ops[1], ops[0], *ops[2:]]
    register, bound = ops[0], _imm(ops[1])
    steps = []
    for ins in body:
        parts = _operands(ins)
        if ins.base in ("IADD3", "VIADD", "UIADD3") and parts[:1] == [register] and register in parts[1:]:
            other = [p for p in parts[1:] if p not in (register, "RZ", "URZ")]
            step = _imm(other[0]) if len(other) == 1 else None
            if step is not None:
                steps.append(step)
    start = _initial_value(code, register, head)
    if bound is None or start is None:
        return None, f"counter {register} not read (start {start}, bound {bound})"
    if start > bound >= 0 and start >= 2**31:  # a negative 32-bit start counting up
        start -= 2**32
    if len(steps) != 1 or steps[0] <= 0 or (bound - start) % steps[0]:
        return None, f"counter {register} not read (start {start}, steps {steps}, bound {bound})"
    return (bound - start) // steps[0], f"{register} from {start} by {steps[0]} to {bound}"


def _exit(body: list[Instruction], branch: Instruction) -> Instruction:
    """The instruction that leaves a loop whose backward branch is unconditional: a predicated
    branch or call to past the loop (ptxas writes ``@!P0 CALL.REL.NOINC`` out of some loops on
    sm_86); the branch itself when there is none."""
    for ins in reversed(body):
        found = _BRANCH_TARGET.match(f"{ins.opcode} {ins.operands}")
        if ins.predicate and found and int(found.group(1), 16) > branch.address:
            return ins
    return branch


def loops(code: list[Instruction]) -> list[Loop]:
    """The loops in machine code, in address order, each with its trip count where readable."""
    out = []
    for ins in code:
        head = _backward_branch(ins)
        if head is not None:
            trips, how = _trips(code, head, ins)
            out.append(Loop(head, ins.address, trips, how))
    return out


@dataclass(frozen=True)
class DynamicCounts:
    """One kernel's SASS, counted statically (per program, i.e. per warp's instruction stream)."""

    outside_loops: int  # instructions outside every loop
    in_loops: int  # instructions inside some loop (static count)
    loops: int
    loop_trips: tuple[int | None, ...]  # per loop, in address order
    per_program: int | None  # each instruction x the trips of its loops; None if a trip is unknown
    how: str  # how the trips were read, or why one was not
    by_category: dict[str, int | None]  # per_program split by category()
    by_class: dict[str, int | None]  # per_program split by step_class()

    @property
    def resolved(self) -> bool:
        return self.per_program is not None


def dynamic_counts(
    sass_text: str,
    *,
    find: Callable[[list[Any]], list[Any]] | None = None,
    own: Callable[[list[Any]], list[Any]] | None = None,
) -> DynamicCounts:
    """Count ``sass_text`` (``cuobjdump -sass``) statically: see the module docstring. ``find``
    reads the loops every instruction is weighted by, ``own`` the kernel's own loops among them
    (reported as ``loops``; default: all; Mosaic GPU's barrier waits are not its own)."""
    code = parse(sass_text)
    found = (find or loops)(code)
    mine = found if own is None else own(code)
    by_category: dict[str, int | None] = dict.fromkeys(CATEGORIES, 0)
    by_class: dict[str, int | None] = dict.fromkeys(CLASSES, 0)
    in_loops = 0
    for ins in code:
        around = [lp for lp in found if lp.contains(ins.address)]
        in_loops += bool(around)
        trips = [lp.trips for lp in around]
        known = [t for t in trips if t is not None]
        weight = None if len(known) < len(trips) else math.prod(known)
        for table, key in ((by_category, category(ins)), (by_class, step_class(ins))):
            had = table[key]
            table[key] = None if had is None or weight is None else had + weight
    counted = [v for v in by_category.values() if v is not None]
    return DynamicCounts(
        outside_loops=len(code) - in_loops,
        in_loops=in_loops,
        loops=len(mine),
        loop_trips=tuple(lp.trips for lp in mine),
        per_program=None if len(counted) < len(by_category) else sum(counted),
        how="; ".join(lp.how for lp in found) or "no loop in SASS",
        by_category=by_category,
        by_class=by_class,
    )
