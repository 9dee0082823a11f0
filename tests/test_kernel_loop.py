"""jaxperf.kernel_loop and the loop study's engine on a reader's kernel: every form computes
what fori_loop computes, a form that does not is neither compiled nor timed, bad input names
the parameter, and the work per step, the verdicts and the advice follow from their numbers."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import jaxperf
from jaxperf.fixes import _kernel_loop as forms
from jaxperf.loops import cli, engine, report_kernel
from jaxperf.loops import factory as kernel
from jaxperf.loops import verdict as loops_verdict
from jaxperf_study.jax20909 import advice, compile_facts, family, reference
from jaxperf_study.jax20909.variant import KernelVariant

STEP = 8  # rows a loop step reads in the tiny kernel below


def _kernel(x_ref, o_ref, *, form):
    from jax.experimental import pallas as pl

    def body(j, acc):
        return acc + x_ref[pl.ds(j * STEP, STEP), :]

    o_ref[...] = jaxperf.kernel_loop(
        0, x_ref.shape[0] // STEP, body, jnp.zeros(o_ref.shape, jnp.float32), form=form
    )


def make(form, T, *, interpret=False):
    """A reader's factory: the sum of T/8 row blocks of x [T, 128] (float32)."""
    from jax.experimental import pallas as pl

    if T % STEP:
        raise ValueError(f"T={T!r} is not allowed: expected a multiple of {STEP}.")
    call = pl.pallas_call(
        functools.partial(_kernel, form=form),
        out_shape=jax.ShapeDtypeStruct((STEP, 128), jnp.float32),
        interpret=interpret,
    )
    return jax.jit(call), (jax.ShapeDtypeStruct((T, 128), jnp.float32),)


def wrong(form, T, *, interpret=False):
    """As :func:`make`, but its Python loop adds one more step than fori_loop: a wrong form."""
    fn, args = make(form, T, interpret=interpret)
    if form == "python":
        return jax.jit(lambda x: fn(x) + 1.0), args
    return fn, args


@pytest.mark.parametrize("form", ["python", "fori", "fori u=3", "pl_loop u=2", "hand_unrolled u=4"])
def test_kernel_loop_gives_fori_loops_result_in_plain_jit(form):
    body = lambda j, c: c * 0.5 + jnp.float32(j)  # noqa: E731 - order matters: a real recurrence
    want = jax.lax.fori_loop(0, 7, body, jnp.ones(3, jnp.float32))
    got = jax.jit(lambda c: jaxperf.kernel_loop(0, 7, body, c, form=form))(jnp.ones(3, jnp.float32))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", ["hoisted u=1", "fori u=0", "fori u=x", "python u=2", "while", 3])
def test_a_form_kernel_loop_cannot_take_names_form(bad):
    with pytest.raises(ValueError, match=r"form=.* is not allowed"):
        jaxperf.kernel_loop(0, 4, lambda j, c: c, jnp.zeros(()), form=bad)


def test_a_python_loop_needs_static_bounds():
    with pytest.raises(ValueError, match="form='python' is not allowed: expected a looping form"):
        jax.jit(lambda n: jaxperf.kernel_loop(0, n, lambda j, c: c + j, 0, form="python"))(4)


def test_recording_sees_each_loop_and_its_trips():
    with forms.recording() as calls:
        jax.make_jaxpr(lambda c: jaxperf.kernel_loop(2, 10, lambda j, c: c + j, c, form="fori u=2"))(0.0)
    assert calls == [forms.LoopCall("fori", 2, 8)]
    steps, programs = kernel.traced(*make("python", 64))
    assert (steps, programs) == (8, 1)


@pytest.mark.parametrize(
    "path, match",
    [
        ("no_such_module_here:make", "importing 'no_such_module_here' failed"),
        ("jaxperf.loops.examples.matmul:nope", "has no callable 'nope'"),
        ("jaxperf.loops.examples.matmul", "an importable 'package.module:factory'"),
        ("jaxperf.errors:bad_value", "takes no 'interpret' keyword"),
    ],
)
def test_a_factory_that_does_not_load_names_kernel(path, match):
    with pytest.raises(ValueError, match=f"kernel=.* is not allowed: .*{match}"):
        kernel.load(path)


