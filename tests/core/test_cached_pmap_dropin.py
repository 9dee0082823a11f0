"""cached_filter_pmap is a drop-in wherever eqx.filter_pmap's documented uses work:
each case runs both side by side and compares outputs, errors and side effects.
A core test: jaxperf's public API, jax, equinox, numpy and pytest only."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dropin_checks import N, assert_same, enable_x64

import jaxperf
from jaxperf import cached_filter_pmap, fixes


def both(fun, **options):
    """(eqx.filter_pmap, cached_filter_pmap) of the same function and options."""
    return eqx.filter_pmap(fun, **options), cached_filter_pmap(fun, **options)


def test_exported_at_the_package_root():
    assert jaxperf.cached_filter_pmap is fixes.cached_filter_pmap
    assert {"cached_filter_pmap", "PackedState", "packed_pmap", "packed_jit"} <= set(dir(jaxperf))


def test_decorators_with_and_without_arguments_keep_the_name():
    @cached_filter_pmap
    def plain(x):
        """Doc."""
        return x + 1

    @cached_filter_pmap(axis_name="i", in_axes=(0, None))
    def reduced(x, scale):
        return jax.lax.psum(x, "i") * scale

    assert plain(jnp.zeros(N)).tolist() == [1.0] * N
    assert reduced(jnp.ones(N), 2.0).tolist() == [2.0 * N] * N
    assert plain.__name__ == "plain" and plain.__doc__ == "Doc." and plain.__wrapped__.__name__ == "plain"


class Scaler(eqx.Module):
    weight: jax.Array
    label: str = eqx.field(static=True)

    @cached_filter_pmap
    def __call__(self, x):
        return self.weight * x, self.label

    @cached_filter_pmap(in_axes=dict(self=None), axis_name="i")
    def total(self, x):
        return jax.lax.psum(self.weight * x, "i")


class EqxScaler(eqx.Module):
    weight: jax.Array
    label: str = eqx.field(static=True)

    @eqx.filter_pmap
    def __call__(self, x):
        return self.weight * x, self.label

    @eqx.filter_pmap(in_axes=dict(self=None), axis_name="i")
    def total(self, x):
        return jax.lax.psum(self.weight * x, "i")


def test_methods_and_call_of_a_module_bound_through_the_instance():
    x = jnp.arange(N * 3.0).reshape(N, 3)
    ours = Scaler(jnp.stack([jnp.arange(3.0)] * N), "s")  # __call__ maps self's arrays (default)
    theirs = EqxScaler(ours.weight, "s")
    assert_same(theirs(x), ours(x))
    assert_same(theirs(x), ours(x))
    shared = Scaler(jnp.arange(3.0), "s")  # total broadcasts self (in_axes by name)
    assert_same(EqxScaler(shared.weight, "s").total(x), shared.total(x))
    assert type(Scaler.__call__).__name__ == "CachedFilterPmap"  # unbound access is the wrapper


@pytest.mark.parametrize(
    "in_axes",
    [dict(y=None), dict(x=1), {}, (None, 0), eqx.if_array(0), 0, (eqx.if_array(1), None)],
    ids=str,
)
def test_in_axes_forms(in_axes):
    def fun(x, y):
        return x * 2, y

    x = (
        jnp.arange(N * 2.0).reshape(N, 2)
        if in_axes not in (dict(x=1), (eqx.if_array(1), None))
        else jnp.ones((2, N))
    )
    y = jnp.arange(float(N)) if in_axes not in (dict(y=None), (eqx.if_array(1), None)) else jnp.ones(3)
    if in_axes == (None, 0):
        x = jnp.ones(2)
    expected, ours = both(fun, in_axes=in_axes)
    assert_same(expected(x, y), ours(x, y))
    assert ours.stats["fallbacks"] == 0


@pytest.mark.parametrize(
    "out_axes", [eqx.if_array(1), (1, 0), (None, eqx.if_array(0)), {"a": 0, "b": None}], ids=str
)
def test_out_axes_forms(out_axes):
    def fun(x):
        s = jax.lax.psum(x.sum(), "i")
        if isinstance(out_axes, dict):
            return {"a": x[:, None] * 2, "b": s}
        return x[:, None] * 2, s * jnp.ones(2)

    x = jnp.arange(N * 3.0).reshape(N, 3)
    expected, ours = both(fun, out_axes=out_axes, axis_name="i")
    assert_same(expected(x), ours(x))
    assert ours.stats["fallbacks"] == 0


@pytest.mark.parametrize("donate", ["all", "warn", "none"])
def test_donation_consumes_the_same_inputs(donate):
    place = jax.pmap(lambda t: t)
    fun = lambda m, x: (m * 2, x.sum())  # noqa: E731
    results = []
    for wrap in both(fun, donate=donate):
        m, x = place(jnp.ones((N, 4))), place(jnp.ones((N, 3)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = wrap(m, x)
        unusable = any("donated buffers were not usable" in str(w.message) for w in caught)
        results.append((out, m.is_deleted(), x.is_deleted(), unusable))
    assert_same(results[0][0], results[1][0])
    assert results[0][1:] == results[1][1:]  # same buffers consumed, same warning (only for "warn")
    assert results[1][1] is (donate != "none") and results[1][3] is (donate == "warn")


def test_ahead_of_time_lower_and_compile():
    fun = lambda x, s: (x * s, "tag")  # noqa: E731
    x = jnp.arange(N * 2.0).reshape(N, 2)
    expected, ours = both(fun)
    lowered = ours.lower(x, 3.0)
    assert "func" in lowered.as_text()
    compiled = lowered.compile()
    assert_same(expected.lower(x, 3.0).compile()(x, 3.0), compiled(x, 3.0))
    with pytest.raises(TypeError, match="lowered for"):
        compiled(jnp.ones((N, 5)), 3.0)


def test_weak_and_strong_types_get_their_own_non_array_outputs():
    fun = lambda x, y: (x + y, (x + y).dtype)  # noqa: E731 -- the dtype is a non-array output
    x = jnp.ones((N, 2), jnp.bfloat16)
    weak, strong = jnp.full((N, 2), 1.0), jnp.ones((N, 2), jnp.float32)
    assert weak.weak_type and not strong.weak_type
    expected, ours = both(fun)
    for y in (weak, strong, weak, strong):
        assert_same(expected(x, y), ours(x, y))
    assert ours(x, weak)[1] == jnp.bfloat16 and ours(x, strong)[1] == jnp.float32
    assert ours.stats["misses"] == 2  # one compiled path per weak type, as JAX compiles


def test_x64_state_gets_its_own_non_array_outputs():
    fun = lambda x: (x, jnp.arange(3).dtype)  # noqa: E731 -- int64 under x64, int32 without
    x = np.ones((N, 2), np.float32)
    expected, ours = both(fun)
    for x64 in (True, False, True, False):
        with enable_x64(x64):
            got, want = ours(x), expected(x)
            assert_same(want, got)
            assert got[1] == (jnp.int64 if x64 else jnp.int32)
    assert ours.stats == {"hits": 2, "misses": 2, "fallbacks": 0}


def error(call, *args, **kwargs):
    """(type, message) of what ``call(*args, **kwargs)`` raises."""
    with pytest.raises(Exception) as info:
        call(*args, **kwargs)
    return type(info.value), str(info.value)


def test_same_errors_as_filter_pmap_for_bad_input():
    fun = lambda x, y=1.0: x * y  # noqa: E731
    for options in ({"donate": "maybe"}, {"donate_argnums": (0,)}):
        assert error(cached_filter_pmap, fun, **options) == error(eqx.filter_pmap, fun, **options)
    expected, ours = both(fun)
    assert error(ours, jnp.ones(N), y=2.0) == error(expected, jnp.ones(N), y=2.0)  # keyword arguments
    mismatched = (jnp.ones(N), jnp.ones(N + 1))  # inconsistent mapped sizes
    assert error(ours, *mismatched) == error(expected, *mismatched)
    assert error(ours, 1.0, 2.0) == error(expected, 1.0, 2.0)  # nothing mapped
    named_expected, named_ours = both(fun, in_axes=dict(z=0))
    assert error(named_ours, jnp.ones(N)) == error(named_expected, jnp.ones(N))
    bad_expected, bad_ours = both(fun, in_axes=("zero", None))
    assert error(bad_ours, jnp.ones(N), 1.0) == error(bad_expected, jnp.ones(N), 1.0)


def test_every_fallback_is_counted_by_reason():
    before = fixes.pmap_fallback_counts()
    f = cached_filter_pmap(lambda x, y=1.0: x * y)
    with pytest.raises(RuntimeError):
        f(jnp.ones(N), y=2.0)
    with pytest.raises(ValueError):
        f(1.0, 2.0)
    assert f.fallback_reasons == {"keyword arguments": 1, "nothing mapped": 1}
    after = fixes.pmap_fallback_counts()
    assert after["keyword arguments"] == before.get("keyword arguments", 0) + 1
    assert after["nothing mapped"] == before.get("nothing mapped", 0) + 1


def test_a_hit_does_no_per_leaf_python_work_beyond_the_key():
    model = eqx.nn.MLP(4, 4, 8, 4, key=jax.random.PRNGKey(0))
    stacked = jax.tree.map(lambda a: jnp.broadcast_to(a, (N, *a.shape)) if eqx.is_array(a) else a, model)
    f = cached_filter_pmap(lambda m, x: (0.0, m))
    for _ in range(3):
        out = f(stacked, jnp.ones((N, 2)))
    assert f.stats == {"hits": 2, "misses": 1, "fallbacks": 0}
    assert_same(eqx.filter_pmap(lambda m, x: (0.0, m))(stacked, jnp.ones((N, 2))), out)


def test_a_callable_in_axes_that_reads_leaf_values_is_resolved_on_every_call():
    """Was: resolved once per input structure, so the second call reused the first's axes."""

    def positive_mapped(leaf):
        return 0 if eqx.is_array(leaf) and bool((leaf > 0).all()) else None

    expected, ours = both(lambda x, y: (x * 1, y * 1), in_axes=positive_mapped)
    x = jnp.ones((N, 2))
    for y in (jnp.ones(N), -jnp.ones(N), jnp.ones(N)):  # y mapped, then broadcast, then mapped
        assert_same(expected(x, y), ours(x, y))
    assert ours.stats["fallbacks"] == 0 and ours.stats["misses"] == 2


def test_lower_with_a_shape_dtype_struct_as_a_static_argument_as_equinox():
    """Was: the compiled form refused the ShapeDtypeStruct it was lowered with."""
    fun = lambda x, spec: (x.astype(spec.dtype), spec.shape)  # noqa: E731
    x, spec = jnp.ones((N, 2)), jax.ShapeDtypeStruct((N,), jnp.int32)  # mappable, were it an array
    expected, ours = both(fun)
    want = expected.lower(x, spec).compile()(x, spec)
    assert_same(want, ours.lower(x, spec).compile()(x, spec))


def test_patched_in_under_equinox_s_name_it_still_falls_back_to_equinox(monkeypatch):
    """What a reader does to adopt it: ``eqx.filter_pmap = cached_filter_pmap``. Was: its
    hand-overs to Equinox went to itself, a RecursionError."""
    fun = lambda x, y=1.0: x * y  # noqa: E731
    want = error(eqx.filter_pmap(fun), jnp.ones(N), y=2.0)
    monkeypatch.setattr(eqx, "filter_pmap", cached_filter_pmap)
    assert error(eqx.filter_pmap(fun), jnp.ones(N), y=2.0) == want  # keyword arguments: Equinox's error
