"""The loops report says what happened: a compiler's resource limit apart from a crash, a class that
shrinks between two T as a decrease (never a negative count per step), "not present here" said once."""

from __future__ import annotations

import pandas as pd

from jaxperf.loops import engine, report_kernel
from jaxperf.loops import targets as tg


def _results(points: pd.DataFrame) -> engine.Results:
    empty = pd.DataFrame(columns=["kernel", "form", "T", "against", "same_result", "difference", "error"])
    return engine.Results("k", empty, points, pd.DataFrame(columns=["form", "T", "ms_per_call"]), {})


def test_a_resource_limit_is_not_a_crash():
    triton = (
        "OutOfResources: out of resource: shared memory, Required: 524288, Hardware limit: 232448. Reducing"
    )
    got = tg.failure("triton", triton)
    assert got["status"] == "exceeds triton's shared memory limit (needs 524288, limit 232448)"
    tpu = "Mosaic failed: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem. Used 40.50M of 16.00M vmem."
    assert (
        tg.failure("mosaic_tpu", tpu)["status"]
        == "exceeds mosaic_tpu's vmem limit (needs 40.50M, limit 16.00M)"
    )
    assert tg.failure("triton", RuntimeError("ptxas crashed"))["status"] == tg.FAILED
    assert tg.failure("triton", NotImplementedError("scan"))["status"] == tg.NO_LOWER
    row = dict(kernel="k", target="triton sm_90", unit="u", form="fori", T=256, compile_ms=None) | got
    table = engine.lowering_table(pd.DataFrame([row]))
    assert table.loc[0, "triton"] == got["status"]  # its numbers, without the compiler's long text
    note = engine.per_step(pd.DataFrame([row, row | dict(T=512)])).note[0]
    assert "exceeds triton's shared memory limit" in note


def test_not_present_is_said_once_under_the_lowers_table():
    why = "lowers as a triton kernel, not mosaic_gpu (a pallas_call ...)"
    rows = [
        dict(kernel="k", target=t, unit="u", form=f, T=T, status=s, error=e, compile_ms=None)
        for f in ("python", "fori")
        for T in (128, 256)
        for t, s, e in [("triton sm_90", tg.OK, ""), ("mosaic_gpu sm_90a", tg.NOT_PRESENT, why)]
    ]
    text = "\n".join(report_kernel.sections(_results(pd.DataFrame(rows))))
    lines = text.splitlines()
    assert text.count(why) == 1
    rows_ = [line for line in lines if line.startswith("| fori") or line.startswith("| python")]
    assert len(rows_) == 4 and all(line.endswith("| lowers | not present here |") for line in rows_)
    at = lines.index(next(line for line in lines if why in line))
    assert lines[at - 1] == "" and lines[at - 2].startswith("| fori | 256")


def test_the_cause_cites_only_a_class_that_grows_per_step():
    from jaxperf.loops import verdict

    unit = "SASS instructions per warp"
    # integer/address falls at the larger T in both forms (the table: "fewer at the larger T"), less in fori
    python = {"memory": 10.0, "integer/address": -5.0, "float ALU": 2.0}
    fori = {"memory": 10.0, "integer/address": -1.0, "float ALU": 3.0}
    got = verdict.cause(python, fori, unit=unit)
    assert got.startswith(f"fori_loop issues 5.0 more {unit} per step, partly float ALU +1.0")
    assert "integer/address" not in got
    got = verdict.cause(python, fori | {"float ALU": 2.0}, unit=unit)
    assert got.startswith(f"fori_loop issues 4.0 more {unit} per step; no class explains it")
    assert "integer/address" not in got
    grows = verdict.cause(python, fori | {"integer/address": 1.0}, unit=unit)
    assert grows.startswith(f"fori_loop issues 7.0 more {unit} per step, mostly integer/address +6.0")


def test_a_form_that_triton_refuses_is_not_present_for_mosaic_gpu():
    # a plain pallas_call on CUDA is Triton's: its unrolled fori_loop fails in Triton's lowering,
    # which says nothing of Mosaic GPU (not "does not lower" in the mosaic_gpu column)
    from jaxperf.loops.factory import load

    kernel = load("tests.corpus.kernels.row_sum:make")
    assert tg.lowers(kernel, "fori u=4", 256, "triton")["status"] == tg.NO_LOWER
    asked = tg.lowers(kernel, "fori u=4", 256, "mosaic_gpu")
    assert asked == dict(
        status=tg.NOT_PRESENT, error=f"lowers as a triton kernel, not mosaic_gpu ({tg.WHY['triton']})"
    )
    assert tg.lowers(kernel, "fori u=4", 256, "mosaic_tpu")["status"] == tg.OK


