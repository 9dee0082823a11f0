"""The loop forms: the hand-unrolled loop equals fori_loop for any bounds,
unroll and carry; every form runs the same steps in the same order."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxperf.fixes import _kernel_loop as loops
from jaxperf_study.jax20909.vocab import LOOP_FORMS


def _body(j, carry):
    # Order-sensitive (not commutative across steps), so a skipped, repeated
    # or reordered step changes the answer.
    total, trace = carry
    j = jnp.asarray(j, jnp.int32)
    return total * 3 + j + 1, trace.at[jnp.mod(j, trace.shape[0])].add(j * 7 + total % 5)


def _init(seed: int, width: int):
    return jnp.int32(seed), jnp.arange(width, dtype=jnp.int32) * seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lower=st.integers(-5, 12),
    trip=st.integers(-3, 23),
    unroll=st.integers(1, 30),
    seed=st.integers(0, 9),
    width=st.integers(1, 5),
    traced=st.booleans(),
)
def test_hand_unrolled_equals_fori(lower, trip, unroll, seed, width, traced):
    upper = lower + trip  # trip <= 0: zero steps; unroll > trip and unroll not dividing trip included
    init = _init(seed, width)
    want = jax.jit(lambda c: jax.lax.fori_loop(lower, upper, _body, c))(init)
    if traced:
        fn = jax.jit(lambda lo, hi, c: loops.hand_unrolled_fori(lo, hi, _body, c, unroll))
        got = fn(jnp.int32(lower), jnp.int32(upper), init)
    else:
        got = jax.jit(lambda c: loops.hand_unrolled_fori(lower, upper, _body, c, unroll))(init)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("loop_form", LOOP_FORMS)
@pytest.mark.parametrize("unroll", [1, 3])
def test_every_form_runs_the_same_steps(loop_form, unroll):
    if loop_form == "python" and unroll != 1:
        pytest.skip("a Python loop has no unroll")
    init = _init(2, 4)
    want = jax.lax.fori_loop(2, 9, _body, init)
    got = jax.jit(lambda c: loops.run_loop(loop_form, 2, 9, _body, c, unroll))(init)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_hand_unrolled_emits_one_loop_with_k_bodies():
    jaxpr = jax.make_jaxpr(lambda c: loops.hand_unrolled_fori(0, 10, lambda j, x: x * 2.0 + j, c, 4))(1.0)
    scans = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert [s.params["length"] for s in scans] == [2]  # 10 // 4 outer steps, the remainder inline
    inner_muls = [e for e in scans[0].params["jaxpr"].eqns if e.primitive.name == "mul"]
    assert len(inner_muls) >= 4


@pytest.mark.parametrize("loop_form", ["fori", "pl_loop"])
def test_fori_and_pl_loop_pass_unroll_to_one_scan(loop_form):
    # pl.loop is fori_loop with the same unroll (so the sweep need not time both).
    jaxpr = jax.make_jaxpr(lambda c: loops.run_loop(loop_form, 0, 12, lambda j, x: x * 2.0 + j, c, 4))(1.0)
    [scan] = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert scan.params["unroll"] == 4 and scan.params["length"] == 12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(loop_form="while"), "loop_form='while' is not allowed"),
        (dict(unroll=0), "unroll=0 is not allowed: expected an integer >= 1"),
        (dict(unroll=True), "unroll=True is not allowed"),
        (dict(loop_form="python", unroll=2), "unroll=2 is not allowed: expected 1 for loop_form='python'"),
    ],
)
def test_bad_loop_parameters(kwargs, match):
    call = dict(loop_form="fori", unroll=1) | kwargs
    with pytest.raises(ValueError, match=match):
        loops.run_loop(call["loop_form"], 0, 4, lambda j, c: c, 0.0, call["unroll"])


def test_python_loop_needs_static_bounds():
    with pytest.raises(ValueError, match="static ints"):
        jax.jit(lambda n: loops.run_loop("python", 0, n, lambda j, c: c + j, 0))(3)


def test_run_loop_takes_every_form_the_study_names():
    """The tool's forms (jaxperf.loops.forms) run every loop form of the jax#20909 study's kernels."""
    assert loops.LOOP_FORMS == LOOP_FORMS
