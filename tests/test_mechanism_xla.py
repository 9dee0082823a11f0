"""Pins XLA:CPU's mechanism for jax#20909, read from the optimized HLO (jax 0.12.0.1).

If a JAX/XLA upgrade changes any of these counts, the study's verdict in summary.md
is stale: this test fails loudly so that the verdict is read again."""

from __future__ import annotations

import pytest

from jaxperf_study.jax20909 import mechanism, xla
from jaxperf_study.jax20909.variant import KernelVariant

# 16 steps, 8 row blocks of 128 per batch element
SEED = KernelVariant("seed", "python", T=1024, D=64, batch=2, dtype="float16")


@pytest.fixture(scope="module")
def evidence():
    return {row["variant"]: row for row in mechanism.evidence(SEED, mechanism.VARIANTS)}


def test_fori_loop_rewrites_the_whole_carry_every_step(evidence):
    fori = evidence["fori u=1"]
    assert fori["while_loops"] == 1 and fori["loop_trip_count"] == 16
    assert fori["loop_carry"] == "f32[2,8,128,64]"  # [batch, blocks, 128, D]: every program's carry at once
    assert (
        fori["loop_body_reduces"] == 0 and fori["reduces_outside_loops"] == 1
    )  # XLA hoisted X_i.sum() itself
    assert fori["loop_carry_passes_per_iteration"] == 1 and fori["carry_passes_per_call"] == 16


def test_python_loop_adds_on_scalars_and_writes_the_output_once(evidence):
    python = evidence["python"]
    assert python["while_loops"] == 0 and python["reduces_outside_loops"] == 1  # 16 sums CSE'd into one
    assert python["carry_passes_per_call"] == 0
    # the input's f16->f32 convert and one broadcast of the per-block scalars into the output
    assert len(python["full_size_fusions_outside_loops"]) == 2


def test_unrolling_divides_the_passes_and_hoisting_by_hand_changes_nothing(evidence):
    for name in ("fori u=8", "hand_unrolled u=8"):
        assert evidence[name]["loop_trip_count"] == 2 and evidence[name]["carry_passes_per_call"] == 2, name
    hoisted, fori = evidence["hoisted u=1"], evidence["fori u=1"]
    keys = (
        "while_loops",
        "loop_trip_count",
        "loop_body_reduces",
        "reduces_outside_loops",
        "carry_passes_per_call",
    )
    assert {k: hoisted[k] for k in keys} == {k: fori[k] for k in keys}


def test_a_scalar_carry_writes_one_element_per_block_per_step(evidence):
    sc, fori = evidence["scalar_carry u=1"], evidence["fori u=1"]
    assert sc["while_loops"] == 1 and sc["loop_trip_count"] == 16 and sc["loop_carry"] == "f32[2,8]"
    assert sc["carry_elements_written_per_call"] == 16 * 2 * 8
    assert fori["carry_elements_written_per_call"] == 16 * 2 * 8 * 128 * 64  # 8192x more


def test_verdict_line_states_the_counts(evidence):
    line = mechanism.verdict(list(evidence.values()))
    assert line.startswith(
        "XLA:CPU, seed T=1024: in fori_loop's program the reduction is not inside the while body"
    )
    assert "1 pass(es) over the f32[2,8,128,64] carry per iteration x 16 trips = 16 passes per call" in line
    assert (
        "shrinks the carry to f32[2,8]: 256 carry elements written per call against fori_loop's 2,097,152"
        in line
    )
    assert mechanism.verdict([evidence["python"]]).startswith("XLA: not read")


def test_parse_reads_computations_and_rejects_text_without_entry():
    hlo = """HloModule m

%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]{0}) parameter(0)
  ROOT %t = (s32[], f32[4]{0}) tuple(%p)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4]{0} parameter(0)
}
"""
    computations, entry = xla.parse(hlo)
    assert entry == "main" and [i.opcode for i in computations["body"]] == ["parameter", "tuple"]
    assert computations["body"][0].shape == "(s32[], f32[4]{0})"
    with pytest.raises(ValueError, match="hlo has no ENTRY computation"):
        xla.parse("HloModule m\n")


def test_the_verdict_reads_rows_read_back_from_records():
    """Rows read back from a records CSV hold a list as its repr and counts as floats: the sentence
    still names the fusions (never a string's characters) and prints whole counts."""
    from jaxperf_study.jax20909 import mechanism

    rows = [
        dict(variant="python", T=16384, while_loops=0.0, reduces_outside_loops=1.0, output="f32[2]",
             full_size_fusions_outside_loops="['wrapped_convert', 'broadcast_fusion']"),
        dict(variant="fori u=1", T=16384, loop_body_reduces=0.0, reduces_outside_loops=1.0,
             loop_body_fusions=2.0, loop_carry_passes_per_iteration=1.0, loop_carry="f32[8]",
             loop_trip_count=16.0, carry_passes_per_call=16.0),
    ]  # fmt: skip
    text = mechanism.verdict(rows)
    assert "2 fusion(s) of the f32[2] output's size (wrapped_convert, broadcast_fusion)" in text
    assert "x 16 trips = 16 passes per call" in text and "16.0" not in text
