"""The Triton compile study: capture, compile to SASS, the sweep's honesty rules, the report
and figures, absence of the triton extra, and one quick run of notebook 04. Tests that compile
need the optional triton extra and skip, saying so, without it."""

from __future__ import annotations

import json
import sys

import pandas as pd
import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf import markdown
from jaxperf.compilers import triton as tc

# The function, from its module: the package also has a submodule named `capture`, which
# shadows a lazily exported function of that name once anything has imported it.
from jaxperf.compilers.triton.capture import capture
from jaxperf.jax20909 import kernels
from jaxperf.triton import analysis, figures, report, sections, sweep
from jaxperf.triton.settings import TritonSettings

TRITON = tc.status()
needs_triton = pytest.mark.skipif(not TRITON.available, reason=TRITON.reason or "triton unavailable")
SMALL = dict(T=256, D=64, batch=8, dtype="float16", interpret=False, lowering="triton", carry_dtype="input")


def _seed(loop_form: str, unroll: int = 1, **overrides):
    return kernels.build("seed", loop_form, unroll, **{**SMALL, **overrides})


@pytest.mark.parametrize("bad", ["sm_75", "sm90", 90, "", None])
def test_bad_target_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"target=.*not allowed.*'sm_90', 'sm_86', 'sm_80'"):
        tc.check_target(bad)
    with pytest.raises(ValueError, match="target="):
        tc.compile_ttir("module {}", target=bad)
    fn, args = _seed("fori")
    with pytest.raises(ValueError, match="target="):
        capture(fn, args, target=bad)


