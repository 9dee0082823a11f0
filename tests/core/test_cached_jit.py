"""cached_filter_jit is a drop-in for eqx.filter_jit: each case runs both side by side and
compares outputs (pytree equal, non-array outputs included), errors, donated buffers and
how often each traces. A core test: jaxperf's public API, jax, equinox, numpy, pytest."""

import types
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dropin_checks import assert_same, assert_same_outcome, outcome

import jaxperf
from jaxperf import cached_filter_jit, fixes


def both(fun, **options):
    return eqx.filter_jit(fun, **options), cached_filter_jit(fun, **options)


def test_exported_at_the_package_root():
    assert jaxperf.cached_filter_jit is fixes.cached_filter_jit
    assert "cached_filter_jit" in dir(jaxperf)


class Inner(eqx.Module):
    w: jax.Array
    name: str = eqx.field(static=True)


def rich(x, s, m, *rest, k=2.0, **extra):
    """Every kind of output: arrays, Python scalars, None, strings, functions, numpy, Modules."""
    y = x * k + m.w.sum()
    return {
        "y": y,
        "s": s,
        "none": None,
        "tag": m.name,
        "fn": jnp.tanh,
        "np": np.arange(3.0),
        "model": m,
        "rest": rest,
        "extra": extra,
        "int": 3,
    }


