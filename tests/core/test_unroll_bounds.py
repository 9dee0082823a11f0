"""hand_unrolled_fori against lax.fori_loop on the bounds a reader's kernel can pass (issue 20).

The trip count used to be taken in the bounds' own dtype, so it wrapped around:
``uint8`` 5 .. 2 ran 253 steps, ``int8`` 100 .. -100 ran 56, ``uint32`` 5 .. 2 about 2**32.
Here every integer dtype JAX has (signed and unsigned, 8 to 64 bits under x64) runs with
lower above, equal to and below upper, near each dtype's limits, traced, for several
``unroll``; each run must give what ``lax.fori_loop`` gives: the number of steps, the sum of
the indices the body saw (in int64/int32 so it cannot wrap), and the index dtype and weak type.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxperf import hand_unrolled_fori

UNROLLS = (2, 3, 4, 7, 127, 128, 200)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")


@pytest.fixture
def x64():
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def _pairs(dtype: str) -> list[tuple[int, int]]:
    """(lower, upper) pairs: reversed, equal, short and long spans, near each limit."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    pairs = [(5, 2), (2, 5), (3, 3), (0, 0), (0, 9), (9, 0)]
    pairs += [(lo, lo + 9), (hi - 9, hi), (hi, lo), (hi, hi), (lo, lo), (hi - 1, lo + 1)]
    pairs += [(hi, hi - 5), (lo + 5, lo)]
    if info.bits <= 16:  # the whole range: every step runs, lower + i * unroll overflows on the way
        pairs += [(lo, hi), (lo + 1, hi - 1)]
    if info.min < 0:
        pairs += [(100 if info.bits == 8 else 1000, -100 if info.bits == 8 else -1000), (-100, 100)]
    return pairs


def _compiled(loop, dtype, unroll=None):
    """One jitted loop per (loop, dtype, unroll), traced bounds: returns (steps, sum of the
    indices seen, wide so it cannot wrap) and records the index's (dtype, weak type)."""
    kinds = set()
    wide = jnp.int64 if jax.config.jax_enable_x64 else jnp.int32

    def body(j, carry):
        kinds.add((jax.typeof(j).dtype, jax.typeof(j).weak_type))
        steps, total = carry
        return steps + 1, total + j.astype(wide)

    run = loop if unroll is None else (lambda a, b, f, c: loop(a, b, f, c, unroll))
    init = (jnp.zeros((), wide), jnp.zeros((), wide))
    f = jax.jit(lambda a, b: run(a, b, body, init))
    return lambda lo, hi: tuple(int(x) for x in f(np.array(lo, dtype), np.array(hi, dtype))), kinds


def _check_dtype(dtype, unroll):
    ref, ref_kinds = _compiled(lax.fori_loop, dtype)
    got, got_kinds = _compiled(hand_unrolled_fori, dtype, unroll)
    for lower, upper in _pairs(dtype):
        if upper - lower > 70_000:
            continue  # 2**32 steps or more: lax.fori_loop itself would not return
        want = ref(lower, upper)
        assert got(lower, upper) == want, f"{dtype} {lower} .. {upper}, unroll={unroll}: lax.fori_loop {want}"
        assert want[0] == max(upper - lower, 0), (dtype, lower, upper)  # the reference itself
    assert got_kinds == ref_kinds == {(np.dtype(dtype), False)}, (got_kinds, ref_kinds)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "uint16", "uint32"])
@pytest.mark.parametrize("unroll", UNROLLS)
def test_traced_bounds_of_every_32_bit_or_narrower_dtype(dtype, unroll):
    _check_dtype(dtype, unroll)


@pytest.mark.parametrize("dtype", SIGNED + UNSIGNED)
@pytest.mark.parametrize("unroll", (2, 4, 200))
def test_traced_bounds_under_x64(x64, dtype, unroll):
    _check_dtype(dtype, unroll)


def test_the_issue_cases():
    def one(a, b, u=2):
        return jax.jit(lambda a, b: hand_unrolled_fori(a, b, lambda j, c: c + 1, 0, u))(a, b)

    assert int(one(jnp.uint8(5), jnp.uint8(2))) == 0  # was 253
    assert int(one(jnp.int8(100), jnp.int8(-100))) == 0  # was 56
    assert int(one(jnp.uint32(5), jnp.uint32(2))) == 0  # was about 2**32 steps
    assert int(one(jnp.int8(-100), jnp.int8(100))) == 200  # 200 does not fit int8


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "uint32"])
def test_python_int_lower_with_a_traced_upper_keeps_fori_loops_index_type(dtype):
    """``fori_loop(0, n, ...)``: the index takes n's dtype, weakly typed as the Python int 0
    (an unsigned n: both refuse, with fori_loop's TypeError)."""
    upper = np.array(9, dtype)

    def run(loop, **kw):
        kinds = []

        def body(j, c):
            kinds.append((jax.typeof(j).dtype, jax.typeof(j).weak_type))
            return c + j  # an int8 carry stays int8 only with a weak or int8 index

        try:
            out = jax.jit(lambda n: loop(0, n, body, jnp.zeros((), dtype), **kw))(upper)
        except TypeError as err:
            return str(err).splitlines()[0]
        return int(out), jax.typeof(out).dtype, set(kinds)

    assert run(hand_unrolled_fori, unroll=4) == run(lax.fori_loop)


@pytest.mark.parametrize("init", [0, 2.5, (1, 2.0), np.float32(1.5)])
@pytest.mark.parametrize("bounds", [(3, 3), (5, 2), (0, 0)])
def test_static_bounds_zero_trips_return_what_fori_loop_returns(init, bounds):
    """Was: the Python scalar itself, where lax.fori_loop returns an Array."""
    body = lambda j, c: jax.tree.map(lambda x: x + 1, c)  # noqa: E731
    got = hand_unrolled_fori(*bounds, body, init, 4)
    want = lax.fori_loop(*bounds, body, init)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert type(g) is type(w) and jax.typeof(g) == jax.typeof(w) and g == w, (g, w)


@pytest.mark.parametrize("unroll", [np.int64(4), np.int32(3), np.uint8(2), 4])
def test_numpy_integer_unroll_is_accepted(unroll):
    got = jax.jit(lambda n: hand_unrolled_fori(0, n, lambda j, c: c + j, 0, unroll))(jnp.int32(10))
    assert int(got) == 45


@pytest.mark.parametrize("unroll", [0, -1, True, np.bool_(True), 2.0, np.float32(2), "4", None, jnp.int32(4)])
def test_a_bad_unroll_is_refused_by_name(unroll):
    with pytest.raises(ValueError, match=r"unroll.*an integer >= 1"):
        hand_unrolled_fori(0, 4, lambda j, c: c, 0, unroll)
