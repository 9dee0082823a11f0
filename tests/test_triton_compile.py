"""Tests for the Triton compile study (issue 5): capture, compile to SASS,
machine-code parsing, the sweep's honesty rules, absence of the triton extra,
and one quick run of notebook 04. Tests that compile need the optional triton
extra and skip, saying so, without it."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest
from conftest import assert_clean_source, run_notebook

from jaxperf import compile_study as cs
from jaxperf import pallas_kernels as pk
from jaxperf import triton_compile as tc

TRITON = tc.status()
needs_triton = pytest.mark.skipif(not TRITON.available, reason=TRITON.reason or "triton unavailable")
SMALL = dict(T=256, D=64, batch=8, dtype="float16", block_rows=64, interpret=False, lowering="triton")


def _seed(loop_form: str, unroll: int = 1, **overrides):
    return pk.build("seed", loop_form, unroll, **{**SMALL, **overrides})


# --- targets and parameters -------------------------------------------------


@pytest.mark.parametrize("bad", ["sm_75", "sm90", 90, "", None])
def test_bad_target_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"target=.*not allowed.*'sm_90', 'sm_86', 'sm_80'"):
        tc.check_target(bad)
    with pytest.raises(ValueError, match="target="):
        tc.compile_ttir("module {}", target=bad)
    fn, args = _seed("fori")
    with pytest.raises(ValueError, match="target="):
        tc.capture(fn, args, target=bad)


BASE_PARAMS = dict(
    backend="cpu",
    quick=False,
    output_root="",
    host_devices=8,
    target="sm_90",
    kernels=["seed", "attention"],
    loop_forms=list(cs.LOOP_FORMS),
    sizes=list(cs.SEED_SIZES),
    unrolls=[1, 2, 4, 8, 16],
    attention_sizes=[256, 8192, 65536],
    attention_unrolls=[1, 2, 4, 8],
    repeats=3,
    repeat_below_s=0.5,
    max_compile_s=30.0,
    quick_sizes=[256, 512],
    quick_attention_sizes=[256],
    quick_unrolls=[1, 2],
)


@pytest.mark.parametrize(
    "name, value",
    [
        ("target", "sm_70"),
        ("kernels", "seed"),
        ("kernels", ["flash"]),
        ("loop_forms", ["while"]),
        ("sizes", [100]),
        ("sizes", []),
        ("sizes", 256),
        ("attention_sizes", [64, 96]),
        ("unrolls", [0]),
        ("attention_unrolls", []),
        ("repeats", 0),
        ("repeats", 9),
        ("max_compile_s", 0),
        ("max_compile_s", True),
        ("repeat_below_s", -1.0),
        ("quick", "yes"),
        ("backend", "cuda"),
    ],
)
def test_settings_name_the_bad_parameter(name, value):
    with pytest.raises(ValueError, match=rf"{name}(\[\.\.\.\])?="):
        cs.settings({**BASE_PARAMS, name: value})


def test_settings_plan():
    full = cs.settings(BASE_PARAMS)
    # python once, fori/pl_loop/hand_unrolled x each unroll; seed: 5 unrolls x 6 T, attention: 4 x 3 T
    assert len(full["variants"]) == (1 + 3 * 5) + (1 + 3 * 4)
    assert full["points"] == (1 + 3 * 5) * 6 + (1 + 3 * 4) * 3
    assert full["sizes"] == {"seed": list(cs.SEED_SIZES), "attention": [256, 8192, 65536]}
    quick = cs.settings({**BASE_PARAMS, "quick": True, "repeats": 3})
    assert quick["sizes"] == {"seed": [256, 512], "attention": [256]} and quick["repeats"] == 1
    assert {v.unroll for v in quick["variants"]} == {1, 2}
    only_seed = cs.settings({**BASE_PARAMS, "kernels": ["seed"]})
    assert list(only_seed["sizes"]) == ["seed"] and {v.kernel for v in only_seed["variants"]} == {"seed"}


# --- absence of the extra ---------------------------------------------------


def test_absent_triton_is_reported_not_crashed(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton -> ImportError
    st = tc.status()
    assert not st.available
    assert st.reason.startswith(tc.NOT_INSTALLED)
    with pytest.raises(tc.TritonUnavailableError, match="triton extra not installed"):
        tc.require()
    with pytest.raises(tc.TritonUnavailableError, match="triton extra not installed"):
        tc.compile_ttir("module {}")
    with pytest.raises(tc.TritonUnavailableError):
        cs.sweep(cs.variants(["seed"], ["fori"], [1]), [256])
    summary, markdown = cs.not_measured_summary(st)
    assert summary["measured"] is False and "triton extra not installed" in summary["reason"]
    assert "not measured: triton extra not installed" in markdown
    assert "compiled for sm_90 on a CPU, not executed" in markdown
    json.dumps(summary)
    # capture needs only JAX: the Triton module is still there to be read
    fn, args = _seed("fori")
    assert "scf.for" in tc.capture(fn, args).ttir


# --- capture ----------------------------------------------------------------


@pytest.mark.parametrize("loop_form, unroll", [(f, 1) for f in pk.LOOP_FORMS] + [("hand_unrolled", 2)])
def test_capture_gives_a_triton_module_for_each_loop_form(loop_form, unroll):
    fn, args = _seed(loop_form, unroll)
    captured = tc.capture(fn, args)
    assert "tt.func" in captured.ttir and "tt.load" in captured.ttir
    assert captured.grid == (8, 1, 1)
    assert captured.num_warps >= 1 and captured.num_stages >= 1
    has_loop = "scf.for" in captured.ttir
    assert has_loop == (loop_form != "python")


@pytest.mark.parametrize("loop_form", ["fori", "pl_loop"])
def test_unroll_above_one_does_not_lower_on_triton(loop_form):
    fn, args = _seed(loop_form, 2)
    with pytest.raises(tc.DoesNotLower) as info:
        tc.capture(fn, args)
    assert isinstance(info.value, NotImplementedError)
    assert "_scan_lowering_rule" in info.value.where


def test_capture_rejects_a_function_without_pallas():
    import jax
    import jax.numpy as jnp

    with pytest.raises(ValueError, match="expected exactly one Triton pallas_call"):
        tc.capture(lambda x: x + 1, [jax.ShapeDtypeStruct((4,), jnp.float32)])


# --- reading machine code (no triton needed) ----------------------------------

SASS = """
	code for sm_90a
		Function : kernel
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
        /*0010*/                   STL [R1], R2 ;                          /* 0x0 */
        /*0020*/                   IADD3 R2, R2, 0x1, RZ ;                 /* 0x0 */
        /*0030*/               @P0 BRA 0x10 ;                              /* 0x0 */
        /*0040*/              @!P1 BRA 0x60 ;                              /* 0x0 */
        /*0050*/                   LDL R3, [R1] ;                          /* 0x0 */
        /*0060*/                   EXIT ;                                  /* 0x0 */
        /*0070*/                   BRA 0x70;                               /* 0x0 */
        /*0080*/                   NOP;                                    /* 0x0 */
