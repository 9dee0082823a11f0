"""Pins the Triton half of jax#20909's mechanism, from the compiler's own output (compiled for
sm_90 on this CPU, never executed), so a JAX or Triton upgrade that changes it fails here:

- the reporter's ``X_i.sum()`` sits inside the fori_loop body in JAX's Triton IR, and Triton
  hoists it: no ``tt.reduce`` in the loop after its passes, no SHFL inside a SASS loop, and the
  same SHFL count in every loop form (the reduction runs once);
- what differs is the carry: each fori_loop step adds to the whole [128, 64] fp16 tile (32 HADD2
  per thread: 128 x 64 halves / 128 threads / 2 per HADD2), while the Python loop adds on one
  scalar and broadcasts once (under 2 SASS instructions per step);
- so the static estimate predicts a fori/Python ratio that grows with T.
"""

from __future__ import annotations

import pytest

from jaxperf import triton as tc
from jaxperf.triton import estimate, mechanism, sweep

TRITON = tc.status()
pytestmark = pytest.mark.skipif(not TRITON.available, reason=TRITON.reason or "triton unavailable")
FORMS = [sweep.Variant("seed", f, u) for f, u in (("python", 1), ("fori", 1), ("hoisted", 1))]
SHAPE = sweep.Shape(batch=8)  # the program's code does not depend on the batch


@pytest.fixture(scope="module")
def evidence():
    counts, per_step = mechanism.evidence(FORMS, (8192, 16384), shape=SHAPE)
    return counts, per_step, mechanism.verdict(counts, per_step)


def test_the_reduction_runs_once_in_every_form(evidence):
    counts, _, verdict = evidence
    red = mechanism.reduction_table(counts).set_index(["variant", "level"])
    assert red.loc[("fori u=1", "ttir (JAX)"), "in loop"] == 2  # JAX hands Triton the sum inside the loop
    for variant in ("fori u=1", "hoisted u=1"):
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