def test_bad_forms_and_a_T_the_blocks_cannot_tile_fail_before_any_work():
    k = kernel.load(f"{__name__}:make")
    with pytest.raises(ValueError, match="form='scalar_carry u=1' is not allowed"):
        engine.run(k.path, ["python", "fori", "scalar_carry u=1"], [64, 128])
    with pytest.raises(ValueError, match="forms=.* holding 'fori'"):
        engine.run(k.path, ["python", "hand_unrolled u=2"], [64, 128])
    with pytest.raises(
        ValueError, match=r"form='python', T=60: T=60 is not allowed: expected a multiple of 8"
    ):
        engine.run(k.path, ["python", "fori"], [64, 60])


def test_the_engine_checks_every_form_first_and_compiles_only_those_that_match(monkeypatch):
    monkeypatch.setattr(engine.tg, "present", lambda: {t: "not here (test)" for t in engine.tg.TARGETS})
    good = engine.run(
        f"{__name__}:make", ["python", "fori", "hand_unrolled u=2"], [64, 128], targets=["triton sm_86"]
    )
    assert good.checks.same_result.all() and set(good.checks["T"]) == {64}
    assert set(good.points.form) == {"python", "fori", "hand_unrolled u=2"}
    triton = good.points[good.points.target == "triton sm_86"].set_index(["form", "T"])
    assert triton.loc[("python", 64), "status"] == "ok"  # lowered, without a compile here
    text = report_kernel.markdown(good)
    assert "**Same result as `fori_loop`**" in text and "**Lowers**" in text and "lowers" in text
    bad = engine.run(f"{__name__}:wrong", ["python", "fori"], [64, 128], targets=["triton sm_86"])
    assert not bad.checks.set_index("form").loc["python", "same_result"]
    assert set(bad.points.form) == {"fori"}  # the wrong form was neither compiled nor timed


def _points(rows):
    cols = ["kernel", "target", "unit", "form", "T", "status", "work_per_program", "steps"]
    return pd.DataFrame([dict(zip(cols, r)) for r in rows])


def test_work_per_step_is_the_difference_over_the_extra_steps():
    u = "SASS instructions per warp"
    points = _points(
        [
            ("k", "triton sm_86", u, "python", 1024, "ok", 100, 16),
            ("k", "triton sm_86", u, "python", 2048, "ok", 132, 32),
            ("k", "triton sm_86", u, "fori", 1024, "ok", 500, 16),
            ("k", "triton sm_86", u, "fori", 2048, "ok", 1300, 32),
            ("k", "triton sm_86", u, "fori u=4", 2048, "does not lower", None, None),
        ]
    )
    steps = engine.per_step(points).set_index("form")
    assert steps.loc["python", "per_step"] == 2 and steps.loc["fori", "per_step"] == 50
    assert steps.loc["fori", "vs_python_at_T2"] == pytest.approx(1300 / 132)
    # nothing compiled, nothing claimed: the form stays, with why
    assert pd.isna(steps.loc["fori u=4", "per_step"]) and "does not lower" in steps.loc["fori u=4", "note"]
    rows = loops_verdict.static(steps.reset_index())
    assert loops_verdict.verdict(rows) == "pays"
    assert loops_verdict.mechanism(rows).startswith(
        "triton sm_86: pays, fori_loop 50.0 against the Python loop's 2.0"
    )


UNITS = ("SASS instructions per warp", "VLIW bundles", "TPU slot operations", "instructions or operations")


def test_each_sentence_of_a_targets_verdict_has_one_unit_and_its_own_per_step_number():
    steps = pd.DataFrame(
        [
            dict(kernel="k", target=t, unit=u, form=f, T1=1024, T2=2048, per_step=n, classes=c, note="")
            for t, u, rows in (
                ("triton sm_90", "SASS instructions per warp", [("python", 54.0, 4), ("fori", 153.5, 60)]),
                ("mosaic_tpu v5e", "VLIW bundles (cycles)", [("python", 3.9, 2), ("fori", 26.0, 40)]),
            )
            for f, n, extra in rows
            for c in [{"tensor core": 8.0, "integer/address": float(extra), "float ALU": 10.0}]
        ]
    )
    lines = loops_verdict.per_target(loops_verdict.static(steps))
    assert len(lines) == 2
    for line, unit, numbers in zip(
        lines,
        ("SASS instructions per warp per loop step", "VLIW bundles (cycles) per loop step"),
        ("153.5 against the Python loop's 54.0", "26.0 against the Python loop's 3.9"),
        strict=True,
    ):
        first, *rest = [s for s in re.split(r"(?<=\.) (?=[A-Za-z])", line) if s]
        assert numbers in first and unit in first, first
        for sentence in [first, *rest]:
            assert sum(u in sentence for u in UNITS) == 1, sentence
    assert lines[0].endswith(
        "fori_loop issues 56.0 more SASS instructions per warp per step, mostly integer/address +56.0 (the same tensor core, float ALU per step)."
    )
    assert "38.0 more TPU slot operations per step" in lines[1]


