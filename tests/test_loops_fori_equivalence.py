"""hand_unrolled_fori is an exact stand-in for lax.fori_loop: every body and bound kind
fori_loop accepts, inside and outside Pallas kernels, under jit, vmap and grad.

The two run side by side on bodies written the way users write them; results must be
equal (ints bit for bit, floats to float32 rounding), dtypes and weak types included,
and where fori_loop raises, hand_unrolled_fori raises the same error."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxperf import hand_unrolled_fori

XS = np.arange(64, dtype=np.float32) / 7.0  # NumPy: JAX must not start at import (conftest sets devices)


def scalar_body(i, x):
    return x * 0.5 + i


def tuple_body(i, carry):
    total, trace = carry
    return total * 3 + i + 1, trace.at[i % trace.shape[0]].add(i * 7 + total % 5)


def dict_body(i, state):
    return {"acc": state["acc"] + jnp.sin(i.astype(jnp.float32)), "steps": state["steps"] + 1}


def indexing_body(i, acc):
    return acc + jnp.asarray(XS)[i % XS.shape[0]] * jnp.where(i % 2 == 0, 1.0, -1.0)


def int8_body(i, c):
    return c + i  # a weakly typed index keeps the int8 carry int8


BODIES = {
    "scalar": (scalar_body, lambda: jnp.float32(1.0)),
    "tuple": (tuple_body, lambda: (jnp.int32(2), jnp.arange(5, dtype=jnp.int32))),
    "dict": (dict_body, lambda: {"acc": jnp.zeros(3), "steps": jnp.int32(0)}),
    "indexing": (indexing_body, lambda: jnp.zeros(())),
    "int8": (int8_body, lambda: jnp.int8(3)),
}


def assert_same(got, want):
    got_leaves, got_tree = jax.tree.flatten(got)
    want_leaves, want_tree = jax.tree.flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape and g.weak_type == w.weak_type
        if jnp.issubdtype(w.dtype, jnp.floating):
            np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, w)


BOUND_KINDS = ["python", "numpy32", "numpy64", "concrete", "traced", "traced_upper", "traced_int16"]


def _bounds(kind, lower, upper):
    """(args to pass, a function turning them into the bounds inside the traced function)."""
    cast = {
        "python": lambda v: v,
        "numpy32": np.int32,
        "numpy64": np.int64,
        "concrete": jnp.int32,
    }
    if kind in cast:
        lo, hi = cast[kind](lower), cast[kind](upper)
        return (), lambda: (lo, hi)
    if kind == "traced":
        return (jnp.int32(lower), jnp.int32(upper)), None
    if kind == "traced_upper":
        return (jnp.int32(upper),), lambda hi: (lower, hi)  # Python lower, traced upper
    return (jnp.int16(lower), jnp.int16(upper)), None


def _outcome(thunk):
    try:
        return thunk()
    except Exception as err:  # noqa: BLE001 - the error is the outcome to compare
        return err


def _run(loop, kind, lower, upper, body, init, **kw):
    args, make = _bounds(kind, lower, upper)

    def f(*bounds):
        lo, hi = make(*bounds) if make else bounds
        return loop(lo, hi, body, init(), **kw)

    return jax.jit(f)(*args)


@settings(
    max_examples=int(os.environ.get("JAXPERF_HYPOTHESIS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    body=st.sampled_from(sorted(BODIES)),
    kind=st.sampled_from(BOUND_KINDS),
    lower=st.integers(-6, 12),
    trip=st.integers(-4, 20),  # <= 0: no step
    unroll=st.integers(1, 25),  # > trip and not dividing trip included
)
def test_equals_fori_loop_for_every_bound_kind(body, kind, lower, trip, unroll):
    fn, init = BODIES[body]
    want = _outcome(lambda: _run(jax.lax.fori_loop, kind, lower, lower + trip, fn, init))
    got = _outcome(lambda: _run(hand_unrolled_fori, kind, lower, lower + trip, fn, init, unroll=unroll))
    if isinstance(want, Exception):  # e.g. an int8 carry plus a non-weak int32 index changes the carry's type
        assert type(got) is type(want) and str(got).splitlines()[0] == str(want).splitlines()[0]
    else:
        assert_same(got, want)


@pytest.mark.parametrize("unroll", [1, 3, 8])
def test_outside_jit(unroll):
    for name, (fn, init) in BODIES.items():
        assert_same(hand_unrolled_fori(2, 9, fn, init(), unroll), jax.lax.fori_loop(2, 9, fn, init())), name


@pytest.mark.parametrize("unroll", [1, 2, 5])
def test_under_vmap_with_batched_carry_and_bounds(unroll):
    inits = jnp.arange(4, dtype=jnp.float32)
    lowers, uppers = jnp.array([0, 2, -3, 5]), jnp.array([7, 2, 4, 1])  # incl. zero and negative trips

    def run(loop, **kw):
        return jax.jit(jax.vmap(lambda lo, hi, x: loop(lo, hi, scalar_body, x, **kw)))(lowers, uppers, inits)

    assert_same(run(hand_unrolled_fori, unroll=unroll), run(jax.lax.fori_loop))
    static = jax.vmap(lambda x: hand_unrolled_fori(1, 8, scalar_body, x, unroll))(inits)
    assert_same(static, jax.vmap(lambda x: jax.lax.fori_loop(1, 8, scalar_body, x))(inits))


@pytest.mark.parametrize("unroll", [1, 3, 16])
def test_grad_with_static_bounds(unroll):
    def loss(loop, w, **kw):
        return loop(0, 10, lambda i, x: jnp.sin(x * w) + i * w, w, **kw)

    for order in (jax.grad, jax.jacfwd):
        got = order(lambda w: loss(hand_unrolled_fori, w, unroll=unroll))(0.3)
        want = order(lambda w: loss(jax.lax.fori_loop, w))(0.3)
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("unroll", [1, 4])
def test_grad_with_traced_bounds_fails_like_fori_loop(unroll):
    # fori_loop with traced bounds is a while loop: forward mode works, reverse mode raises.
    loops = {"hand": lambda lo, hi, b, c: hand_unrolled_fori(lo, hi, b, c, unroll), "fori": jax.lax.fori_loop}

    def loss(name, w, n):
        return loops[name](0, n, lambda i, x: x * w + 1.0, w)

    fwd = {name: jax.jit(jax.jacfwd(loss, argnums=1), static_argnums=0)(name, 0.5, 6) for name in loops}
    np.testing.assert_allclose(fwd["hand"], fwd["fori"], rtol=1e-6)
    errors = {}
    for name in loops:
        with pytest.raises(ValueError) as info:
            jax.jit(jax.grad(loss, argnums=1), static_argnums=0)(name, 0.5, 6)
        errors[name] = str(info.value).splitlines()[0]
    assert errors["hand"] == errors["fori"] and "Reverse-mode differentiation does not work" in errors["fori"]


def test_mismatched_bound_types_fail_like_fori_loop():
    def run(loop, **kw):
        return jax.jit(lambda lo, hi: loop(lo, hi, scalar_body, 0.0, **kw))(jnp.int16(0), jnp.int32(5))

    with pytest.raises(TypeError) as want:
        run(jax.lax.fori_loop)
    with pytest.raises(TypeError) as got:
        run(hand_unrolled_fori, unroll=2)
    assert str(got.value) == str(want.value)


def test_traced_bounds_unroll_where_fori_loop_cannot():
    f = jax.jit(lambda n: hand_unrolled_fori(0, n, scalar_body, 1.0, 4))
    with pytest.raises(
        ValueError, match="Can only use `unroll` in `fori_loop` if the loop bounds are statically known"
    ):
        jax.jit(lambda n: jax.lax.fori_loop(0, n, scalar_body, 1.0, unroll=4))(7)
    np.testing.assert_allclose(f(7), jax.lax.fori_loop(0, 7, scalar_body, 1.0), rtol=1e-6)


@pytest.mark.parametrize("traced", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, 8])
def test_inside_a_pallas_kernel(traced, unroll):
    from jax.experimental import pallas as pl

    def kernel(loop, x_ref, o_ref):
        upper = pl.program_id(0) + 5 if traced else 5  # a traced bound inside the kernel

        def body(i, acc):
            return acc + x_ref[pl.ds(i % 4 * 8, 8), :] * (i + 1).astype(jnp.float32)

        o_ref[...] = loop(0, upper, body, jnp.zeros((8, 16), jnp.float32))

    def run(loop):
        call = pl.pallas_call(
            lambda x_ref, o_ref: kernel(loop, x_ref, o_ref),
            out_shape=jax.ShapeDtypeStruct((8, 16), jnp.float32),
            grid=(2,),
            interpret=True,
        )
        return jax.jit(call)(jnp.arange(32 * 16, dtype=jnp.float32).reshape(32, 16) / 100)

    assert_same(run(lambda lo, hi, b, c: hand_unrolled_fori(lo, hi, b, c, unroll)), run(jax.lax.fori_loop))