CALLS = {
    "positional": lambda m: ((jnp.ones(3), 2, m), {}),
    "keywords bound as Equinox binds": lambda m: ((jnp.ones(3),), {"s": 2.5, "m": m, "k": 3.0}),
    "var positional and var keyword": lambda m: ((jnp.ones(3), "a", m, jnp.zeros(2), None), {"z": (1, "b")}),
    "numpy and weak inputs": lambda m: ((np.ones(3, np.float32), True, m), {"k": jnp.asarray(1.5)}),
    "bfloat16 and int arrays": lambda m: ((jnp.ones(3, jnp.bfloat16), 0, m), {"k": jnp.int32(2)}),
    "empty arrays": lambda m: ((jnp.ones((0,)), 1.0, m), {}),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_same_outputs_as_filter_jit(case):
    m = Inner(jnp.arange(2.0), "inner")
    args, kwargs = CALLS[case](m)
    fun = types.FunctionType(rich.__code__, rich.__globals__)  # paths of its own: counts of its own
    fun.__kwdefaults__ = rich.__kwdefaults__
    expected, ours = both(fun)
    for _ in range(2):
        assert_same(expected(*args, **kwargs), ours(*args, **kwargs))
    assert ours.stats == {"hits": 1, "misses": 1, "fallbacks": 0}


def test_same_errors_as_filter_jit_for_bad_calls_and_options():
    expected, ours = both(lambda x, y, *, z=1: x + y)
    x = jnp.ones(2)
    for args, kwargs in [((x,), {}), ((x, x, x), {}), ((x, x), {"w": 1}), ((x,), {"x": x, "y": x})]:
        assert_same_outcome(outcome(expected, *args, **kwargs), outcome(ours, *args, **kwargs))
    for options in ({"donate": "maybe"}, {"static_argnums": (0,)}, {"donate_argnums": (0,)}):
        assert_same_outcome(
            outcome(eqx.filter_jit, jnp.sin, **options), outcome(cached_filter_jit, jnp.sin, **options)
        )


def test_unhashable_static_arguments_are_equinox_s_to_refuse():
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    expected, ours = both(lambda x, u: x)
    u, x = Unhashable(), jnp.ones(2)
    assert_same_outcome(outcome(expected, x, u), outcome(ours, x, u))
    assert ours.fallback_reasons == {"unhashable non-array leaf": 1}
    assert fixes.jit_fallback_counts()["unhashable non-array leaf"] >= 1


class Scaler(eqx.Module):
    weight: jax.Array
    label: str = eqx.field(static=True)

    @cached_filter_jit
    def __call__(self, x):
        return self.weight * x, self.label

    @cached_filter_jit(donate="all-except-first")
    def step(self, x):
        return self.weight + x


class EqxScaler(eqx.Module):
    weight: jax.Array
    label: str = eqx.field(static=True)

    @eqx.filter_jit
    def __call__(self, x):
        return self.weight * x, self.label

    @eqx.filter_jit(donate="all-except-first")
    def step(self, x):
        return self.weight + x


def test_methods_are_bound_through_the_instance_and_keep_their_name():
    ours, theirs = Scaler(jnp.arange(3.0), "s"), EqxScaler(jnp.arange(3.0), "s")
    assert_same(theirs(jnp.ones(3)), ours(jnp.ones(3)))
    x_ours, x_theirs = jnp.ones(3), jnp.ones(3)
    assert_same(theirs.step(x_theirs), ours.step(x_ours))
    assert not ours.weight.is_deleted() and x_ours.is_deleted() == x_theirs.is_deleted()  # self kept
    assert type(Scaler.__call__).__name__ == "CachedFilterJit" and Scaler.step.__name__ == "step"

    @cached_filter_jit
    def plain(x):
        """Doc."""
        return x + 1

    assert plain.__name__ == "plain" and plain.__doc__ == "Doc." and plain.__wrapped__.__name__ == "plain"


def test_a_module_with_arrays_as_the_function():
    linear = eqx.nn.Linear(3, 2, key=jax.random.PRNGKey(0))
    expected, ours = both(linear)
    assert_same(expected(jnp.ones(3)), ours(jnp.ones(3)))


@pytest.mark.parametrize("donate", ["all", "all-except-first", "warn", "warn-except-first", "none"])
def test_donation_consumes_the_same_buffers_and_warns_alike(donate):
    fun = lambda a, b, c: (a * 2, b.sum())  # noqa: E731 -- b's buffer cannot be reused: a warning
    results = []
    for wrap in both(fun, donate=donate):
        a, b, c = jnp.ones(4), jnp.ones(3), jnp.ones(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = wrap(a, b, c)
        unusable = any("donated buffers were not usable" in str(w.message) for w in caught)
        results.append((out, a.is_deleted(), b.is_deleted(), c.is_deleted(), unusable))
    assert_same(results[0][0], results[1][0])
    assert results[0][1:] == results[1][1:]
    assert results[1][1] is (donate in ("all", "warn"))


def test_ahead_of_time_lower_and_compile_also_from_shape_dtype_structs():
    fun = lambda x, s, *, k: (x * s * k, "tag")  # noqa: E731
    x = jnp.arange(4.0)
    expected, ours = both(fun)
    want = expected.lower(x, 3.0, k=2.0).compile()(x, 3.0, k=2.0)
    assert_same(want, ours.lower(x, 3.0, k=2.0).compile()(x, 3.0, k=2.0))
    lowered = ours.lower(jax.ShapeDtypeStruct((4,), jnp.float32), 3.0, k=2.0)
    assert "func" in lowered.as_text()
    compiled = lowered.compile()
    assert_same(want, compiled(x, 3.0, k=2.0))
    with pytest.raises(TypeError, match="lowered for"):
        compiled(jnp.ones(5), 3.0, k=2.0)


class Counted:
    """A function that counts its traces; ``as_array`` wraps its static argument."""

    def __init__(self):
        self.traces = 0

    def __call__(self, x, s=1, m=None):
        self.traces += 1
        return x * 2, s, jnp.asarray(s), m


def _patterns(calls):
    x, x5, weak = jnp.ones(3), jnp.ones(5), jnp.full(3, 1.0)
    assert weak.weak_type and not x.weak_type
    m1, m2, m3 = Inner(jnp.ones(2), "a"), Inner(jnp.zeros(2), "a"), Inner(jnp.ones(2), "b")
    return {
        "repeated": [((x,), {})] * 3,
        "new shape": [((x,), {}), ((x5,), {}), ((x,), {})],
        "weak then strong": [((weak,), {}), ((x,), {}), ((weak,), {})],
        "python scalars of one type": [((x, 1), {}), ((x, 2), {}), ((x, 1), {})],
        "keyword or positional": [((x, 2), {}), ((x,), {"s": 2}), ((), {"x": x, "s": 2})],
        "static fields": [((x, 1, m1), {}), ((x, 1, m2), {}), ((x, 1, m3), {})],
    }[calls]


@pytest.mark.parametrize(
    "calls",
    [
        "repeated",
        "new shape",
        "weak then strong",
        "python scalars of one type",
        "keyword or positional",
        "static fields",
    ],
)
@pytest.mark.parametrize("donate", ["none", "all"])
def test_traces_no_more_often_than_filter_jit(calls, donate):
    counts = []
    for jit in (eqx.filter_jit, cached_filter_jit):
        fun = Counted()
        wrapped = jit(lambda x, s=1, m=None: fun(x, s, m), donate=donate)  # noqa: B023
        outs = []
        for args, kwargs in _patterns(calls):
            args = tuple(jnp.array(a) if isinstance(a, jax.Array) else a for a in args)  # fresh: donated
            kwargs = {k: jnp.array(v) if isinstance(v, jax.Array) else v for k, v in kwargs.items()}
            outs.append(wrapped(*args, **kwargs))
        counts.append((fun.traces, outs))
    (eqx_traces, eqx_outs), (our_traces, our_outs) = counts
    for want, got in zip(eqx_outs, our_outs):
        assert_same(want, got)
    assert our_traces <= eqx_traces


def test_rewrapping_a_function_does_not_trace_it_again():
    fun = Counted()

    def f(x):
        return fun(x)

    for _ in range(3):
        cached_filter_jit(f)(jnp.ones(2))
    assert fun.traces == 1


def test_equal_python_scalars_of_other_types_trace_apart_where_equinox_reuses_one_trace():
    """The one pattern that traces more than Equinox: 1, 1.0 and True are equal in Python;
    Equinox reuses the trace of the first and returns its outputs (a stale static output and
    an int32 array for True), cached_filter_jit traces each, as jax.jit's static arguments do."""
    f = lambda x, s: (x, s, jnp.asarray(s))  # noqa: E731
    expected, ours = both(f)
    x = jnp.ones(2)
    for s in (1, 1.0, True):
        got = ours(x, s)
        assert_same(f(x, s), got)
        assert type(got[1]) is type(s)
    assert ours.stats["misses"] == 3
    expected(x, 1)
    stale = expected(x, True)
    assert stale[1] == 1 and type(stale[1]) is int and stale[2].dtype == jnp.int32  # Equinox 0.13.8


def test_under_jax_transformations_as_filter_jit():
    def f(x, s):
        return jnp.sin(x) * s, s

    x = jnp.arange(3.0)
    outcomes = []
    for g in both(f):
        outcomes.append(
            [
                outcome(jax.grad(lambda x: g(x, 2.0)[0].sum()), x),  # noqa: B023
                outcome(jax.vmap(lambda x: g(x, 2.0)[0]), jnp.ones((2, 3))),  # noqa: B023
                outcome(jax.jit(lambda x: g(x, 2.0)), x),  # noqa: B023
                outcome(eqx.filter_jit(lambda x: g(x, 2.0)), x),  # noqa: B023
                outcome(jax.eval_shape, lambda x: g(x, 2.0)[0], x),  # noqa: B023
                outcome(lambda: jax.lax.scan(lambda c, _: (g(c, 1.0)[0], None), x, length=3)[0]),  # noqa: B023
            ]
        )
    for want, got in zip(*outcomes):
        assert_same_outcome(want, got)


def test_an_error_in_the_function_is_raised_once_with_no_second_trace():
    traces = []

    def bad(x):
        traces.append(1)
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom") as info:
        cached_filter_jit(bad)(jnp.ones(2))
    assert len(traces) == 1 and info.value.__context__ is None and info.value.__cause__ is None


def test_lower_with_a_shape_dtype_struct_as_a_static_argument_as_equinox():
    """Was: the compiled form refused the ShapeDtypeStruct it was lowered with (lowered as an
    abstract array, called with it as a static argument)."""
    fun = lambda x, spec: (x.astype(spec.dtype), spec)  # noqa: E731
    x, spec = jnp.ones(2), jax.ShapeDtypeStruct((3,), jnp.int32)
    expected, ours = both(fun)
    want = expected.lower(x, spec).compile()(x, spec)
    compiled = ours.lower(x, spec).compile()
    assert_same(want, compiled(x, spec))
    assert_same(want, compiled(x, spec))  # the static form, compiled once


def test_patched_in_under_equinox_s_name_it_still_falls_back_to_equinox(monkeypatch):
    """What a reader does to adopt it: ``eqx.filter_jit = cached_filter_jit``. Was: its
    hand-overs to Equinox went to itself, a RecursionError."""

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    fun, unhashable = (lambda x, u: x), Unhashable()
    want = outcome(eqx.filter_jit(fun), jnp.ones(2), unhashable)
    monkeypatch.setattr(eqx, "filter_jit", cached_filter_jit)
    assert_same_outcome(want, outcome(eqx.filter_jit(fun), jnp.ones(2), unhashable))