def _family(kernel_name, ratios, measured=None):
    rows = [
        dict(
            kernel=kernel_name,
            source=t,
            kind="static, compiled on a CPU",
            unit="u per loop step",
            T="1-2",
            fori=r * 10,
            python=10.0,
            ratio=r,
            q25=None,
            q75=None,
        )
        for t, r in ratios.items()
    ]
    if measured:
        rows.append(
            dict(kernel=kernel_name, source="XLA:CPU", kind="measured", unit="ms per call", T="8",
                 fori=1.0, python=1.0, ratio=measured[0], q25=measured[1], q75=measured[2])
        )  # fmt: skip
    return pd.DataFrame(rows, columns=loops_verdict.COLUMNS)


GPU, MGPU, TPU = "triton sm_86", "mosaic_gpu sm_90a", "mosaic_tpu v5e"


@pytest.mark.parametrize(
    "ratios, measured, verdict",
    [
        ({GPU: 1.02, MGPU: 0.95}, (1.0, 0.9, 1.1), "does not pay"),
        ({GPU: 1.6, MGPU: 1.5}, None, "pays partly"),
        ({GPU: 1.02, MGPU: 1.6}, None, "depends on the target"),
        # every target counts: a TPU count that says "pays" is never overruled by a GPU's
        ({GPU: 1.02, TPU: 3.0}, (2.5, 2.1, 2.9), "depends on the target"),
        ({TPU: 3.0}, (2.5, 2.1, 2.9), "pays"),  # without a GPU compiler's count, the measured ratio says it
        ({}, (1.0, 0.7, 1.3), "pays partly"),  # a spread beyond 1.25x is no "same work"
    ],
)
def test_the_verdict_follows_its_numbers(ratios, measured, verdict):
    assert loops_verdict.verdict(_family("k", ratios, measured)) == verdict


def test_the_answer_names_who_pays_and_who_does_not():
    frame = pd.concat(
        [_family("seed", {GPU: 30.0, TPU: 32.0}), _family("data_carry", {GPU: 1.03, TPU: 1.9})],
        ignore_index=True,
    )
    text = family.answer(frame)
    assert "`seed` pays on every target read (triton sm_86 30.00×, mosaic_tpu v5e 32.00×)" in text
    assert "`data_carry` depends on the target: does not pay on triton sm_86 1.03×" in text
    assert "pays partly on mosaic_tpu v5e 1.90×" in text
    lines = loops_verdict.per_target(frame[frame.kernel == "data_carry"])
    assert lines[1].startswith("mosaic_tpu v5e: pays partly, fori_loop 19.0 against the Python loop's 10.0")
    wide = family.wide(frame)
    assert list(wide.kernel) == ["seed", "data_carry"] and "300 / 10 = 30.00×" in wide.iloc[0, 1]


def test_advice_judges_each_candidate_on_its_backends_measure():
    assert advice._judge(1.0, 20.0, 0.9, 1.04) == "closes it"
    assert advice._judge(1.0, 20.0, 0.9, 1.2) == "not resolved against closing it (its spread holds 1.05×)"
    assert advice._judge(1.02, 20.0) == "matches the Python loop's count"
    assert advice._judge(5.0, 20.0) == "narrows it" and advice._judge(19.0, 20.0) == "does not help"
    rows = [
        dict(
            backend="b",
            measure="m",
            T=1,
            form="hand_unrolled u=4",
            ratio=19.0,
            q25=None,
            q75=None,
            fori_ratio=20.0,
            judged="does not help",
        )
    ]
    assert advice.best(rows) == {"b": "nothing the study tried helps"}


