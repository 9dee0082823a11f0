"""The corpus of Pallas kernels (tests/corpus/kernels) through ``python -m jaxperf loops``' engine in
a quick mode (small T, Mosaic TPU only: a compile takes under a second), asserting the verdicts known
by construction. Every kernel's forms must give its plain-JAX reference; a dynamic trip count is
"not known"; every target's sentence carries its own per-step numbers."""

from __future__ import annotations

import re

import pytest

from jaxperf.loops import engine, report_kernel
from jaxperf.loops import verdict as loops_verdict

CORPUS = "tests.corpus.kernels"
KERNELS = [
    "rmsnorm:make",
    "layernorm:make",
    "logsumexp:make",
    "row_sum:make",
    "cumsum:make",
    "branch:make",
    "dynamic_trips:make",
    "pairs:make",
    "online_softmax:make",
    "matmul:f32_128",
    "matmul:bf16_128",
    "matmul:bf16_k64",
]
TPU = "mosaic_tpu v5e"


def _tpu_here() -> bool:
    from jaxperf.compilers.mosaic_tpu import topology

    return topology.status().available


@pytest.fixture(scope="module")
def runs():
    if not _tpu_here():
        pytest.skip("libtpu is not installed: the quick mode compiles for Mosaic TPU")
    out = {}
    for name in KERNELS:
        forms = ["fori", "hand_unrolled u=2"] if name.startswith("dynamic") else ["python", "fori"]
        Ts = [256, 512] if name.startswith("matmul") else [512, 1024]
        out[name] = engine.run(f"{CORPUS}.{name}", forms, Ts, targets=[TPU], budget_s=120)
    return out


@pytest.mark.parametrize("name", KERNELS)
def test_every_form_gives_the_readers_reference(runs, name):
    checks = runs[name].checks
    assert set(checks.against) == {"your reference"}
    assert checks.same_result.all(), checks.to_string()


def test_a_dynamic_trip_count_is_not_known(runs):
    text = report_kernel.markdown(runs["dynamic_trips:make"])
    assert "not known" in text.splitlines()[2]
    steps = runs["dynamic_trips:make"].per_step()
    assert steps.per_step.isna().all() and steps.note.str.contains("no two T with a count").all()


@pytest.mark.parametrize("name", [k for k in KERNELS if not k.startswith("dynamic")])
def test_each_target_sentence_carries_its_own_per_step_numbers(runs, name):
    rows = report_kernel.frame(runs[name])
    lines = loops_verdict.per_target(rows)
    assert lines and all(line.startswith(TPU) for line in lines)
    rows = rows[rows.ratio.notna()]
    if rows.empty:  # a count not read stays, saying why (e.g. a trip count libtpu's code hides)
        assert all(re.match(rf"{TPU}: not read \(fori_loop: .+; Python loop: .+\)", line) for line in lines)
        assert loops_verdict.verdict(report_kernel.frame(runs[name])) == "not read"
        return
    for line, r in zip(lines, rows.itertuples(), strict=True):
        assert f"{r.fori:.1f} against the Python loop's {r.python:.1f}" in line
        assert f"({r.ratio:.2f}×" in line and loops_verdict.target_verdict(r.ratio) in line
    verdict = loops_verdict.verdict(rows)
    assert verdict == loops_verdict.target_verdict(float(rows.ratio.iloc[0]))  # one target: its verdict


@pytest.mark.parametrize("name", ["matmul:f32_128", "matmul:bf16_128"])
def test_a_matmul_issues_its_matrix_work_in_every_form(runs, name):
    steps = runs[name].per_step().set_index("form")
    python, fori = steps.loc["python", "classes"], steps.loc["fori", "classes"]
    assert python["matrix"] > 0 and fori["matrix"] > 0  # read from the code: both forms use the MXU


def test_the_report_prints_the_per_step_ratio_the_verdict_uses(runs):
    results = runs["rmsnorm:make"]
    text = report_kernel.markdown(results)
    ratio = loops_verdict.static(results.per_step()).ratio.iloc[0]
    assert re.search(rf"{ratio:.2f}× Python's", text), text


def test_a_two_pass_layernorm_pays_on_tpu(runs):
    """The issue's contradiction: its TPU count says fori_loop does several times the Python loop's
    work per step, so the verdict cannot be "does not pay"."""
    rows = report_kernel.frame(runs["layernorm:make"])
    tpu = rows[rows.source == TPU].iloc[0]
    assert tpu.ratio >= loops_verdict.FOLD and loops_verdict.verdict(rows) == "pays"
    assert "per loop step" in report_kernel.verdict_line(runs["layernorm:make"])


def test_a_block_the_compiler_cannot_align_is_a_result_with_its_whole_error(runs):
    points = runs["matmul:bf16_k64"].points.set_index(["form", "T"])
    fori = points.loc[("fori", 256)]
    assert fori.status == "failed" and "multiple of 128" in fori.error
    assert "multiple of 128" in report_kernel.markdown(runs["matmul:bf16_k64"])


def test_a_bf16_matmul_issues_the_same_tensor_core_work_per_step_in_both_forms_on_triton():
    """The issue's HGMMA finding, by construction: each step is one [128, 128] x [128, 128] dot in
    either form, so the tensor-core class per step is equal; the cause names what differs."""
    from jaxperf.compilers.triton import toolchain

    if not toolchain.status().available:
        pytest.skip(f"triton is not here: {toolchain.status().reason}")
    got = engine.run(f"{CORPUS}.matmul:bf16_128", ["python", "fori"], [512, 1024], targets=["triton sm_90"])
    steps = got.per_step().set_index("form")
    python, fori = steps.loc["python", "classes"], steps.loc["fori", "classes"]
    assert python["tensor core"] > 0 and fori["tensor core"] == python["tensor core"]
    row = loops_verdict.static(got.per_step()).iloc[0]
    assert "tensor core" not in row.cause.split("(the same")[0]  # not named as where fori's extra lies


def test_a_primitive_mosaic_tpu_lacks_does_not_lower_as_on_triton(runs):
    """Mosaic TPU's NotImplementedError (no cumsum rule) is "does not lower", Triton's word for its
    own, never "failed" (the tool's word for its own failures)."""
    points = runs["cumsum:make"].points
    assert set(points.status) == {"does not lower"}, points.status.tolist()
    assert points.error.str.startswith("NotImplementedError: Unimplemented primitive").all()


def test_integer_division_compiles_for_mosaic_tpu(runs):
    """Mosaic TPU's ``//`` lowering asks for the device kind: under the tool's abstract TPU mesh it
    is a TPU's, so every point compiles (it once failed with "Unsupported TPU device kind: cpu")."""
    points = runs["pairs:make"].points
    assert (points.status == "ok").all(), points.error.tolist()


def test_lowering_is_judged_from_what_was_exported():
    """A plain pallas_call exported for CUDA is a Triton custom call: asked for Mosaic GPU, the
    point says so instead of "lowers"."""
    from jaxperf.loops import targets
    from jaxperf.loops.factory import load

    kernel = load(f"{CORPUS}.row_sum:make")
    assert targets.lowers(kernel, "fori", 256, "triton")["status"] == "ok"
    asked = targets.lowers(kernel, "fori", 256, "mosaic_gpu")
    assert asked["status"] != "ok" and asked["error"].startswith("lowers as a triton kernel")
    assert targets.lowers(kernel, "fori", 256, "mosaic_tpu")["status"] == "ok"
