"""The wrappers are Modules exactly as Equinox's are (issue 28): ``eqx.filter_jit`` returns a
``_JitWrapper`` and ``eqx.filter_pmap`` a ``_PmapWrapper``, both ``eqx.Module``s whose leaves
include a wrapped Module's arrays, so transforms see its parameters, and equal wrappers
compare (and, for jit, hash) equal. Was: plain objects, so ``eqx.filter_grad`` over a wrapped
model returned no gradients and a freshly wrapped function passed as a static argument
retraced every step. Each property side by side with Equinox. A core test: jaxperf's public
API, jax, equinox, numpy, pytest."""

from __future__ import annotations

import copy
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import N, assert_same, assert_same_outcome, outcome

from jaxperf import cached_filter_jit, cached_filter_pmap

PAIRS = {"jit": (eqx.filter_jit, cached_filter_jit), "pmap": (eqx.filter_pmap, cached_filter_pmap)}


def model():
    return eqx.nn.MLP(3, 2, 4, 1, key=jax.random.PRNGKey(0))


def x_for(kind):
    return jnp.ones(3) if kind == "jit" else jnp.ones((N, 3))


def wrapped_model(wrap, kind):
    """The model as the wrapped function (under pmap its arrays are broadcast: they are not
    the mapped arguments)."""
    return wrap(model())


def n_arrays(tree):
    return sum(eqx.is_array(leaf) for leaf in jax.tree.leaves(tree))


def _without_class_name(text):
    return re.sub(r"^\w+\(", "Wrapper(", text)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_module_with_the_fields_leaves_and_repr_of_equinox_s(kind):
    theirs, ours = (wrapped_model(wrap, kind) for wrap in PAIRS[kind])
    assert isinstance(ours, eqx.Module) and isinstance(theirs, eqx.Module)
    their_leaves, ours_leaves = jax.tree.leaves(theirs), jax.tree.leaves(ours)
    assert [type(leaf) for leaf in ours_leaves] == [type(leaf) for leaf in their_leaves]
    assert_same(eqx.filter(their_leaves, eqx.is_array), eqx.filter(ours_leaves, eqx.is_array))
    assert n_arrays(ours_leaves) == n_arrays(model()) == 4
    assert _without_class_name(repr(ours)) == _without_class_name(repr(theirs))


@pytest.mark.parametrize("kind", list(PAIRS))
def test_filter_grad_through_a_wrapped_model_gives_equinox_s_gradients(kind):
    grads = [
        eqx.filter_grad(lambda fn, a: fn(a).sum())(wrapped_model(wrap, kind), x_for(kind))
        for wrap in PAIRS[kind]
    ]
    their_arrays, our_arrays = (jax.tree.leaves(eqx.filter(g, eqx.is_array)) for g in grads)
    assert len(our_arrays) == n_arrays(model()) == len(their_arrays)
    assert_same(their_arrays, our_arrays)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_tree_map_over_a_wrapped_model_reaches_its_weights(kind):
    outs = []
    for wrap in PAIRS[kind]:
        zeroed = jax.tree.map(
            lambda leaf: leaf * 0 if eqx.is_array(leaf) else leaf, wrapped_model(wrap, kind)
        )
        outs.append(zeroed(x_for(kind)))
    assert_same(outs[0], outs[1])
    assert not jnp.any(outs[1])


@pytest.mark.parametrize("kind", list(PAIRS))
def test_equal_wrappers_compare_and_hash_as_equinox_s(kind):
    def f(x):
        return x + 1

    for wrap in PAIRS[kind]:
        first, second = wrap(f), wrap(f)
        assert first == second
    theirs, ours = PAIRS[kind]
    assert_same_outcome(
        outcome(lambda: hash(theirs(f)) == hash(theirs(f))), outcome(lambda: hash(ours(f)) == hash(ours(f)))
    )
    assert (ours(f) == ours(lambda x: x + 1)) is False  # another function: another wrapper


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_freshly_wrapped_function_passed_along_does_not_retrace(kind):
    """A step that takes the wrapped function as an argument, wrapped afresh each step: the
    outer filter_jit hashes it (static) and finds its trace, as with Equinox's wrappers."""
    traces = []

    def f(x):
        return x * 2

    @eqx.filter_jit
    def outer(fn, x):
        traces.append(1)
        return fn(x)

    theirs, ours = PAIRS[kind]
    for _ in range(3):
        outer(ours(f), x_for(kind))
    assert len(traces) == 1
    if kind == "jit":  # hashable, as Equinox's _JitWrapper: a static argument of jax.jit too
        static = jax.jit(lambda fn, x: fn(x), static_argnums=0)
        for _ in range(3):
            assert_same(static(theirs(f), x_for(kind)), static(ours(f), x_for(kind)))


@pytest.mark.parametrize("kind", list(PAIRS))
def test_deepcopy_gives_a_working_equal_wrapper(kind):
    def f(x):
        return x + 1

    theirs, ours = PAIRS[kind]
    copied = copy.deepcopy(ours(f))
    assert_same(theirs(f)(x_for(kind)), copied(x_for(kind)))
    assert copied == ours(f)  # it shares the compiled paths
    copied_model = copy.deepcopy(wrapped_model(ours, kind))
    assert_same(wrapped_model(theirs, kind)(x_for(kind)), copied_model(x_for(kind)))


@pytest.mark.parametrize("donate", ["all", "warn", "none"])
def test_pmap_wrapper_fields_follow_donate_as_equinox_s(donate):
    theirs, ours = (wrap(model(), donate=donate, axis_name="i") for wrap in PAIRS["pmap"])
    assert _without_class_name(repr(ours)) == _without_class_name(repr(theirs))