def test_compile_growth_is_compared_with_his_only_on_the_same_range():
    fact = compile_facts.matched(
        [256, 2048, 8192], [100, 150, 140], [90, 95, 99], planned=[256, 2048, 8192, 16384], where="w"
    )
    assert fact["status"] == "compared" and fact["reporter_python_growth"] == pytest.approx(473 / 177)
    assert fact["not_reached"] == [16384] and "not reached: T=16384" in compile_facts.sentence(fact)
    assert compile_facts.matched([256, 4096], [1, 2], [1, 1], where="w")["status"] == "not in his table"
    assert compile_facts.matched([256], [1], [1], where="w")["status"] == "one T"  # run at one T: said so
    assert compile_facts.matched([256, 2048], [1, None], [1, 1], where="w")["status"] == "not reached"
    flags = compile_facts.harness_flags(
        [dict(mode="x", T=1, variant="v", compile_ms=-214.0), dict(compile_ms=5.0)]
    )
    assert [f["compile_ms"] for f in flags] == [-214.0]


def test_the_cli_says_what_was_wrong_and_exits_2(capsys):
    assert cli.main(["no_such_module_here:make", "--T", "64,128"]) == 2
    assert "kernel='no_such_module_here:make' is not allowed" in capsys.readouterr().err
    assert cli.main([f"{__name__}:make", "--T", "64,x"]) == 2
    assert "--T='64,x' is not allowed" in capsys.readouterr().err
    for budget in ("-1", "0", "ten"):  # the flag the reader typed, not the engine's budget_s
        assert cli.main([f"{__name__}:make", "--T", "64,128", "--budget", budget]) == 2
        assert (
            capsys.readouterr().err
            == f"error: --budget='{budget}' is not allowed: expected seconds, a decimal number > 0, e.g. 300.\n"
        )


def test_data_carry_is_the_seed_with_its_elementwise_carry():
    x = np.arange(2 * 256 * 4, dtype=np.float32).reshape(2, 256, 4) / 100
    want = reference.reference(
        KernelVariant("data_carry", "fori", T=256, D=4, batch=2, dtype="float32"), (x,)
    )
    steps = 256 // 64
    np.testing.assert_allclose(want, steps * x + steps * (steps - 1) / 2)


def test_the_notebook_names_the_engines_targets():
    from jaxperf.loops import targets
    from jaxperf_study.jax20909 import settings

    assert settings.TARGETS == tuple(targets.TARGETS)  # the settings check them without importing JAX
    with pytest.raises(ValueError, match=r"targets\[...\]='triton sm_80' is not allowed"):
        settings.LoopSettings(targets=("triton sm_80",))


def raising(form, T, *, interpret=False):
    raise TypeError("a factory's own bug\nwith a second line")


