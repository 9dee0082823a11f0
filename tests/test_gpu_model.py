"""The time model's arithmetic on hand-checked cases (one program, one step), its device facts,
the SASS classes, the harness's random numbers against jax.random.normal, and the goals' logic.
None of these needs the triton extra (tests/test_gpu_model_sass.py compiles real kernels)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

from jaxperf.compilers.triton import sass
from jaxperf.gpu_model import classes, counts, devices, harness, model, reporter
from jaxperf.gpu_model.settings import TimeModelSettings


def _sass(lines: list[str]) -> str:
    body = "\n".join(
        f"        /*{16 * i:04x}*/                   {text} ;   /* 0x0 */" for i, text in enumerate(lines)
    )
    return "\tcode for sm_86\n\t\tFunction : kernel\n" + body + "\n"


def _loop(trips: int) -> list[str]:
    """One FADD and one HADD2 per step, ``trips`` steps (R5 from 0 by 1 to trips)."""
    return [
        "MOV R5, 0x0",  # 0
        "FADD R2, R2, R3",  # 1: loop head
        "HADD2 R4, R4, R6",  # 2
        "IADD3 R5, R5, 0x1, RZ",  # 3
        f"ISETP.NE.AND P0, PT, R5, {hex(trips)}, PT",  # 4
        "@P0 BRA 0x10",  # 5: back to the head
        "EXIT",  # 6
        "BRA 0x70",  # 7: the trailing branch to itself
    ]


def test_every_device_fact_names_its_source_and_assumed_facts_carry_a_range():
    for dev in devices.DEVICES.values():
        for name, fact in dev.facts().items():
            assert "http" in fact.source or fact.source.startswith("assumption"), (dev.name, name)
        assert dev.clock_ghz.low is not None and dev.clock_ghz.low < dev.clock_ghz.value
        assert dev.dram_efficiency.low == 0.8 and dev.dram_efficiency.value == 1.0
    a6000, h200 = devices.RTX_A6000, devices.H200
    assert (a6000.sms.value, a6000.target, h200.sms.value, h200.target) == (84, "sm_86", 132, "sm_90")
    assert a6000.rates["fp16x2"].ends() == (128, 256) and not h200.rates["fp16x2"].is_range
    # the point first, then every corner: clock x DRAM (x FP16x2 on GA102)
    assert len(devices.settings(a6000)) == 8 and len(devices.settings(h200)) == 4
    assert devices.settings(a6000)[0] == devices.point(a6000)
    assert devices.point(a6000).clock_ghz == 1.80 and devices.point(a6000).rates["fp16x2"] == 256
    with pytest.raises(ValueError, match="device"):
        devices.device("a100")


@pytest.mark.parametrize(
    "text, kind",
    [
        ("FADD R1, R2, R3", "fp32"),
        ("FFMA.FTZ R1, R2, R3, R4", "fp32"),
        ("HADD2 R1, R2, R3", "fp16x2"),
        ("HADD2.F32 R1, -RZ, R2.H0_H0", "fp16x2"),
        ("HFMA2.MMA R1, -RZ, RZ, 0, 0", "issue"),
        ("IMAD.MOV.U32 R1, RZ, RZ, R2", "imad"),
        ("IADD3 R1, R2, 0x1, RZ", "alu"),
        ("FSEL R1, R2, R3, P0", "alu"),
        ("I2F.F16.U32 R1, R2", "conversion"),
        ("MUFU.EX2 R1, R2", "sfu"),
        ("SHFL.BFLY PT, R1, R2, 0x1, 0x1f", "shuffle"),
        ("LDS.128 R4, [R2]", "shared"),
        ("STG.E.128 desc[UR4][R2.64], R4", "global"),
        ("ULDC.64 UR4, c[0x0][0x118]", "issue"),
        ("BAR.SYNC.DEFER_BLOCKING 0x0", "issue"),
        ("FOO R1, R2", None),
    ],
)
def test_opcodes_sort_into_their_unit(text, kind):
    opcode, _, operands = text.partition(" ")
    assert classes.classify(sass.Instruction(0, "", opcode, operands)) == kind


def test_shared_memory_instructions_move_bytes_by_their_width():
    def moved(opcode):
        return classes.shared_bytes(sass.Instruction(0, "", opcode, ""))

    assert (moved("LDS.128"), moved("STS.64"), moved("LDS.U16"), moved("STS")) == (512, 256, 128, 128)
    assert moved("STSM.16.M88.4") == 512 and moved("LDSM.16.M88.2") == 256


def test_counts_multiply_a_loop_body_by_its_trips_and_split_it_by_class():
    c = counts.warp_counts(_sass(_loop(4)))
    assert c.loop_trips == (4,) and c.resolved
    assert c.per_class is not None
    assert (c.per_class["fp32"], c.per_class["fp16x2"]) == (4, 4)
    assert c.per_class["alu"] == 1 + 4 + 4  # MOV, then IADD3 and ISETP each step
    assert c.per_class["issue"] == 4 + 2  # the back edge each step, EXIT, the trailing BRA
    assert c.total == 4 * 5 + 3


def test_one_program_one_step_by_hand():
    """One warp, one step: 1 FADD, 1 HADD2, 1 MOV + 1 IADD3 + 1 ISETP, 3 branches/exits = 8."""
    work = model.KernelWork("k", counts.warp_counts(_sass(_loop(1))), 1, 1, 1e6, 1e6)
    dev, point = devices.RTX_A6000, devices.point(devices.RTX_A6000)
    cycles = model.sm_cycles_per_warp(work.counts, dev, point)
    assert cycles == pytest.approx(
        {"issue": 8 / 4, "fma": 32 / 128 + 64 / 256, "alu": 3 * 32 / 64, "xu": 0, "shuffle": 0, "shared": 0}
    )
    t = model.kernel_time(work, dev, point)
    assert t.issue_ms == pytest.approx(2.0 / 1.8e9 * 1e3)  # the schedulers are the busiest
    assert t.memory_ms == pytest.approx(2e6 / 768e9 * 1e3)
    assert t.ms == t.memory_ms and t.bound == "memory"
    # 85 programs on 84 SMs: the busiest SM runs two, so the issue time doubles
    two = model.kernel_time(dataclasses.replace(work, programs=85, bytes_read=0, bytes_written=0), dev, point)
    assert two.issue_ms == pytest.approx(2 * t.issue_ms) and two.bound == "issue"


def test_a_unit_slower_than_issue_sets_the_pace():
    """32 conversions (XU, 16 results/clk/SM: 2 cycles each) outrun 33 issue slots / 4 schedulers."""
    lines = ["I2F.F16.U32 R1, R2"] * 32 + ["EXIT"]
    work = model.KernelWork("k", counts.warp_counts(_sass(lines)), 4, 84, 0, 0)
    t = model.kernel_time(work, devices.H200, devices.point(devices.H200))
    assert t.bound == "xu"
    assert t.cycles_per_sm["xu"] == pytest.approx(4 * 32 * 32 / 16)
    assert t.issue_ms == pytest.approx(256 / 1.98e9 * 1e3)


def test_an_unread_trip_count_predicts_no_time():
    lines = _loop(4)
    lines[0] = "MOV R5, R9"  # the counter's start is not a constant
    c = counts.warp_counts(_sass(lines))
    assert not c.resolved and c.total is None
    work = model.KernelWork("k", c, 1, 1, 0, 0)
    assert model.kernel_time(work, devices.H200, devices.point(devices.H200)).ms is None
    assert model.total_ms([model.kernel_time(work, devices.H200, devices.point(devices.H200))]) is None


def test_a_counter_loaded_by_hfma2_mma_is_read():
    """ptxas loads small constants as two fp16 halves: ``0, 4.17e-07`` is the integer 7."""
    lines = _loop(4)
    lines[0] = "HFMA2.MMA R5, -RZ, RZ, 0, 4.17232513427734375e-07"
    lines[3] = "IADD3 R5, R5, 0x8, RZ"
    lines[4] = "ISETP.NE.U32.AND P0, PT, R5, 0x87, PT"
    (loop,) = sass.loops(sass.parse(_sass(lines)))
    assert loop.trips == 16 and "from 7 by 8 to 135" in loop.how


def test_occupancy_names_its_limit():
    c = counts.warp_counts(_sass(_loop(1)))
    work = model.KernelWork("k", c, 4, 1, 0, 0, registers=72, shared_bytes_per_program=16384)
    occ = model.occupancy(work, devices.RTX_A6000)
    assert occ == {"blocks_per_sm": 5, "limited_by": "shared memory", "warps_per_scheduler": 5.0}
    light = model.occupancy(dataclasses.replace(work, registers=32, shared_bytes_per_program=0), devices.H200)
    assert light["limited_by"] == "warps" and light["blocks_per_sm"] == 16


@pytest.mark.parametrize("name, value", [("programs", 0), ("warps_per_program", 1.5), ("bytes_read", -1)])
def test_bad_kernel_work_is_a_clear_error(name, value):
    args = dict(name="k", counts=counts.warp_counts(_sass(_loop(1))), warps_per_program=1, programs=1)
    args |= dict(bytes_read=0.0, bytes_written=0.0)
    args[name] = value
    with pytest.raises(ValueError, match=name):
        model.KernelWork(**args)


@pytest.mark.parametrize("partitionable", [True, False])
@pytest.mark.parametrize("shape", [(7,), (2, 8, 64)])
def test_the_harness_random_numbers_are_jax_random_normal_bit_for_bit(partitionable, shape):
    with jax.threefry_partitionable(partitionable):
        want = jax.random.normal(jax.random.PRNGKey(0), shape, jnp.float16).ravel()
    got = harness.reference_normal(want.size, partitionable=partitionable)
    assert got.dtype == jnp.float16 and bool(jnp.all(got == want))


def test_the_analogues_refuse_a_batch_their_blocks_do_not_divide():
    with pytest.raises(ValueError, match="n=1000"):
        harness.rng_kernel(1000, partitionable=True)
    with pytest.raises(ValueError, match="n=1000"):
        harness.mean_kernel(1000, "float16")
    with pytest.raises(ValueError, match="out_dtype"):
        harness.harness_work(4096, target="sm_90", out_dtype="int8", partitionable=True)


def _pred(python: dict[int, list[float]], fori: dict[int, list[float]]) -> pd.DataFrame:
    rows = []
    for variant, values in (("python", python), ("fori u=1", fori)):
        for T, per_setting in values.items():
            for s, ms in enumerate(per_setting):
                rows.append(dict(variant=variant, T=T, setting=s, setting_label=f"s{s}", ms_per_call=ms))
    return pd.DataFrame(rows)


def test_the_goals_say_where_in_the_band_they_are_met():
    his = reporter.measured().set_index("T")
    Ts = [2048, 16384, 32768, 65536]
    python = {T: [his.loc[T, "python"]] * 2 for T in Ts}
    extra = {T: his.loc[T, "fori u=1"] - his.loc[T, "python"] for T in Ts}
    # setting 0 predicts half the loop's cost, setting 1 all of it
    fori = {T: [python[T][0] + 0.5 * extra[T], python[T][0] + extra[T]] for T in Ts}
    goals = reporter.goals(_pred(python, fori))
    assert goals["extra"]["verdict"] == "met only at one end of the range: s1"
    assert goals["absolute"]["verdict"] == "met at the published values"
    far = {T: [v / 3 for v in vs] for T, vs in python.items()}
    assert reporter.goals(_pred(far, fori))["absolute"]["verdict"] == "missed across the whole range"


def test_settings_refuse_a_T_outside_his_table():
    with pytest.raises(ValueError, match=r"reporter_Ts\[...\]"):
        TimeModelSettings(reporter_Ts=(1000,))
    assert TimeModelSettings.from_parameters({"quick": True}).reporter_Ts == (2048, 16384)