def test_mosaic_gpus_shared_memory_limit_is_a_limit_not_a_crash(monkeypatch):
    # Mosaic GPU's own words (jax/experimental/mosaic/gpu/core.py), as its compile worker records them
    from jaxperf.compilers.mosaic_gpu import compile as mgpu
    from jaxperf.loops.factory import Kernel

    said = "ValueError: Mosaic GPU kernel exceeds available shared memory: smem_bytes=262144 > max_smem_bytes=232448"
    want = "exceeds mosaic_gpu's shared memory limit (needs 262144, limit 232448)"
    assert tg.failure("mosaic_gpu", said)["status"] == want

    def make(form, T, *, interpret=False, compiler=None):
        return (lambda x: x + 1), (pd.DataFrame([[0.0]]).to_numpy(),)

    worker = [dict(status="failed", error=said), dict(status="not reached", error="the worker had run 9 s")]
    monkeypatch.setattr(mgpu, "compile_points", lambda points, *a, **k: worker[: len(points)])
    kernel = Kernel("m:make", make, ("python", "fori"), per_compiler=True)
    got = tg.mosaic_gpu_points(kernel, [("fori", 128), ("fori", 256)], budget_s=10)
    assert [g["status"] for g in got] == [want, tg.NOT_REACHED]
    assert got[0]["error"] == said


def test_the_loop_structure_note_names_every_T_with_why_it_has_no_count():
    # hand_unrolled u=4 of a softmax on triton: 0 loops at T=512, a loop unread at T=1024, 2 loops at T=2048
    row = dict(kernel="k", target="triton sm_90", unit="u", form="hand_unrolled u=4", status=tg.OK, error="")
    rows = [
        row | dict(T=T, compile_ms=1.0, work_per_program=w, steps=T // 64, loops_in_code=n, programs=1)
        for T, w, n in [(512, 2170.0, 0), (1024, None, 2), (2048, 8695.0, 2)]
    ]
    note = engine.per_step(pd.DataFrame(rows)).note[0]
    assert note.startswith("loop structure differs at every pair of T with a count")
    assert "T=512: counted (0 loops)" in note and "T=2048: counted (2 loops)" in note
    assert "T=1024: no count (a loop whose trip count is not readable)" in note


def test_no_form_is_advised_where_fori_loops_work_was_not_read():
    # a histogram on triton: the Python loop counted, fori_loop's loop trip count not readable
    rows = []
    for target in ("triton sm_90", "mosaic_tpu v5e"):
        for form, works in [
            ("python", (100.0, 200.0)),
            ("fori", (None, None) if "triton" in target else (300.0, 600.0)),
        ]:
            for T, work in zip((128, 256), works, strict=True):
                rows.append(
                    dict(kernel="k", target=target, unit="u", form=form, T=T, status=tg.OK, error="")
                    | dict(compile_ms=1.0, work_per_program=work, steps=T // 8, loops_in_code=0, programs=1)
                )
    tips = report_kernel.advice(_results(pd.DataFrame(rows)))
    assert tips == [
        "- mosaic_tpu v5e: write `python`: 3.00× less work per step than `fori_loop` (`python` 6.2, `fori` 18.8)"
    ]


def narrow_blocks(form, T, *, interpret=False):
    """A matmul whose 64-wide output blocks Pallas' TPU lowering refuses (a ValueError, not NotImplementedError)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def fn(x, y):
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((128, 128), jnp.float32),
            grid=(2, 2),
            in_specs=[pl.BlockSpec((64, T), lambda i, j: (i, 0)), pl.BlockSpec((T, 64), lambda i, j: (0, j))],
            out_specs=pl.BlockSpec((64, 64), lambda i, j: (i, j)),
            interpret=interpret,
        )(x, y)

    return jax.jit(fn), (
        jax.ShapeDtypeStruct((128, T), jnp.float32),
        jax.ShapeDtypeStruct((T, 128), jnp.float32),
    )


def test_a_block_shape_the_tpu_lowering_refuses_does_not_lower_it_is_no_failure_of_ours():
    from jaxperf.compilers.lowering import export_variant
    from jaxperf.compilers.mosaic_tpu import topology
    from jaxperf.loops.factory import load

    try:
        export_variant(*narrow_blocks("fori", 256), "mosaic_tpu")
    except ValueError as err:
        got = tg.failure("mosaic_tpu", err)
    assert got["status"] == tg.NO_LOWER and "The Pallas TPU lowering currently requires" in got["error"]
    if topology.status().available:  # compiled for a v5e, as the loops tool does
        tg.present()
        point = tg.compile_point(load("tests.test_loops_report:narrow_blocks"), "fori", 256, "mosaic_tpu v5e")
        assert point["status"] == tg.NO_LOWER, point


def test_a_point_not_reached_says_a_prediction_past_what_is_left(monkeypatch):
    # the budget's last second: "predicted 1 s, 1 s of the budget left" read as if it fitted
    from jaxperf.loops.factory import load

    class Clock(engine.Progress):
        def left(self):
            return 1.2

    monkeypatch.setattr(engine, "_predicted_s", lambda last, T: 0.0 if last is None else 1.4)
    monkeypatch.setattr(tg, "compile_point", lambda *a: dict(status=tg.OK, error=""))
    here = {t: "" if t == "triton sm_90" else engine.NOT_ASKED for t in tg.TARGETS}
    kernel = load("tests.corpus.kernels.row_sum:make")
    rows = engine.compile_results(kernel, ["fori"], [128, 256], here, Clock(10.0))
    assert list(rows.status) == [tg.OK, tg.NOT_REACHED]
    assert rows.error.iloc[1] == "predicted 1.4 s, 1.2 s of the budget left"
