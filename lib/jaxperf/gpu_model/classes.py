"""SASS opcodes sorted by the unit that executes them and the rate it does so at.

Each instruction class names a *group* (the execution resource it occupies; the
groups of one SM work in parallel) and a *rate key* into the device's
:attr:`~jaxperf.gpu_model.devices.Device.rates`. A warp instruction of a class
occupies its group for ``results / rate`` SM cycles (32 results, 64 for the
two-wide FP16x2 ops; shared-memory instructions by the bytes they move). Two
groups cost only issue slots: ``global`` (their cost is the bytes of the
memory term, :mod:`jaxperf.gpu_model.model`) and ``issue`` (control flow,
barriers, special registers, the uniform datapath, constant loads).

Which unit runs what: NVIDIA's Programming Guide table gives the rates
(:data:`jaxperf.gpu_model.devices.CPG_ARITHMETIC`); that FP32, FP16x2 and IMAD share the
FMA pipes on sm_86 and sm_90 comes from NVIDIA's forum
(:data:`jaxperf.gpu_model.devices.FORUM_PIPES`). Two sorting choices are assumptions, said
where they are made: ``I2FP``/``F2FP`` (sm_86+ conversions that are not the
Programming Guide's slow "all other type conversions") count as integer ALU
work, and ``MOV`` as ALU work. An opcode not listed counts as one issue slot
and is named in :attr:`jaxperf.gpu_model.counts.WarpCounts.unclassified`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..compilers.triton.sass import Instruction


@dataclass(frozen=True)
class InstructionClass:
    name: str
    group: str  # "fma", "alu", "xu", "shuffle", "shared", or the issue-only "global"/"issue"
    rate_key: str | None  # into Device.rates; None for the issue-only groups
    results: int = 32  # results per warp instruction (bytes per lane for "shared": see shared_bytes)


CLASSES = {
    c.name: c
    for c in (
        InstructionClass("fp32", "fma", "fp32"),
        InstructionClass("fp16x2", "fma", "fp16x2", results=64),
        InstructionClass("imad", "fma", "int_mul"),
        InstructionClass("alu", "alu", "int"),
        InstructionClass("int_slow", "xu", "int_slow"),
        InstructionClass("conversion", "xu", "conversion"),
        InstructionClass("sfu", "xu", "sfu"),
        InstructionClass("shuffle", "shuffle", "shuffle"),
        InstructionClass("shared", "shared", "shared_bytes"),
        InstructionClass("global", "global", None),
        InstructionClass("issue", "issue", None),
    )
}
GROUPS = ("issue", "fma", "alu", "xu", "shuffle", "shared")

_BY_BASE: dict[str, str] = {
    **dict.fromkeys(("FADD", "FMUL", "FFMA", "FADD32I", "FMUL32I", "FFMA32I"), "fp32"),
    **dict.fromkeys(("HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSETP2", "HSET2"), "fp16x2"),
    "IMAD": "imad",
    **dict.fromkeys(
        (
            "IADD3",
            "IADD",
            "VIADD",
            "LOP3",
            "LOP",
            "SHF",
            "SHL",
            "SHR",
            "LEA",
            "ISETP",
            "SEL",
            "FSEL",
            "FSETP",
            "FSET",
            "FMNMX",
            "IMNMX",
            "VIMNMX",
            "IABS",
            "PRMT",
            "SGXT",
            "BMSK",
            "P2R",
            "R2P",
            "PLOP3",
            "I2FP",  # assumption: the sm_86+ integer-to-float on the ALU pipe (not I2F's XU)
            "F2FP",  # assumption: the sm_86+ float-to-half pack on the ALU pipe
            "I2I",  # 8/16-bit integer to 32-bit: 64/clk in the Programming Guide's table
            "MOV",  # assumption: register moves on the ALU pipe
            "VOTE",
            "FCHK",
        ),
        "alu",
    ),
    **dict.fromkeys(("POPC", "FLO", "BREV"), "int_slow"),
    **dict.fromkeys(("I2F", "F2I", "F2F", "FRND"), "conversion"),
    "MUFU": "sfu",
    "SHFL": "shuffle",
    **dict.fromkeys(("LDS", "STS", "LDSM", "STSM", "ATOMS", "LDL", "STL"), "shared"),
    **dict.fromkeys(
        ("LDG", "STG", "LD", "ST", "RED", "ATOM", "ATOMG", "LDGSTS", "LDGDEPBAR", "UTMALDG", "UBLKCP"),
        "global",
    ),
    **dict.fromkeys(
        (
            "BRA",
            "BRX",
            "JMP",
            "EXIT",
            "BSSY",
            "BSYNC",
            "CALL",
            "RET",
            "BAR",
            "MEMBAR",
            "WARPSYNC",
            "DEPBAR",
            "ERRBAR",
            "YIELD",
            "S2R",
            "S2UR",
            "CS2R",
            "LDC",
            "R2UR",
            "NOP",
            "SYNCS",
            "FENCE",
            "CCTL",
        ),
        "issue",
    ),
}
_WIDTH = re.compile(r"\.(128|64|32|U16|S16|U8|S8)\b")
_MATRICES = re.compile(r"\.M88\.(\d)")


def classify(ins: Instruction) -> str | None:
    """The instruction's class in :data:`CLASSES`; None when the opcode is not known.

    ``HFMA2.MMA R, -RZ, RZ, a, b`` writes a constant (a move, one issue slot);
    ``HADD2.F32`` widens a half on the FP16x2 pipe; the uniform datapath's
    ``U...`` twins cost an issue slot."""
    if ins.opcode.startswith("HFMA2.MMA") and "-RZ, RZ" in ins.operands:
        return "issue"
    base = ins.base
    if base in _BY_BASE:
        return _BY_BASE[base]
    if base.startswith("U") and len(base) > 1:
        return "issue"
    return None


def shared_bytes(ins: Instruction) -> int:
    """Bytes one warp's shared-memory instruction moves (a 4-byte bank word per lane at least):
    ``.128`` 16 per lane, ``.64`` 8, narrower or unsuffixed 4; ``LDSM``/``STSM`` ``.M88.n``
    move n 8x8 matrices of 16-bit elements (128 bytes each)."""
    matrices = _MATRICES.search(ins.opcode)
    if ins.base in ("LDSM", "STSM"):
        return 128 * int(matrices.group(1)) if matrices else 128
    width = _WIDTH.search(ins.opcode)
    per_lane = {"128": 16, "64": 8}.get(width.group(1), 4) if width else 4
    return 32 * per_lane
