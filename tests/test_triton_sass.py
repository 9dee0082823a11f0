"""Reading machine code without a GPU or the triton extra: SASS parsing, the instruction mix,
loops and their trip counts, and the static dynamic-instruction count."""

from __future__ import annotations

from jaxperf.compilers.triton import sass as s


def _sass(lines: list[str]) -> str:
    body = "\n".join(
        f"        /*{4 * 16 * i:04x}*/                   {text} ;   /* 0x0 */" for i, text in enumerate(lines)
    )
    return "\tcode for sm_90a\n\t\tFunction : kernel\n" + body + "\n"


def _at(i: int) -> str:
    return f"0x{4 * 16 * i:x}"


# A loop of 32 trips (R10 from 0 by 4 to 128) holding an inner loop of 8 (R20 0 -> 8 by 1).
NESTED = [
    "LDC R1, c[0x0][0x28]",  # 0
    "HFMA2.MMA R10, -RZ, RZ, 0, 0",  # 1
    "SHFL.BFLY PT, R3, R2, 0x1, 0x1f",  # 2: the reduction, outside loops
    "MOV R20, RZ",  # 3: outer head
    "HADD2 R4, R4, R5.H0_H0",  # 4: inner head
    "IADD3 R20, R20, 0x1, RZ",  # 5
    "ISETP.NE.U32.AND P1, PT, R20, 0x8, PT",  # 6
    f"@P1 BRA {_at(4)}",  # 7: inner back edge
    "IADD3 R10, R10, 0x4, RZ",  # 8
    "ISETP.NE.U32.AND P0, PT, R10, 0x80, PT",  # 9
    f"@P0 BRA {_at(3)}",  # 10: outer back edge
    "STG.E.128 desc[UR6][R8.64], R4",  # 11
    "EXIT",  # 12
    f"BRA {_at(13)}",  # 13: the trailing branch to itself, not a loop
    "NOP",
]


def test_parse_drops_nops_and_reads_predicates():
    code = s.parse(_sass(NESTED))
    assert len(code) == 14
    assert code[7].predicate == "P1" and code[7].opcode == "BRA" and code[7].base == "BRA"
    assert s.category(code[2]) == "shuffle" and s.category(code[4]) == "fp arithmetic"
    assert s.category(code[1]) == "move"  # HFMA2.MMA R, -RZ, RZ, 0, 0 loads a constant
    assert s.category(s.Instruction(0, "", "HADD2.F32", "R1, -RZ, R2.H0_H0")) == "conversion"
    assert s.category(s.Instruction(0, "", "USHF.L.U32", "UR4, UR4, 0x7, URZ")) == "integer/address"


def test_nested_loops_and_their_trip_counts():
    code = s.parse(_sass(NESTED))
    inner, outer = sorted(s.loops(code), key=lambda lp: lp.branch)
    assert (inner.trips, outer.trips) == (8, 32)
    assert "R10 from 0 by 4 to 128" in outer.how
    counts = s.dynamic_counts(_sass(NESTED))
    assert counts.loops == 2 and counts.in_loops == 8 and counts.outside_loops == 6
    # outside: 6; outer-only body (3, 8, 9, 10): 4 x 32; inner body (4..7): 4 x 32 x 8
    assert counts.per_program == 6 + 4 * 32 + 4 * 32 * 8
    assert counts.by_category["fp arithmetic"] == 32 * 8 and counts.by_category["shuffle"] == 1


def test_a_64_bit_counter_and_a_negative_start_are_read():
    pair = [
        "CS2R R84, SRZ",  # zeroes R84 and R85
        "IADD3 R85, P0, R85, 0x2000, RZ",
        "IADD3.X R84, RZ, R84, RZ, P0, !PT",
        "ISETP.NE.U32.AND P0, PT, R85, 0x40000, PT",
        "ISETP.NE.U32.AND.EX P0, PT, R84, RZ, PT, P0",
        f"@P0 BRA {_at(1)}",
        "EXIT",
    ]
    (loop,) = s.loops(s.parse(_sass(pair)))
    assert loop.trips == 32
    negative = [
        "UMOV UR13, 0xffffc000",
        "UIADD3 UR13, UP0, UR13, 0x1000, URZ",
        "ISETP.NE.U32.AND P0, PT, RZ, UR13, PT",
        f"@P0 BRA {_at(1)}",
        "EXIT",
    ]
    (loop,) = s.loops(s.parse(_sass(negative)))
    assert loop.trips == 4  # -16384 to 0 by 4096


def test_an_unreadable_counter_leaves_the_estimate_unresolved():
    code = [
        "MOV R2, R7",
        "IADD3 R2, R2, 0x1, RZ",
        "ISETP.NE.U32.AND P0, PT, R2, R9, PT",
        f"@P0 BRA {_at(1)}",
        "EXIT",
    ]
    (loop,) = s.loops(s.parse(_sass(code)))
    assert loop.trips is None and "not read" in loop.how
    counts = s.dynamic_counts(_sass(code))
    assert counts.per_program is None and not counts.resolved


# A loop whose backward branch is unconditional and which is left by a predicated call past it,
# as ptxas writes some loops for sm_86 (R68 from 0 by 4 to 128: 32 trips).
EXIT_BY_CALL = [
    "MOV R68, RZ",  # 0
    "I2FP.F32.U32 R70, R68",  # 1: head
    "IADD3 R68, R68, 0x4, RZ",  # 2
    "ISETP.NE.U32.AND P0, PT, R68, 0x80, PT",  # 3
    "FADD R6, R6, R70",  # 4
    f"@!P0 CALL.REL.NOINC {_at(7)}",  # 5: leaves the loop
    f"BRA {_at(1)}",  # 6: the unconditional back edge
    "BAR.SYNC.DEFER_BLOCKING 0x0",  # 7
    "EXIT",  # 8
]


def test_a_loop_left_by_a_predicated_call_has_its_trips_read():
    (loop,) = s.loops(s.parse(_sass(EXIT_BY_CALL)))
    assert loop.trips == 32 and "R68 from 0 by 4 to 128" in loop.how
    assert s.dynamic_counts(_sass(EXIT_BY_CALL)).per_program == 3 + 6 * 32


def test_a_branch_on_a_uniform_predicate_copied_by_plop3_has_its_trips_read():
    # a Triton histogram on sm_90: P1 reused by the data's compares, the back edge on a copy of UP0
    code = [
        "UMOV UR4, URZ",  # 0
        "LDG.E R42, desc[UR6][R10.64]",  # 1: head
        "UIADD3 UR4, UP0, UR4, 0x1000, URZ",  # 2
        "UIADD3.X UR5, URZ, UR5, URZ, UP0, !UPT",  # 3
        "UISETP.NE.U32.AND UP0, UPT, UR4, 0x10000, UPT",  # 4
        "UISETP.NE.U32.AND.EX UP0, UPT, UR5, URZ, UPT, UP0",  # 5
        "ISETP.NE.U32.AND P1, PT, R42, 0x7, PT",  # 6: a bin's compare, not the counter
        "@P1 IMAD.MOV R6, RZ, RZ, R7",  # 7
        "PLOP3.LUT P1, PT, PT, PT, UP0, 0x80, 0x0",  # 8: P1 = UP0
        f"@P1 BRA {_at(1)}",  # 9
        "EXIT",
    ]
    (loop,) = s.loops(s.parse(_sass(code)))
    assert loop.trips == 16, loop.how
