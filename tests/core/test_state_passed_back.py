"""A drop-in's output passed back in (a training loop's state) is not flattened again: its
leaves were kept beside it when it was returned (issue 38: at few leaves, that flatten was
the drop-ins' whole gap to ``jax.jit`` on the partitioned state). Only outputs made of
immutable nodes are kept; a list or dict in an output is flattened on every call, so a
change made to it in place is seen. A core test: jaxperf's public API, jax, equinox, numpy,
pytest."""

from __future__ import annotations

import gc
import sys
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import pytest
from dropin_checks import assert_same, outcome, stacked

from jaxperf import cached_filter_jit, cached_filter_pmap
from jaxperf.fixes import _cached

PAIRS = {"jit": (eqx.filter_jit, cached_filter_jit), "pmap": (eqx.filter_pmap, cached_filter_pmap)}


class Counted(eqx.Module):
    weight: jax.Array
    scale: float = eqx.field(static=True)


@pytest.fixture
def flattened(monkeypatch):
    """The Counted states the drop-ins flatten (every flatten of theirs goes through _flatten)."""
    seen = []
    flatten = _cached._flatten

    def recording(tree):
        seen.extend(
            x
            for x in jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, Counted))
            if isinstance(x, Counted)
        )
        return flatten(tree)

    monkeypatch.setattr(_cached, "_flatten", recording)
    return seen


def step(model, x):
    return x.sum(), eqx.tree_at(lambda m: m.weight, model, model.weight * model.scale + x.sum())


def placed(kind, tree):
    return tree if kind == "jit" else stacked(tree)


@pytest.mark.parametrize("kind", list(PAIRS))
def test_state_passed_back_gives_equinox_s_outputs_without_a_flatten(kind, flattened):
    theirs, ours = (wrap(step) for wrap in PAIRS[kind])
    x = placed(kind, jnp.ones(2))
    expected = got = placed(kind, Counted(jnp.arange(2.0), 0.5))
    for _ in range(3):
        _, expected = theirs(expected, x)
        _, got = ours(got, x)
        assert_same(expected, got)
    flattened.clear()
    ours(got, x)
    assert not flattened  # the state it returned: its leaves were kept, not flattened again
    ours(placed(kind, Counted(jnp.arange(2.0), 0.5)), x)
    assert flattened  # a state it did not return is flattened


class Holder(eqx.Module):
    items: Any


def with_items(holder, x):
    items = holder.items
    return Holder(
        type(items)([(0, items[0] + x), (1, items[1])])
        if isinstance(items, dict)
        else [items[0] + x, items[1]]
    )


@pytest.mark.parametrize("container", [list, dict])
@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_list_or_dict_changed_in_place_between_calls_is_seen(kind, container):
    theirs, ours = (wrap(with_items) for wrap in PAIRS[kind])
    x = placed(kind, jnp.ones(2))
    start = [x, 1.0] if container is list else {0: x, 1: 1.0}
    expected, got = theirs(Holder(start), x), ours(Holder(start), x)
    for out in (expected, got):
        out.items[1] = 2.0  # a Module's list or dict can change after it was returned
        out.items[0] = out.items[0] * 3
    assert_same(theirs(expected, x), ours(got, x))


def test_a_kept_output_is_forgotten_when_it_dies():
    ours = cached_filter_jit(step)
    _, state = ours(Counted(jnp.arange(2.0), 0.5), jnp.ones(2))
    key = id(state)
    assert _cached._KNOWN[key][0]() is state
    del state
    gc.collect()
    assert key not in _cached._KNOWN


def test_jit_keeps_the_leaves_of_a_state_of_its_output_s_structure_it_did_not_return(flattened):
    ours = cached_filter_jit(step)
    x = jnp.ones(2)
    ours(Counted(jnp.arange(2.0), 0.5), x)  # the trace: its output's structure is learnt
    state = Counted(jnp.arange(3.0, 5.0), 0.5)
    ours(state, x)
    flattened.clear()
    assert_same(ours(state, x), eqx.filter_jit(step)(state, x))
    assert not flattened  # passed in again unchanged: its leaves were kept at the first call


def test_jit_sees_a_change_in_place_to_a_list_of_a_state_it_kept():
    theirs, ours = eqx.filter_jit(with_items), cached_filter_jit(with_items)
    x = jnp.ones(2)
    ours(Holder([x, 1.0]), x)
    holder = Holder([x, 1.0])
    ours(holder, x)  # kept, with its list's items
    holder.items[1] = 2.0
    holder.items[0] = x * 3
    assert_same(theirs(holder, x), ours(holder, x))


@pytest.mark.parametrize("kind", list(PAIRS))
def test_a_call_of_arrays_and_kept_states_is_not_split_again(kind, monkeypatch):
    """Its key comes from the kept states' tokens and the arrays' types alone (no flatten, no
    split); the same state passed again (not returned) is kept too, for jit."""
    theirs, ours = (wrap(step) for wrap in PAIRS[kind])
    x = placed(kind, jnp.ones(2))
    start = placed(kind, Counted(jnp.arange(2.0), 0.5))
    expected, got = start, start
    for _ in range(3):  # each trace's outputs are passed back once before
        expected, got = theirs(expected, x)[1], ours(got, x)[1]
    ours(got, x)  # the last output's token keyed too
    for _ in range(2):  # jit keeps the state at the first call, keys its token at the second
        ours(start, x)
    module = sys.modules[type(ours).__module__]

    def refused(*args, **kwargs):
        raise AssertionError("split() on a call of arrays and kept states")

    monkeypatch.setattr(module, "split", refused)
    for _ in range(2):
        expected, got = theirs(expected, x)[1], ours(got, x)[1]
        assert_same(expected, got)
    if kind == "jit":
        assert_same(theirs(start, x), ours(start, x))


