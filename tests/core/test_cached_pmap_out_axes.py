"""cached_filter_pmap classifies outputs by the caller's out_axes, as eqx.filter_pmap does,
not by their type (issue 20: with ``out_axes=0`` a Python scalar output came back as the
scalar where Equinox returns it mapped), and an error raised while tracing is raised once,
from one trace. Every out_axes form against every kind of output, side by side with
Equinox: the same values, or the same error (type and message). A core test: jaxperf's
public API, jax, equinox, numpy, pytest."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import N, assert_same, assert_same_outcome, outcome

from jaxperf import cached_filter_pmap

FAMILIES = {
    "arrays and python scalars": lambda x: (x * 2, jax.lax.psum(x, "i"), 3, 2.5, True, None),
    "with static outputs": lambda x: (x, jax.lax.psum(x, "i"), None, "tag", jnp.tanh),
    "a dict": lambda x: {"a": x, "n": 1, "z": None, "sum": jax.lax.psum(x, "i")},
}
SPECS = {
    "0": 0,
    "-1": -1,
    "1": 1,
    "2 (out of range)": 2,
    "True": True,
    "None": None,
    "if_array(0)": eqx.if_array(0),
    "if_array(1)": eqx.if_array(1),
    "tuple prefix": (0, None, 0, None, 0, None),
    "tuple, None on statics": (0, None, None, None, None),
    "too short a tuple": (0, 0),
    "list prefix": [0, None, 0, None, 0, None],
    "dict prefix": {"a": 0, "n": 0, "z": None, "sum": None},
    "callable 0": lambda leaf: 0,
    "callable if array": lambda leaf: 0 if eqx.is_array(leaf) else None,
    "callable None": lambda leaf: None,
    "callable returning a string": lambda leaf: "x",
    "a string": "zero",
    "a float": 2.5,
}


@pytest.mark.parametrize("spec", list(SPECS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_out_axes_form_on_every_kind_of_output(family, spec):
    fun, out_axes = FAMILIES[family], SPECS[spec]
    x = jnp.arange(N * 3.0).reshape(N, 3)
    ours = cached_filter_pmap(fun, out_axes=out_axes, axis_name="i")
    expected = outcome(eqx.filter_pmap(fun, out_axes=out_axes, axis_name="i"), x)
    assert_same_outcome(expected, outcome(ours, x))
    assert ours.stats["fallbacks"] == 0
    if expected[0] == "value":
        assert_same_outcome(expected, outcome(ours, x))  # and from the cache


def test_the_issue_s_cases():
    f = lambda a: (a, 3, 2.5)  # noqa: E731
    x = jnp.arange(float(N))
    for out_axes in (0, (0, 0, 0)):
        got = cached_filter_pmap(f, out_axes=out_axes)(x)
        assert_same(eqx.filter_pmap(f, out_axes=out_axes)(x), got)
        assert got[1].tolist() == [3] * N and got[2].tolist() == [2.5] * N
    nothing_mapped = lambda s: s * 2  # noqa: E731
    got = cached_filter_pmap(nothing_mapped, out_axes=0, axis_size=N)(3.0)
    assert_same(eqx.filter_pmap(nothing_mapped, out_axes=0, axis_size=N)(3.0), got)
    assert got.tolist() == [6.0] * N


class Traced:
    """Counts its traces; raises ``error`` from inside the trace if given one."""

    def __init__(self, error=None, out=lambda x: (x, 1)):
        self.traces, self.error, self.out = 0, error, out

    def __call__(self, x):
        self.traces += 1
        if self.error is not None:
            raise self.error
        return self.out(x)


@pytest.mark.parametrize(
    "case, out_axes",
    [
        ("the function raises", eqx.if_array(0)),
        ("the function raises", (0, None)),
        ("an int axis on a string output", 0),
        ("an out_axes Equinox refuses", lambda leaf: "x"),
        ("fine", eqx.if_array(0)),
        ("fine", (0, None)),
    ],
)
def test_traced_once_and_raised_once_no_more_often_than_equinox(case, out_axes):
    def make():
        if case == "the function raises":
            return Traced(KeyError("boom"))
        if case == "an int axis on a string output":
            return Traced(out=lambda x: (x, "tag"))
        return Traced()

    x = jnp.ones((N, 2))
    theirs, ours = make(), make()
    expected = outcome(eqx.filter_pmap(theirs, out_axes=out_axes), x)
    got = outcome(cached_filter_pmap(ours, out_axes=out_axes), x)
    assert_same_outcome(expected, got)
    assert ours.traces <= theirs.traces and ours.traces <= 2  # a vmap probe for an out_axes pytree
    if case == "the function raises":
        assert ours.traces == 1
        with pytest.raises(KeyError) as info:
            cached_filter_pmap(make())(x)
        assert info.value.__context__ is None and info.value.__cause__ is None  # no second traceback


def test_rewrapping_a_function_traces_it_once_and_keeps_no_strong_reference():
    import gc
    import weakref

    counted = Traced()

    def f(x):
        return counted(x)

    for _ in range(3):
        cached_filter_pmap(f)(jnp.ones((N, 2)))
    assert counted.traces == 1  # as eqx.filter_pmap: wrappers of one function share its compiled paths
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None