def test_absent_triton_is_reported_not_crashed(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton -> ImportError
    st = tc.status()
    assert not st.available and st.reason.startswith(tc.NOT_INSTALLED)
    with pytest.raises(tc.TritonUnavailableError, match="triton extra not installed"):
        tc.require()
    with pytest.raises(tc.TritonUnavailableError, match="triton extra not installed"):
        tc.compile_ttir("module {}")
    with pytest.raises(tc.TritonUnavailableError):
        sweep.sweep([sweep.Variant("seed", "fori", 1)], {"seed": [256]})
    summary, markdown = report.not_measured_summary(st, "sm_90")
    assert summary["measured"] is False and "triton extra not installed" in summary["reason"]
    assert "compiled for sm_90 on a CPU, not executed" in markdown
    json.dumps(summary)
    # capture needs only JAX: the Triton module is still there to be read
    fn, args = _seed("fori")
    assert "scf.for" in capture(fn, args).ttir


@pytest.mark.parametrize(
    "loop_form, unroll",
    [("python", 1), ("fori", 1), ("pl_loop", 1), ("hand_unrolled", 2), ("hoisted", 1), ("scalar_carry", 1)],
)
def test_capture_gives_the_reporters_grid_for_each_loop_form(loop_form, unroll):
    captured = capture(*_seed(loop_form, unroll))
    assert "tt.func" in captured.ttir and "tt.load" in captured.ttir
    assert captured.grid == (256 // 128, 8, 1) and captured.programs == 16  # T/128 row blocks x batch
    assert ("scf.for" in captured.ttir) == (loop_form != "python")


@pytest.mark.parametrize("loop_form", ["fori", "pl_loop"])
def test_unroll_above_one_does_not_lower_on_triton(loop_form):
    with pytest.raises(tc.DoesNotLower) as info:
        capture(*_seed(loop_form, 2))
    assert isinstance(info.value, NotImplementedError) and "_scan_lowering_rule" in info.value.where


def test_capture_rejects_a_function_without_pallas():
    import jax
    import jax.numpy as jnp

    with pytest.raises(ValueError, match="expected exactly one Triton pallas_call"):
        capture(lambda x: x + 1, [jax.ShapeDtypeStruct((4,), jnp.float32)])


@needs_triton
def test_compile_keeps_every_stage_and_yields_sass():
    captured = capture(*_seed("fori"))
    result = tc.compile_ttir(captured.ttir, num_warps=captured.num_warps, num_stages=captured.num_stages)
    assert tuple(result.stage_ms) == tc.STAGES and all(ms > 0 for ms in result.stage_ms.values())
    assert set(result.texts) == {"ttir", "ttgir", "llir", "ptx"} and "ttg." in result.texts["ttgir"]
    assert result.cubin[:4] == b"\x7fELF" and result.options["arch"] == "sm90"
    assert result.sass_stats.instructions > 0 and result.sass_stats.registers > 0
    assert result.ptx_instructions > 0 and ".target sm_90a" in result.ptx


@needs_triton
@pytest.mark.parametrize("carry", ["input", "float32"])
def test_the_scalar_carry_compiles_for_sm_90_with_either_carry(carry):
    shape = sweep.Shape(batch=8, seed_carry_dtype=carry)
    rows = sweep.sweep([sweep.Variant("seed", "scalar_carry", 1)], {"seed": [256, 1024]}, shape=shape)
    assert list(rows.status) == [sweep.STATUS_OK, sweep.STATUS_OK], list(rows.error)
    assert (rows.sass_instructions > 0).all() and rows.sass_dynamic_per_call.notna().all()


@needs_triton
def test_compile_for_the_reporters_generation():
    result = tc.compile_ttir(capture(*_seed("python"), target="sm_86").ttir, target="sm_86")
    assert ".target sm_86" in result.ptx and result.sass_stats.instructions > 0


@needs_triton
def test_sweep_records_what_does_not_lower_and_what_is_over_budget():
    plan = sweep.plan(["seed"], ["python", "fori"], {"seed": [1, 2]})
    shape = sweep.Shape(batch=8)
    df = sweep.sweep(
        plan, {"seed": [256, 512]}, max_compile_s=1e-3, repeats=2, repeat_below_s=1e9, shape=shape
    )
    med = analysis.point_medians(df).set_index(["variant", "T"])
    assert med.loc[("fori u=1", 512), "compiles"] == 2  # cheap points are compiled `repeats` times
    assert (df[df.status == sweep.STATUS_NO_LOWER].repeat == 0).all()  # recorded once, not retried
    assert med.loc[("fori u=2", 256), "status"] == sweep.STATUS_NO_LOWER
    assert med.loc[("python", 256), "status"] == sweep.STATUS_OK
    assert med.loc[("python", 512), "status"] == sweep.STATUS_OVER_BUDGET  # the growth rule: Python loop only
    ok = df[df.status == sweep.STATUS_OK]
    assert (ok.sass_instructions > 0).all() and ok.sass_dynamic_per_call.notna().all()
    reused = sweep.sweep_targets(plan, {"seed": [256, 512]}, ["sm_90"], reuse=df, budget_s=1e-6, shape=shape)
    assert set(zip(reused.variant, reused["T"], reused.status)) >= {
        ("fori u=1", 512, "ok"),
        ("python", 256, "ok"),
    }
    assert len(reused[reused.status == "ok"]) == len(
        med[med.status == "ok"]
    )  # one row per point, none recompiled
    spent = sweep.sweep(plan, {"seed": [256, 512]}, budget_s=1e-6, shape=shape)
    assert (spent[spent["T"] == 512].status == sweep.STATUS_OVER_BUDGET).all()  # the whole-sweep budget
    assert "budget_s=" in spent[spent["T"] == 512].error.iloc[0]

    settings = TritonSettings(
        kernels=("seed",), sizes={"seed": (256, 512)}, unrolls={"seed": (1, 2)}, max_compile_s=1e-3
    )
    summary = report.summary_dict(df, settings, TRITON, estimates=df)
    text = report.summary_markdown(df, summary)
    json.dumps(summary, default=str)
    assert (
        "compiled for sm_90 on a CPU, not executed" in text
        and "static estimate from SASS compiled on a CPU" in text
    )
    assert "does not lower" in text.lower() and "over budget" in text
    assert summary["does_not_lower"][0]["variant"] == "fori u=2"
    table = report.seed_format_table(df)
    assert list(table["T"]) == [256, 512] and table.iloc[0, -1] == "177 / 193 ms"
    for plot in (
        figures.compile_vs_T,
        figures.compile_unrolls_vs_T,
        figures.sass_vs_T,
        figures.sass_unrolls_vs_T,
        figures.stage_breakdown,
        figures.python_stages_vs_T,
    ):
        fig, data = plot(df)
        assert isinstance(data, pd.DataFrame) and not data.empty
        assert getattr(fig, "_jaxperf_drawn_by", "").startswith(
            ("jaxperf.triton.figures.", "jaxperf.triton.stage_figures.")
        )


def test_a_sweep_discards_one_warm_up_compile_before_it_measures(monkeypatch):
    # The Python loop's T=256 compile read 85, 306 and 555 ms in three runs: it was each run's first
    # compile (Triton's, LLVM's and ptxas' start-up in it) and, over repeat_below_s, done once.
    done = []

    def fake_one(v, T, target, shape, build, row, secs):
        done.append((v.name, T, bool(row)))
        secs.append(5.0 if len(done) == 1 else 0.3)  # the first compile of a process is the slow one
        return {**row, "status": sweep.STATUS_OK, "error": "", "compile_ms": secs[-1] * 1e3}

    monkeypatch.setattr(sweep, "_one", fake_one)
    monkeypatch.setattr(sweep, "require", lambda: None)
    plan = sweep.plan(["seed"], ["python", "fori"], {"seed": [1]})
    df = sweep.sweep(plan, {"seed": [256]}, repeats=3, repeat_below_s=2.0)
    assert done[0] == ("python", 256, False)  # the warm-up: no row recorded
    assert (df.compile_ms < 1000).all() and len(df) == 6  # every point measured 3 times, none the warm-up
    done.clear()
    cold = sweep.sweep(plan, {"seed": [256]}, repeats=3, repeat_below_s=2.0, warm_up=False)
    assert (cold[cold.variant == "python"].compile_ms == 5000).all()  # without it: one slow compile, kept


def test_verdict_compares_growth_with_his_over_the_same_T_and_says_not_reached():
    rows = []
    for T in (256, 1024, 2048, 8192):
        base = dict(kernel="seed", T=T, steps=T // 64, status="ok", error="")
        # his Python loop grows 2.67x from 256 to 8192: ours 0.3*T**0.3 grows 2.83x
        rows.append(
            {**base, "loop_form": "python", "unroll": 1, "variant": "python", "compile_ms": 30 * T**0.3}
        )
        # a single noisy compile (2.5x) between the ends does not make a flat loop "grow"
        fori = 500.0 if T == 1024 else 200.0
        rows.append({**base, "loop_form": "fori", "unroll": 1, "variant": "fori u=1", "compile_ms": fori})
        # below trip == k the hand-unrolled loop is only remainder copies: cheap, and not the baseline
        cost = 100.0 if T // 64 < 16 else 900.0
        rows.append(
            {
                **base,
                "loop_form": "hand_unrolled",
                "unroll": 16,
                "variant": "hand_unrolled u=16",
                "compile_ms": cost,
            }
        )
    df = pd.DataFrame(rows)
    for column in [c for c in analysis.TIMED_COLUMNS + analysis.CODE_COLUMNS if c != "compile_ms"]:
        df[column] = 0
    g = analysis.growth(df).set_index("variant")
    assert g.loc["hand_unrolled u=16", "T_ref"] == 1024 and g.loc["hand_unrolled u=16", "ratio"] == 1.0
    v = analysis.verdict(df, planned=[256, 1024, 2048, 8192, 16384])
    fact = v["matched"]
    assert fact["T_range"] == [256, 8192]  # 1024 is not in his table: not a range end
    assert fact["reporter_python_growth"] == pytest.approx(473 / 177)
    assert v["reproduced"] is True and fact["not_reached"] == [16384]
    assert "his over the same range: 2.67×" in v["sentence"] and "not reached: T=16384" in v["sentence"]
    slow = df.assign(compile_ms=[c if r != "python" else 100.0 for c, r in zip(df.compile_ms, df.variant)])
    assert analysis.verdict(slow)["reproduced"] is False  # flat where his grew 2.67x
    one_T = df[(df.variant != "python") | (df["T"] == 256)]
    assert analysis.verdict(one_T)["reproduced"] is None  # the Python loop at one T says nothing about growth
    assert analysis.verdict(one_T)["matched"]["status"] == "not reached"


def test_the_report_shows_the_scalar_carry_apart_from_the_looping_forms():
    rows = []
    for T in (256, 4096, 65536):
        base = dict(kernel="seed", T=T, steps=T // 64, status="ok", error="", target="sm_90", repeat=0)
        for form, compile_ms, ptx, sass, loop in (
            ("python", 0.5 * T, 100 + T // 64, 100 + T // 32, False),
            ("fori", 120.0, 300, 500, True),
            ("scalar_carry", 10 * T**0.35, 300, 200 + T // 16, False),  # ptxas unrolls the scalar loop
        ):
            variant = "python" if form == "python" else f"{form} u=1"
            code = dict(ptx_instructions=ptx, sass_instructions=sass, loop_present=loop)
            rows.append(
                {**base, "loop_form": form, "unroll": 1, "variant": variant, "compile_ms": compile_ms, **code}
            )
    df = pd.DataFrame(rows)
    for column in analysis.TIMED_COLUMNS + analysis.CODE_COLUMNS:
        df[column] = df.get(column, 0)
    v = analysis.verdict(df)
    assert v["reproduced"] is True  # a growing scalar-carry compile is not a "looping form" that grows
    assert "scalar_carry u=1" not in v["loops_exponents"]
    assert v["fix"]["variant"] == "scalar_carry u=1" and v["fix"]["exponent"] == pytest.approx(0.35)
    assert v["fix"]["code_T"] == [4096, 65536] and v["fix"]["ptx_instructions"] == [300, 300]
    assert v["fix"]["sass_instructions"] == [456, 4296] and not v["fix"]["loop_in_sass_at_T_max"]
    table = report.seed_format_table(df)
    assert list(table.iloc[:, 3]) == [
        "70 ms / not executed",
        "184 ms / not executed",
        "485 ms / not executed",
    ]
    assert table.columns[3].startswith("scalar carry compile / exec")
    settings = TritonSettings(kernels=("seed",), sizes={"seed": (256, 4096, 65536)}, unrolls={"seed": (1,)})
    text = report.summary_markdown(df, report.summary_dict(df, settings, TRITON))
    assert "The scalar carry (`scalar_carry u=1`" in text and "ptxas unrolls the one-scalar loop" in text
    assert "| 65536 | 32768 ms / not executed | 120 ms / not executed | 485 ms / not executed |" in text
    answer = text[: text.index("<details>")]
    assert "**The reporter's compile column: reproduced**" in answer and "**The fix on Triton:**" in answer
    assert answer.count("\n- ") <= 5 and markdown.visible_lines(text) <= markdown.MAX_VISIBLE_LINES


def test_notebook_source_is_clean():
    assert_clean_source("04_triton_compile")


@pytest.mark.notebook
def test_notebook_quick_run(tmp_path):
    run_notebook(
        "04_triton_compile",
        tmp_path,
        quick=True,
        kernels=["seed"],
        loop_forms=["python", "fori", "hand_unrolled", "hoisted", "scalar_carry"],
    )
    out = tmp_path / "results" / "cpu" / "triton_compile"
    summary = json.loads((out / "summary.json").read_text())
    markdown = (out / "summary.md").read_text()
    assert "compiled for sm_90 on a CPU, not executed" in markdown and "Smoke run" in markdown
    figures_made = sorted(p.name for p in (tmp_path / "figures" / "cpu").glob("triton_compile_*.png"))
    if not TRITON.available:
        assert summary["measured"] is False and figures_made == []
        return
    assert summary["measured"] is True and summary["quick"] is True
    assert summary["seed_format_table"]["seed"][0]["T"] == 256
    assert {r["variant"] for r in summary["does_not_lower"]} == {"fori u=2"}
    assert "reduction runs once in every form" in summary["mechanism"]["line"]
    assert {r["target"] for r in summary["estimate"]["ratios"]} == {"sm_86", "sm_90"}
    # the XLA:CPU fix is compiled, estimated, counted and shown beside the reporter's loops
    assert all("scalar_carry u=1 / python" in r for r in summary["estimate"]["ratios"])
    assert {r["variant"] for r in summary["estimate"]["closest_to_python"]} >= {
        "scalar_carry u=1",
        "fori u=1",
    }
    fix_steps = [r for r in summary["mechanism"]["per_step"] if r["variant"] == "scalar_carry u=1"]
    assert len(fix_steps) == 1 and fix_steps[0]["per_step_total"] > 0
    assert any(k.startswith("scalar carry compile") for k in summary["seed_format_table"]["seed"][0])
    assert summary["verdict"]["seed"]["fix"]["variant"] == "scalar_carry u=1"
    assert "The scalar carry (`scalar_carry u=1`" in markdown
    assert figures_made == [
        "triton_compile_compile_ms_vs_T.png",
        "triton_compile_compile_ms_vs_T_unrolls.png",
        "triton_compile_estimate_instructions_vs_T.png",
        "triton_compile_estimate_vs_T.png",
        "triton_compile_python_stages_vs_T.png",
        "triton_compile_sass_instructions_vs_T.png",
        "triton_compile_sass_instructions_vs_T_unrolls.png",
        "triton_compile_stages_at_largest_T.png",
    ]


def test_points_without_an_estimate_are_listed_with_their_reason():
    rows = pd.DataFrame(
        [
            dict(
                target="sm_86", variant="python", T=8192, status="ok", error=None, sass_dynamic_per_call=5.0
            ),
            dict(
                target="sm_86",
                variant="fori u=1",
                T=8192,
                status="failed",
                error="ptxas died",
                sass_dynamic_per_call=None,
            ),
            *[
                dict(
                    target="sm_86",
                    variant="scalar_carry u=1",
                    T=8192,
                    status="ok",
                    error=None,
                    sass_dynamic_per_call=None,
                    sass_trips_how="counter R16 not read (start None, bound 128)",
                )
            ]
            * 2,  # two repeats of one point: listed once
        ]
    )
    listed = {r["variant"]: r for r in report._not_estimated(rows)}
    assert set(listed) == {"fori u=1", "scalar_carry u=1"}
    assert listed["fori u=1"]["reason"] == "ptxas died"
    assert listed["scalar_carry u=1"]["status"] == "loop trip count not read"
    assert "counter R16 not read" in listed["scalar_carry u=1"]["reason"]


def test_closest_to_python_ranks_by_distance_and_keeps_forms_not_estimated(monkeypatch):
    from jaxperf.compilers.triton import estimate

    fake = pd.DataFrame(
        [
            {"target": "sm_86", "T": 2048, "python per call": 1.0, "a / python": 9.0, "b / python": 9.0},
            {"target": "sm_86", "T": 65536, "python per call": 1.0, "a / python": 0.5, "b / python": None},
        ]
    ).assign(**{"c / python": [1.0, 1.5], "reporter measured fori / python": [1.0, 2.4]})
    monkeypatch.setattr(estimate, "ratios", lambda rows, kernel="seed": fake)
    closest = estimate.closest_to_python(pd.DataFrame())
    assert list(closest.variant) == ["c", "a", "b"]  # 1.5x is nearer than 0.5x; b not estimated, last
    assert set(closest["T"]) == {65536} and closest.ratio.isna().tolist() == [False, False, True]
    line = sections.closest_lines(report._records(closest))[0]
    assert "c 1.50x, a 0.50x, b not estimated" in line