class Signed(eqx.Module):
    weight: jax.Array
    sign: float  # a non-array leaf: 0.0 and -0.0 are equal in Python, and traced apart here


def signed(model, x):
    return model.weight * jnp.copysign(1.0, model.sign) + x, model


def test_kept_states_that_differ_only_in_a_float_s_sign_get_their_own_trace():
    ours, x = cached_filter_jit(signed), jnp.ones(2)
    plus, minus = Signed(jnp.arange(2.0), 0.0), Signed(jnp.arange(2.0), -0.0)
    for _ in range(3):  # of its output's structure: kept at the second call, then taken by token
        assert ours(plus, x)[0].tolist() == [1.0, 2.0]
        assert ours(minus, x)[0].tolist() == [1.0, 0.0]


def test_a_first_call_inside_a_trace_leaves_the_quick_key_to_concrete_arrays(monkeypatch):
    """quick() learns JAX's concrete array type at its first call; a drop-in first called inside
    another function's trace (jnp.zeros is a tracer there) must not teach it the tracer's type,
    which would send every later call of concrete arrays through a full split."""
    monkeypatch.setattr(_cached, "_ARRAY_IMPL", {})  # as in a fresh process
    inner = cached_filter_jit(lambda a: a * 2)
    jax.jit(lambda a: inner(a))(jnp.ones(2))  # the first quick() call: inside a trace
    assert _cached._ARRAY_IMPL[""] is type(jnp.ones(2))
    assert _cached.quick((jnp.ones(2),))[0] is not None


class Moments(NamedTuple):  # as optax's ScaleByAdamState: a count and two Modules
    count: jax.Array
    mu: Any
    nu: Any


class Empty(NamedTuple):  # as optax's EmptyState
    pass


def with_opt_state(model, x, opt):
    moments = opt["moments"] if isinstance(opt, dict) else opt[0]
    mu = eqx.tree_at(lambda m: m.weight, moments.mu, moments.mu.weight + x.sum())
    moments = Moments(moments.count + 1, mu, moments.nu)
    opt = {**opt, "moments": moments} if isinstance(opt, dict) else type(opt)([moments, *opt[1:]])
    return x.sum(), step(model, x)[1], opt


#: optimiser states as optax's: a tuple of namedtuples (adam), a dict beside (inject_hyperparams)
CONTAINERS = {
    "tuple": lambda moments: (moments, Empty()),
    "dict": lambda moments: {"moments": moments, "hyper": {"lr": jnp.ones(())}, "empty": {}},
    "list": lambda moments: [moments, None],
}


@pytest.mark.parametrize("container", list(CONTAINERS))
@pytest.mark.parametrize("kind", list(PAIRS))
def test_modules_inside_a_returned_container_are_kept(kind, container, flattened, monkeypatch):
    """An optimiser state as optax's (Modules in tuples, namedtuples, dicts, lists) passed back is
    read through its containers without a flatten or a split: at 145 to 433 leaves that flatten
    put cached_filter_jit at 0.86x of jax.jit on params (issue 54)."""
    theirs, ours = (wrap(with_opt_state) for wrap in PAIRS[kind])
    x = placed(kind, jnp.ones(2))
    counted = Counted(jnp.arange(2.0), 0.5)
    opt = CONTAINERS[container](Moments(jnp.zeros((), jnp.int32), counted, counted))
    expected = got = placed(kind, (counted, opt))
    for _ in range(3):
        expected, got = theirs(expected[0], x, expected[1])[1:], ours(got[0], x, got[1])[1:]
        assert_same(expected, got)
    flattened.clear()
    module = sys.modules[type(ours).__module__]

    def refused(*args, **kwargs):
        raise AssertionError("split() on a call of arrays and kept states")

    monkeypatch.setattr(module, "split", refused)
    for _ in range(2):
        expected, got = theirs(expected[0], x, expected[1])[1:], ours(got[0], x, got[1])[1:]
        assert_same(expected, got)
    assert not flattened


def test_a_list_that_holds_itself_fails_as_in_equinox():
    looped = [jnp.ones(2)]
    looped.append(looped)
    (their_kind, theirs), (our_kind, ours) = (outcome(wrap(lambda a: a), looped) for wrap in PAIRS["jit"])
    assert their_kind == our_kind == "error" and theirs[0] is ours[0]  # the same type of error


class Swapped(tuple):
    """A tuple type registered with a flatten of its own (its items swapped): read as registered."""

    _fields = ("first", "second")


jax.tree_util.register_pytree_node(Swapped, lambda t: ((t[1], t[0]), None), lambda _, c: Swapped(c[::-1]))


def test_a_tuple_type_registered_with_its_own_flatten_is_not_read_as_a_namedtuple():
    theirs, ours = eqx.filter_jit(lambda s: s[0] - s[1]), cached_filter_jit(lambda s: s[0] - s[1])
    for _ in range(3):  # a quick key that read its items in order would swap them at the second call
        pair = Swapped((jnp.arange(2.0), jnp.ones(2)))
        assert_same(theirs(pair), ours(pair))
