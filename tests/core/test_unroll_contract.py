"""hand_unrolled_fori keeps lax.fori_loop's carry contract on every path and, with static
bounds, its bits (issue 28). Was: with static bounds and ``unroll`` above the trip count the
body ran as plain Python, so an int32 carry that became float came back as float (fori_loop
raises TypeError), a Python-scalar carry came back as a Python scalar, and the remainder
steps, run op by op when called eagerly, could differ by 1 ulp from
``lax.fori_loop(unroll=u)``, which runs as one compiled program. A core test: jaxperf's
public API, jax, numpy, pytest."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from jaxperf import hand_unrolled_fori

BF16 = jnp.ones((), jnp.bfloat16)
#: (body, init) pairs: every way a carry's type can change, or not, in a step
CARRIES = {
    "int32 becomes float": (lambda j, c: c * 1.5, jnp.int32(1)),
    "python int": (lambda j, c: c + 1, 0),
    "python float": (lambda j, c: c * 1.5, 1.0),
    "weak becomes strong": (lambda j, c: c + jnp.float32(1), 0.0),
    "strong becomes weak": (lambda j, c: jnp.asarray(2.0), jnp.float32(1)),
    "weak float32 meets bfloat16": (lambda j, c: c + BF16, 0.0),
    "python int meets a float": (lambda j, c: c + 0.5, 0),
    "shape changes": (lambda j, c: jnp.stack([c, c]), jnp.float32(1)),
    "structure changes": (lambda j, c: (c, c), jnp.float32(1)),
    "numpy init": (lambda j, c: c + 1, np.float32(1)),
    "a tuple of python scalars": (lambda j, c: (c[0] + 1, c[1] * 2.0), (1, 2.0)),
    "the body returns a python float": (lambda j, c: 3.0, 1.0),
    "int8 plus the index": (lambda j, c: c + j, jnp.int8(0)),
    "a None leaf": (lambda j, c: (c[0] + 1, None), (1.0, None)),
}
#: (lower, upper, unroll): unroll above the trip count, equal to it (one iteration holds every
#: step: fori_loop inlines it), and a loop with remainder steps
LAYOUTS = [(0, 3, 5), (0, 4, 4), (1, 8, 3)]


def _outcome(run):
    try:
        out = run()
    except TypeError as err:
        return "TypeError", str(err).splitlines()[0]  # fori_loop's first line, word for word
    leaves, treedef = jax.tree.flatten(out)
    kinds = [(type(x).__name__, str(jax.typeof(x))) for x in leaves]
    return treedef, kinds, [np.asarray(x).tobytes() for x in leaves]


@pytest.mark.parametrize("layout", [LAYOUTS[0], LAYOUTS[-1]], ids=str)
@pytest.mark.parametrize("carry", list(CARRIES))
def test_static_bounds_keep_fori_loops_carry_contract(carry, layout):
    """Eagerly (the static path runs as one compiled program there, as inside a jit)."""
    body, init = CARRIES[carry]
    lower, upper, unroll = layout
    want = _outcome(lambda: lax.fori_loop(lower, upper, body, init, unroll=unroll))
    assert _outcome(lambda: hand_unrolled_fori(lower, upper, body, init, unroll)) == want


@pytest.mark.parametrize(
    "carry", ["int32 becomes float", "python float", "structure changes", "int8 plus the index"]
)
def test_traced_bounds_keep_fori_loops_carry_contract(carry):
    body, init = CARRIES[carry]
    run = lambda loop, **kw: jax.jit(lambda n: loop(0, n, body, init, **kw))(jnp.int32(7))  # noqa: E731
    assert _outcome(lambda: run(hand_unrolled_fori, unroll=3)) == _outcome(lambda: run(lax.fori_loop))


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
def test_static_bounds_are_bitwise_equal_to_fori_loop_unrolled(mode):
    """A step whose rounding depends on how XLA fuses it (eagerly: 1 ulp apart before)."""

    def step(j, c):
        return jnp.sin(c * 1.1 + j * 0.37) * 1.3 + c / 7.0

    init = jnp.asarray(np.random.default_rng(0).normal(size=(8,)), jnp.float32)
    wrap = {"eager": lambda f: f, "jit": jax.jit, "vmap": lambda f: lambda c: jax.vmap(f)(c[None])[0]}[mode]
    for lower, upper, unroll in LAYOUTS:
        want = wrap(lambda c: lax.fori_loop(lower, upper, step, c, unroll=unroll))(init)  # noqa: B023
        got = wrap(lambda c: hand_unrolled_fori(lower, upper, step, c, unroll))(init)  # noqa: B023
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (lower, upper, unroll)