def test_a_factory_that_raises_anything_exits_2_with_one_line(capsys, tmp_path):
    out = tmp_path / "summary.json"
    assert cli.main([f"{__name__}:raising", "--T", "64,128", "--quiet", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "raised at form='python', T=64: TypeError: a factory's own bug" in err
    assert "with a second line" in out.read_text()  # the full text, in JSON


def test_a_budget_leaves_later_points_not_reached(monkeypatch):
    monkeypatch.setattr(engine.tg, "present", lambda: {t: "not here (test)" for t in engine.tg.TARGETS})
    got = engine.run(
        f"{__name__}:make", ["python", "fori"], [64, 128], targets=["triton sm_86"], budget_s=1e-9
    )
    assert set(got.points.status) == {engine.tg.NOT_REACHED}
    assert "not reached" in report_kernel.markdown(got)


def test_a_compile_is_predicted_at_the_growth_its_compiles_showed():
    """Mosaic TPU on the TPU v5e (notebook 02 at e970208): the reporter's Python loop compiled in 0.41 s
    at T=256, T squared predicted 26 s at T=2048 with 22 s of its budget left, and no count per step
    was read; its compile grew 1.2x from T=256 to 65536. From two compiles the growth they showed is
    used, held between T and T squared."""
    assert engine._predicted_s([(256, 0.41)], 2048) == pytest.approx(0.41 * 64)  # one: T squared
    flat = engine._predicted_s([(256, 0.41), (512, 0.42)], 8192)
    assert flat == pytest.approx(0.42 * 16)  # grew slower than T: predicted as T
    steep = engine._predicted_s([(256, 1.0), (512, 8.0)], 1024)
    assert steep == pytest.approx(8.0 * 4)  # grew faster than T squared: held at T squared
    assert engine._predicted_s([(256, 1.0), (512, 2.83)], 1024) == pytest.approx(2.83 * 2**1.5, rel=1e-2)
    assert engine._predicted_s([(512, 1.0), (512, 1.1)], 1024) == pytest.approx(1.1 * 4)  # one T: as one


def test_a_compile_predicted_past_the_budget_is_not_started(monkeypatch):
    assert engine._predicted_s(None, 4096) == 0 and engine._predicted_s((1024, 10.0), 2048) == 40.0
    monkeypatch.setattr(engine.tg, "present", lambda: {t: "" for t in engine.tg.TARGETS})
    calls = []

    def slow(kernel, form, T, target):  # the first T "took" 10 s of a 30 s budget
        calls.append(T)
        monkeypatch.setattr(engine.time, "monotonic", lambda t=engine.time.monotonic() + 10: t)
        return dict(status="ok", error="", compile_ms=1.0, work_per_program=1.0, steps=T // 8)

    monkeypatch.setattr(engine.tg, "compile_point", slow)
    got = engine.run(f"{__name__}:make", ["fori"], [64, 128], targets=["triton sm_86"], budget_s=30)
    assert calls == [64]
    row = got.points.set_index("T").loc[128]
    assert row.status == engine.tg.NOT_REACHED and row.error.startswith("predicted 40.0 s")


def test_per_step_compares_forms_at_T_with_the_same_loop_structure():
    """ptxas may unroll fori fully at one T and not the next: a pair of T whose compiled code has
    a different number of loops is never differenced, and both forms use the same pair."""
    u = "SASS instructions per warp"
    rows = [
        ("python", 1024, 100, 16, 0),
        ("python", 2048, 132, 32, 0),
        ("python", 4096, 196, 64, 0),
        ("fori", 1024, 300, 16, 0),  # fully unrolled here
        ("fori", 2048, 900, 32, 1),
        ("fori", 4096, 1700, 64, 1),
    ]
    cols = ["kernel", "target", "unit", "form", "T", "status", "work_per_program", "steps", "loops_in_code"]
    points = pd.DataFrame(
        [dict(zip(cols, ("k", "triton sm_90", u, f, T, "ok", w, s, n))) for f, T, w, s, n in rows]
    )
    steps = engine.per_step(points).set_index("form")
    assert tuple(steps.loc["fori", ["T1", "T2"]]) == (2048, 4096) == tuple(steps.loc["python", ["T1", "T2"]])
    assert steps.loc["fori", "per_step"] == 25 and steps.loc["python", "per_step"] == 2
    points.loc[points["T"] == 4096, "loops_in_code"] = [0, 2]  # now no pair of fori's matches
    fori = engine.per_step(points).set_index("form").loc["fori"]
    assert pd.isna(fori.per_step) and "loop structure differs" in fori.note


def test_the_tpu_preset_reads_the_reporters_kernel_at_every_T_in_its_share(monkeypatch):
    """At e970208 on the TPU his kernel's Python loop compiled in 0.41 s at T=256 and the family's
    share left 21.8 s: no count was read past T=256. With every compile taking 0.41 s on a clock of
    its own, the TPU preset's T and forms now all compile inside that share."""
    from jaxperf.loops.factory import load
    from jaxperf_study.jax20909.settings import LoopSettings

    preset = LoopSettings.DEVICE_PRESETS["tpu"]
    forms = list(dict.fromkeys([*preset["family_forms"], *preset["fix_forms"]]))
    now = [0.0]
    monkeypatch.setattr(engine.time, "monotonic", lambda: now[0])

    def compile_point(kernel, form, T, target):
        now[0] += 0.41
        return dict(status=engine.tg.OK, error="", compile_ms=410.0, work_per_program=1.0, steps=T // 64)

    monkeypatch.setattr(engine.tg, "compile_point", compile_point)
    here = {t: "" if t == "mosaic_tpu v5e" else engine.NOT_ASKED for t in engine.tg.TARGETS}
    kernel = load("tests.corpus.kernels.row_sum:make")
    rows = engine.compile_results(
        kernel, forms, list(preset["family_Ts"]["seed"]), here, engine.Progress(21.8)
    )
    assert set(rows.status) == {engine.tg.OK} and len(rows) == len(forms) * len(preset["family_Ts"]["seed"])