"""


def test_sass_stats_counts_instructions_spills_and_backward_branches():
    log = "ptxas info    : Used 40 registers, used 1 barriers\n   8 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads"
    stats = tc.sass_stats(SASS, log)
    assert stats.instructions == 8  # NOP excluded, the trailing BRA-to-self counted as code
    assert stats.backward_branches == 1 and stats.loop_present
    assert stats.local_memory_instructions == 2
    assert (stats.registers, stats.spill_stores_bytes, stats.spill_loads_bytes) == (40, 8, 4)
    straight = tc.sass_stats(SASS.replace("@P0 BRA 0x10", "@P0 BRA 0x60"), "Used 12 registers")
    assert not straight.loop_present and straight.spill_stores_bytes == 0 and straight.registers == 12


def test_ptx_stats_counts_statements_not_directives():
    ptx = """.version 9.4
.target sm_90a
.visible .entry kernel(
	.param .u64 kernel_param_0
)
.reqntid 128
{
	.reg .b32 	%r<5>;
	mov.u32 	%r1, %tid.x;   // a comment;
$L__BB0_1:
	@%p1 bra 	$L__BB0_1;
	ret;
}"""
    assert tc.ptx_stats(ptx)["instructions"] == 3


# --- compiling (needs the triton extra) ---------------------------------------


@needs_triton
def test_small_compile_yields_sass():
    fn, args = _seed("fori")
    captured = tc.capture(fn, args)
    result = tc.compile_ttir(captured.ttir, num_warps=captured.num_warps, num_stages=captured.num_stages)
    assert tuple(result.stage_ms) == tc.STAGES and all(ms > 0 for ms in result.stage_ms.values())
    assert result.cubin[:4] == b"\x7fELF"
    assert result.options["arch"] == "sm90"
    stats = result.sass_stats
    assert stats.instructions > 0 and stats.registers > 0
    assert stats.loop_present  # fori_loop over 4 steps of a [T, D] input keeps its loop
    assert result.ptx_instructions > 0 and ".target sm_90a" in result.ptx


@needs_triton
def test_compile_for_sm80_uses_the_plain_ptxas():
    fn, args = _seed("python")
    result = tc.compile_ttir(tc.capture(fn, args, target="sm_80").ttir, target="sm_80")
    assert ".target sm_80" in result.ptx and "sm_80" in result.ptxas_log
    assert result.sass_stats.instructions > 0 and not result.sass_stats.loop_present


@needs_triton
def test_sweep_records_what_does_not_lower_and_what_is_over_budget():
    plan = cs.variants(["seed"], ["python", "fori"], [1, 2])
    df = cs.sweep(
        plan, [256, 512], max_compile_s=1e-3, repeats=2, repeat_below_s=1e9, shape=cs.Shape(batch=8)
    )
    med = cs.point_medians(df).set_index(["variant", "T"])
    assert med.loc[("fori u=1", 512), "compiles"] == 2  # cheap points are compiled `repeats` times
    assert (df[df.status == cs.STATUS_NO_LOWER].repeat == 0).all()  # recorded once, not retried
    assert med.loc[("fori u=1", 256), "status"] == med.loc[("fori u=1", 512), "status"] == cs.STATUS_OK
    assert med.loc[("fori u=2", 256), "status"] == cs.STATUS_NO_LOWER
    assert med.loc[("python", 256), "status"] == cs.STATUS_OK
    assert (
        med.loc[("python", 512), "status"] == cs.STATUS_OVER_BUDGET
    )  # the budget applies to the Python loop only
    ok = df[df.status == cs.STATUS_OK]
    assert (ok.sass_instructions > 0).all()
    summary = cs.summary_dict(df, target="sm_90", repeats=1, max_compile_s=1e-3, status=TRITON)
    markdown = cs.summary_markdown(df, summary)
    json.dumps(summary, default=str)
    assert "compiled for sm_90 on a CPU, not executed" in markdown and "not executed" in markdown
    assert "does not lower" in markdown.lower() and "over budget" in markdown
    assert summary["does_not_lower"][0]["variant"] == "fori u=2"
    table = cs.seed_format_table(df)
    assert list(table["T"]) == [256, 512] and table.iloc[0, 4] == "177 / 193 ms"
    assert list(cs.stages_by_T(df)["T"]) == [256]
    for plot in (
        cs.plot_compile_vs_T,
        cs.plot_sass_vs_T,
        cs.plot_stage_breakdown,
        cs.plot_python_stages_vs_T,
    ):
        fig, data = plot(df)
        assert isinstance(data, pd.DataFrame) and not data.empty


# --- the notebook ---------------------------------------------------------------


def test_notebook_source_is_clean():
    assert_clean_source("04_triton_compile")


@pytest.mark.notebook
def test_notebook_quick_run(tmp_path):
    run_notebook(
        "04_triton_compile",
        tmp_path,
        quick=True,
        kernels=["seed"],
        loop_forms=["python", "fori", "hand_unrolled"],
        quick_sizes=[256],
        quick_unrolls=[1, 2],
    )
    out = tmp_path / "results" / "cpu" / "triton_compile"
    summary = json.loads((out / "summary.json").read_text())
    markdown = (out / "summary.md").read_text()
    assert "compiled for sm_90 on a CPU, not executed" in markdown
    figures = sorted(p.name for p in (tmp_path / "figures" / "cpu").glob("triton_compile_*.png"))
    if TRITON.available:
        assert summary["measured"] is True
        assert summary["seed_format_table"]["seed"][0]["T"] == 256
        assert {r["variant"] for r in summary["does_not_lower"]} == {"fori u=2"}
        assert figures == [
            "triton_compile_compile_ms_vs_T.png",
            "triton_compile_python_stages_vs_T.png",
            "triton_compile_sass_instructions_vs_T.png",
            "triton_compile_stages_at_largest_T.png",
        ]
        records = pd.read_csv(out / "compile_records.csv")
        assert (records[records.status == "ok"].sass_instructions > 0).all()
    else:
        assert summary["measured"] is False and figures == []


def test_verdict_fits_exponents_and_ignores_remainder_only_points():
    rows = []
    for T in (256, 1024, 4096, 16384):
        steps = T // 64
        rows.append(
            dict(
                kernel="seed",
                loop_form="python",
                unroll=1,
                variant="python",
                T=T,
                steps=steps,
                status="ok",
                error="",
                compile_ms=0.05 * T**1.3,
            )
        )
        # a single noisy compile (2.5x) does not make a flat loop "grow"
        rows.append(
            dict(
                kernel="seed",
                loop_form="fori",
                unroll=1,
                variant="fori u=1",
                T=T,
                steps=steps,
                status="ok",
                error="",
                compile_ms=500.0 if T == 1024 else 200.0,
            )
        )
        # below trip == k the hand-unrolled loop is only remainder copies: cheap, and not the baseline
        rows.append(
            dict(
                kernel="seed",
                loop_form="hand_unrolled",
                unroll=16,
                variant="hand_unrolled u=16",
                T=T,
                steps=steps,
                status="ok",
                error="",
                compile_ms=100.0 if steps < 16 else 900.0,
            )
        )
    df = pd.DataFrame(rows)
    for column in [
        "triton_ms",
        *cs.STAGE_COLUMNS,
        "triton_lowering_ms",
        "ttir_lines",
        "ptx_instructions",
        "sass_instructions",
        "registers",
        "spill_stores_bytes",
        "spill_loads_bytes",
        "local_memory_instructions",
        "backward_branches",
        "loop_present",
    ]:
        df[column] = 0
    g = cs.growth(df).set_index("variant")
    assert g.loc["python", "exponent"] == pytest.approx(1.3)
    assert g.loc["hand_unrolled u=16", "T_ref"] == 1024 and g.loc["hand_unrolled u=16", "ratio"] == 1.0
    v = cs.verdict(df)
    assert v["reproduced"] is True and v["python_T_range"] == [256, 16384]
    assert abs(v["loops_exponents"]["fori u=1"]) < 0.25
    one_T = df[(df.variant != "python") | (df["T"] == 256)]
    assert cs.verdict(one_T)["reproduced"] is None  # the Python loop at one T says nothing about growth
    assert cs.seed_exponent() == pytest.approx(0.5, abs=0.02) and abs(cs.seed_exponent("fori")) < 0.01
