"""Pins the Triton half of jax#20909's mechanism, from the compiler's own output (compiled for
sm_90 on this CPU, never executed), so a JAX or Triton upgrade that changes it fails here:

- the reporter's ``X_i.sum()`` sits inside the fori_loop body in JAX's Triton IR, and Triton
  hoists it: no ``tt.reduce`` in the loop after its passes, no SHFL inside a SASS loop, and the
  same SHFL count in every loop form (the reduction runs once);
- what differs is the carry: each fori_loop step adds to the whole [128, 64] fp16 tile (32 HADD2
  per thread: 128 x 64 halves / 128 threads / 2 per HADD2), while the Python loop adds on one
  scalar and broadcasts once (under 2 SASS instructions per step);
- so the static estimate predicts a fori/Python ratio that grows with T;
- the scalar carry (``scalar_carry``, the fix that closed the gap on XLA:CPU) carries the Python
  loop's one scalar through a fori_loop: its loop is in the LLVM IR, ptxas unrolls it, and each
  step costs a few scalar instructions, so its estimate stays near the Python loop's.
"""

from __future__ import annotations

import pytest

from jaxperf.compilers import triton as tc
from jaxperf.compilers.triton import estimate
from jaxperf.triton import mechanism, sweep

TRITON = tc.status()
pytestmark = pytest.mark.skipif(not TRITON.available, reason=TRITON.reason or "triton unavailable")
FORMS = [
    sweep.Variant("seed", f, u) for f, u in (("python", 1), ("fori", 1), ("hoisted", 1), ("scalar_carry", 1))
]
SHAPE = sweep.Shape(batch=8)  # the program's code does not depend on the batch


@pytest.fixture(scope="module")
def evidence():
    counts, per_step = mechanism.evidence(FORMS, (8192, 16384), shape=SHAPE)
    return counts, per_step, mechanism.verdict(counts, per_step)


def test_the_reduction_runs_once_in_every_form(evidence):
    counts, _, verdict = evidence
    red = mechanism.reduction_table(counts).set_index(["variant", "level"])
    assert red.loc[("fori u=1", "ttir (JAX)"), "in loop"] == 2  # JAX hands Triton the sum inside the loop
    for variant in ("fori u=1", "hoisted u=1", "scalar_carry u=1"):
        assert red.loc[(variant, "ttgir"), "in loop"] == 0  # ... and Triton's passes hoist it
        assert red.loc[(variant, "sass"), "in loop"] == 0
    assert red.loc[("python", "ttir (JAX)"), "outside loops"] == 2 * 8192 // 64  # traced every step ...
    assert red.loc[("python", "ttgir"), "outside loops"] == 2  # ... and CSE'd to one
    assert len(set(verdict["shfl_total"].values())) == 1 and verdict["shfl_total"]["python"] > 0
    assert "the reduction runs once in every form" in verdict["line"]


def test_the_fori_loop_adds_to_the_whole_tile_every_step(evidence):
    _, per_step, _ = evidence
    steps = per_step.set_index("variant")
    for variant in ("fori u=1", "hoisted u=1"):
        assert steps.loc[variant, "fp arithmetic"] >= 32  # the [128, 64] fp16 carry: 32 HADD2 per thread
        assert steps.loc[variant, "shuffle"] == 0 and steps.loc[variant, "barrier"] == 0
    assert steps.loc["python", "per_step_total"] <= 2  # a scalar add chain, one broadcast at the end
    assert steps.loc["fori u=1", "per_step_total"] > 10 * steps.loc["python", "per_step_total"]


def test_the_static_estimate_grows_with_T():
    rows = sweep.sweep(
        FORMS[:2], {"seed": [256, 8192, 16384]}, max_compile_s=float("inf"), shape=sweep.Shape()
    )
    ratios = estimate.ratios(rows).set_index("T")["fori u=1 / python"]
    assert ratios.is_monotonic_increasing and ratios.loc[16384] > 5
    table = estimate.table(rows).set_index(["variant", "T"])
    fori = table.loc[("fori u=1", 16384)]
    # the trips read from the counter, times ptxas' unroll of the body, cover every step
    trips = int(fori.sass_loop_trips)
    assert 0 < trips <= fori.steps and fori.steps % trips == 0
    assert fori.programs == 16384 // 128 * 512


def test_the_scalar_carry_costs_a_scalar_per_step_and_ptxas_unrolls_its_loop(evidence):
    counts, per_step, verdict = evidence
    steps = per_step.set_index("variant")
    fix = steps.loc["scalar_carry u=1"]
    assert 0 < fix["per_step_total"] <= 4  # fp16: add, add, convert j
    assert fix["per_step_total"] * 5 < steps.loc["fori u=1", "per_step_total"]
    assert fix["shuffle"] == 0 and fix["global load"] == 0 and fix["global store"] == 0
    loops = verdict["loops"]["scalar_carry u=1"]
    assert loops["ttgir"] == 1 and loops["llir"] == 1 and loops["sass"] == 0  # ptxas unrolls it
    assert verdict["loops"]["fori u=1"]["sass"] == 1  # the tile's loop survives
    assert verdict["sass_per_step"]["scalar_carry u=1"] == fix["per_step_total"]
    assert "scalar_carry u=1" in verdict["line"] and "ptxas unrolls it" in verdict["line"]


def test_the_estimate_puts_the_scalar_carry_near_the_python_loop():
    forms = [FORMS[0], FORMS[1], FORMS[3]]
    rows = sweep.sweep(forms, {"seed": [8192, 16384]}, max_compile_s=float("inf"), shape=sweep.Shape())
    ratios = estimate.ratios(rows).set_index("T")
    assert ratios.loc[16384, "scalar_carry u=1 / python"] < 3 and ratios.loc[16384, "fori u=1 / python"] > 5
    closest = estimate.closest_to_python(rows)
    assert list(closest.variant) == ["scalar_carry u=1", "fori u=1"] and set(closest["T"]) == {16384}
    table = estimate.table(rows).set_index(["variant", "T"])
    fix = table.loc[("scalar_carry u=1", 16384)]
    assert fix.sass_in_loops == 0 and fix.sass_dynamic_per_program > 0  # no loop: every instruction once
    slope = estimate.per_step(rows).set_index("variant")["per step"]
    assert 0 < slope["scalar_carry u=1"] < slope["fori u=1"] / 5
