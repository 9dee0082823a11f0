"""cached_filter_pmap is a drop-in for eqx.filter_pmap: same outputs, fresh
partition when the structure changes, Equinox's own behaviour where it falls back.
A core test: jaxperf's public API, jax, equinox, numpy and pytest only."""

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import N, assert_same, stacked

from jaxperf import cached_filter_pmap


class Inner(eqx.Module):
    w: jax.Array
    name: str = eqx.field(static=True)


class Outer(eqx.Module):
    inner: Inner
    act: object  # a function: a non-array leaf
    maybe: object  # None or an array
    scale: float


def make_outer(with_array=True):
    k = jax.random.PRNGKey(0)
    return Outer(
        Inner(jax.random.normal(k, (3,)), "inner"), jax.nn.relu, jnp.ones((2,)) if with_array else None, 2.0
    )


def apply(m, x, extra):
    y = m.act(m.inner.w * x.sum()) * m.scale
    if m.maybe is not None:
        y = y + m.maybe.sum()
    return {"y": y, "tag": m.inner.name, "extra": extra, "model": m, "none": None}


CASES = {
    "nested modules, functions, None, python scalars": lambda: (
        apply,
        (stacked(make_outer(False)), jnp.ones((N, 4)), ("static", 3)),
        {},
    ),
    "an array in place of None": lambda: (
        apply,
        (stacked(make_outer(True)), jnp.arange(N * 4.0).reshape(N, 4), ["a", 1.5]),
        {},
    ),
    "the seed's no-op step on an MLP": lambda: (
        lambda model, x, opt: (0.0, model, opt),
        (
            stacked(eqx.nn.MLP(4, 4, 8, 2, key=jax.random.PRNGKey(1))),
            jnp.ones((N, 2, 4)),
            {"mu": jnp.zeros((N, 5)), "count": 0},
        ),
        {},
    ),
    "in_axes broadcast the model (None)": lambda: (
        lambda m, x: jax.vmap(m)(x),
        (eqx.nn.MLP(4, 4, 8, 2, key=jax.random.PRNGKey(2)), jnp.ones((N, 3, 4))),
        {"in_axes": (None, 0)},
    ),
    "in_axes if_array(1)": lambda: (
        lambda x, y: (x * 2, y),
        (jnp.arange(3.0 * N).reshape(3, N), "label"),
        {"in_axes": eqx.if_array(1)},
    ),
    "out_axes if_array(1)": lambda: (
        lambda x: jnp.stack([x, x + 1]),
        (jnp.arange(N * 2.0).reshape(N, 2),),
        {"out_axes": eqx.if_array(1)},
    ),
    "axis_name with a collective": lambda: (
        lambda x: jax.lax.psum(x, "i"),
        (jnp.arange(float(N)),),
        {"axis_name": "i"},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_same_outputs_as_filter_pmap(case):
    fun, args, options = CASES[case]()
    expected = eqx.filter_pmap(fun, **options)(*args)
    wrapped = cached_filter_pmap(fun, **options)
    first, second = wrapped(*args), wrapped(*args)
    assert_same(expected, first)
    assert_same(expected, second)


def test_fast_path_caches_and_hits():
    f = cached_filter_pmap(lambda x, s: (x + 1, s))
    x = jnp.zeros((N, 2))
    for _ in range(3):
        f(x, "s")
    assert f.stats == {"hits": 2, "misses": 1, "fallbacks": 0}


def test_changed_structure_repartitions():
    f = cached_filter_pmap(lambda x, s: (jax.tree.map(lambda a: a * 2, x), s))
    x = jnp.ones((N, 2))
    assert f(x, "a")[1] == "a"
    assert f(x, "b")[1] == "b"  # new static leaf: not the stale "a"
    out = f({"p": x, "q": x}, "b")[0]  # new treedef
    assert set(out) == {"p", "q"}
    y = f(jnp.ones((N, 5)), "b")[0]  # new shape
    assert y.shape == (N, 5)
    assert f.stats["misses"] == 4 and f.stats["hits"] == 0


def test_equal_but_different_static_leaves_do_not_share_a_cache_entry():
    f = cached_filter_pmap(lambda x, s: (x, s))
    x = jnp.ones((N, 2))
    outs = [f(x, s)[1] for s in (1, 1.0, True)]  # equal and hash alike in Python
    assert [type(o) for o in outs] == [int, float, bool]
    assert f.stats["misses"] == 3


def test_shape_dependent_static_output_is_not_stale():
    f = cached_filter_pmap(lambda x: (x, x.shape[-1]))
    assert f(jnp.ones((N, 2)))[1] == 2
    assert f(jnp.ones((N, 3)))[1] == 3
    assert f(jnp.ones((N, 2)))[1] == 2


def test_keyword_arguments_fall_back_to_equinox():
    fun = lambda x, y=1.0: x * y  # noqa: E731
    with pytest.raises(RuntimeError, match="keyword arguments") as expected:
        eqx.filter_pmap(fun)(jnp.ones(N), y=2.0)
    f = cached_filter_pmap(fun)
    with pytest.raises(RuntimeError, match="keyword arguments") as got:
        f(jnp.ones(N), y=2.0)
    assert str(got.value) == str(expected.value)
    assert f.stats["fallbacks"] == 1


@pytest.mark.parametrize(
    "options",
    [
        {"in_axes": {"x": 0}},  # by name
        {"out_axes": (0, None)},  # a pytree, with an unmapped output
        {"axis_size": N},
        {"donate": "all"},
        {"donate": "warn"},
    ],
)
def test_options_equinox_accepts_run_on_the_fast_path(options):
    def fun(x):
        return x + 1, x.sum()

    if options.get("out_axes") == (0, None):
        fun = lambda x: (x + 1, jax.lax.psum(x.sum(), "i"))  # noqa: E731 -- unmapped output
        options = {**options, "axis_name": "i"}
    if options.get("axis_size"):
        fun = lambda x: x + 1  # noqa: E731
    expected = eqx.filter_pmap(fun, **options)(jnp.arange(N * 2.0).reshape(N, 2))
    f = cached_filter_pmap(fun, **options)
    assert_same(expected, f(jnp.arange(N * 2.0).reshape(N, 2)))
    assert_same(expected, f(jnp.arange(N * 2.0).reshape(N, 2)))
    assert f.stats == {"hits": 1, "misses": 1, "fallbacks": 0}


def test_unhashable_static_leaf_falls_back_and_fun_with_arrays_does_not():
    class Unhashable:
        __hash__ = None

        def __eq__(self, other):
            return isinstance(other, Unhashable)

    fun = lambda x, m: (x + 1, m)  # noqa: E731
    with pytest.raises(TypeError, match="unhashable") as expected:
        eqx.filter_pmap(fun)(jnp.ones(N), Unhashable())
    f = cached_filter_pmap(fun)
    with pytest.raises(TypeError, match="unhashable") as got:  # Equinox's own error, via the fallback
        f(jnp.ones(N), Unhashable())
    assert str(got.value) == str(expected.value)
    assert f.stats["fallbacks"] == 1 and f.fallback_reasons == {"unhashable non-array leaf": 1}

    bound = eqx.nn.Linear(2, 2, key=jax.random.PRNGKey(0))  # fun with array leaves: broadcast
    g = cached_filter_pmap(bound)
    assert_same(eqx.filter_pmap(bound)(jnp.ones((N, 2))), g(jnp.ones((N, 2))))
    assert g.stats == {"hits": 0, "misses": 1, "fallbacks": 0}


def test_decorator_forms():
    @cached_filter_pmap
    def plain(x):
        return x + 1

    @cached_filter_pmap(axis_name="i")
    def reduced(x):
        return jax.lax.psum(x, "i")

    assert plain(jnp.zeros(N)).tolist() == [1.0] * N
    assert reduced(jnp.ones(N)).tolist() == [float(N)] * N
    assert plain.__wrapped__.__name__ == "plain"
