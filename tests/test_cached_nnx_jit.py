"""``jaxperf.cached_nnx_jit``: the same results, updates and errors as ``nnx.jit`` (graph mode),
no graph walk on a cache hit, a new record or trace on every structural change, and no model
kept alive. Each test compares with ``nnx.jit`` itself where Flax defines the behaviour."""

from __future__ import annotations

import gc
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from jaxperf import cached_nnx_jit

nnx = pytest.importorskip("flax.nnx")
from flax.nnx import graphlib  # noqa: E402


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, scale: float = 2.0) -> None:
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.offset = nnx.Param(jnp.ones(()))
        self.scale = scale  # static

    def __call__(self, x):
        return self.linear(x) * self.scale + getattr(self, "offset", 0.0)


def _train(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(model)
    optimizer.update(model, grads)
    return loss


def _states(*nodes):
    return [np.asarray(a) for a in jax.tree.leaves(nnx.state(nodes))]


def _pair():
    return [(m := Block(nnx.Rngs(0)), nnx.Optimizer(m, optax.adam(1e-2), wrt=nnx.Param)) for _ in range(2)]


def test_a_training_step_matches_nnx_jit_and_hits_after_the_first_call():
    (m1, o1), (m2, o2) = _pair()
    x = jnp.ones((2, 3))
    ours, theirs = cached_nnx_jit(_train), nnx.jit(_train)
    for _ in range(3):
        np.testing.assert_allclose(ours(m1, o1, x), theirs(m2, o2, x), rtol=1e-6)
    for a, b in zip(_states(m1, o1), _states(m2, o2)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert ours.stats == {"hits": 2, "misses": 1, "fallbacks": 0}


def test_a_hit_walks_no_graph(monkeypatch):
    """The fix itself: nnx.jit flattens the graph on every call; the drop-in only on a miss."""
    (m, o), _ = _pair()
    x = jnp.ones((2, 3))
    for jit in (cached_nnx_jit, nnx.jit):
        step = jit(_train)
        step(m, o, x)
        calls: list[int] = []

        def counted(*args, real=graphlib.flatten, calls=calls, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        with monkeypatch.context() as patch:
            patch.setattr(graphlib, "flatten", counted)
            step(m, o, x)
        assert (len(calls) == 0) == (jit is cached_nnx_jit)


def test_shared_references_stay_shared_and_rngs_advance():
    def make():
        m = nnx.Dict(a=nnx.Param(jnp.zeros(2)), rngs=nnx.Rngs(dropout=1))
        m.b = m.a
        return m

    def f(m):
        m.a[...] += 1.0
        return jax.random.normal(m.rngs.dropout(), (2,))

    m1, m2 = make(), make()
    ours, theirs = cached_nnx_jit(f), nnx.jit(f)
    draws = [(np.asarray(ours(m1)), np.asarray(theirs(m2))) for _ in range(3)]
    for a, b in draws:
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(draws[0][0], draws[1][0])  # the stream advanced
    assert m1.a is m1.b and float(m1.b[0]) == 3.0 == float(m2.b[0])


def _traced(log):
    def f(m, x):
        log.append(1)
        return m(x).sum()

    return f


@pytest.mark.parametrize(
    "change",
    ["add variable", "remove variable", "static attribute", "shape", "dtype", "swap submodule"],
)
def test_every_structural_change_is_seen(change):
    log = []
    f = cached_nnx_jit(_traced(log))
    m, x = Block(nnx.Rngs(0)), jnp.ones((2, 3))
    f(m, x)
    if change == "add variable":
        m.extra = nnx.Param(jnp.ones(1))
    elif change == "remove variable":
        del m.offset
    elif change == "static attribute":
        m.scale = 3.0
    elif change == "shape":
        x = jnp.ones((4, 3))
    elif change == "dtype":
        m.linear.kernel.set_value(m.linear.kernel[...].astype(jnp.bfloat16))
    else:
        m.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(5))
    out = f(m, x)
    assert float(out) == pytest.approx(float(nnx.jit(_traced([]))(m, x)), rel=1e-2)
    assert len(log) == (1 if change == "swap submodule" else 2)  # a swap of equal structure: same trace
    assert f.stats["misses"] == (1 if change in ("shape", "dtype") else 2)


def test_a_sharding_in_the_type_is_a_new_trace():
    """JAX 0.12's explicit axes put the sharding in the array's type, and a trace may read it."""
    if len(jax.devices()) < 2:
        pytest.skip("one device: no second sharding to move a Variable to")
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2,), ("d",), axis_types=(AxisType.Explicit,), devices=jax.devices()[:2])
    seen = []

    def f(m):
        seen.append(jax.typeof(m.w[...]).sharding.spec)
        return m.w[...] * 2

    m = nnx.Dict(w=nnx.Param(jnp.arange(4.0)))
    step = cached_nnx_jit(f)
    step(m)
    m.w.set_value(jax.device_put(m.w[...], NamedSharding(mesh, P("d"))))
    np.testing.assert_array_equal(step(m), np.arange(4.0) * 2)
    assert seen == [P(None), P("d")] and step.stats["hits"] == 1


def test_a_memory_kind_in_the_type_is_a_new_trace():
    from jax.sharding import SingleDeviceSharding

    device = jax.devices()[0]
    if "pinned_host" not in {m.kind for m in device.addressable_memories()}:
        pytest.skip(f"{device.platform} has no pinned_host memory to move a Variable to")
    seen = []

    def f(m):
        seen.append(str(jax.typeof(m.w[...])))
        return m.w[...] * 2

    m = nnx.Dict(w=nnx.Param(jnp.arange(3.0)))
    step = cached_nnx_jit(f)
    step(m)
    m.w.set_value(jax.device_put(m.w[...], SingleDeviceSharding(device, memory_kind="pinned_host")))
    out = step(m)
    np.testing.assert_array_equal(out, np.arange(3.0) * 2)
    assert len(seen) == 2 and seen[0] != seen[1] and out.sharding.memory_kind == "pinned_host"


def test_traces_no_more_than_nnx_jit():
    counts = []
    for jit in (nnx.jit, cached_nnx_jit):
        log = []
        f, m = jit(_traced(log)), Block(nnx.Rngs(0))
        for rows in (2, 2, 4, 2, 4):
            f(m, jnp.ones((rows, 3)))
        other = Block(nnx.Rngs(1))
        f(other, jnp.ones((2, 3)))
        counts.append(len(log))
    assert counts[1] <= counts[0] == 2


def test_donation_methods_and_static_arguments():
    class Counter(nnx.Module):
        def __init__(self):
            self.count = nnx.BatchStat(jnp.zeros(()))

        @cached_nnx_jit(static_argnums=2, donate_argnums=0)
        def add(self, n, times):
            for _ in range(times):
                self.count[...] += n
            return self.count[...]

    c = Counter()
    old = c.count[...]
    assert float(c.add(jnp.ones(()), 2)) == 2.0
    assert old.is_deleted()  # donated, as nnx.jit donates it
    assert float(c.add(jnp.ones(()), 3)) == 5.0 and float(c.count[...]) == 5.0


def test_lower_compiles_as_nnx_jit_does():
    m, x = Block(nnx.Rngs(0)), jnp.ones((2, 3))
    f = cached_nnx_jit(lambda m, x: m(x))
    assert "dot" in f.lower(m, x).as_text()


def test_a_function_that_changes_the_graph_is_merged_as_nnx_jit_merges_it():
    log = []

    def grow(m):
        log.append(1)
        m.extra = nnx.Param(jnp.ones(1))
        m.linear, m.other = nnx.Linear(3, 3, rngs=nnx.Rngs(1)), m.linear
        return 1.0

    m = Block(nnx.Rngs(0))
    linear = m.linear
    f = cached_nnx_jit(grow)
    f(m)
    assert float(m.extra[0]) == 1.0 and m.other is linear and m.linear is not linear
    assert len(log) == 1 and not f.fallback_reasons  # traced once, as nnx.jit traces it


def test_an_entry_whose_traces_disagree_is_nnx_jits_from_then_on():
    """A retrace (a new shape) that changes other Variables than the first trace did: that call
    and every later one of the entry, the first shape's too, are nnx.jit's."""

    def f(m, x):
        if x.shape[0] > 2:
            m.offset[...] += 1.0
        return m(x).sum()

    (m1, m2), (ours, theirs) = (Block(nnx.Rngs(0)), Block(nnx.Rngs(0))), (cached_nnx_jit(f), nnx.jit(f))
    for x in (jnp.ones((2, 3)), jnp.ones((4, 3)), jnp.ones((2, 3)), jnp.ones((2, 3))):
        assert float(ours(m1, x)) == pytest.approx(float(theirs(m2, x)))
    assert float(m1.offset[...]) == float(m2.offset[...]) == 2.0
    # nnx.jit's merge gives each module a new PytreeState: the call after a fallback records again
    assert ours.stats == {"hits": 1, "misses": 3, "fallbacks": 3}
    assert ours.fallback_reasons == {"outputs differ between traces": 3}


def test_output_graph_nodes_are_the_callers_objects_or_new_ones():
    m, x = Block(nnx.Rngs(0)), jnp.ones((2, 3))
    f = cached_nnx_jit(lambda m, x: (m, m.linear.kernel, nnx.Dict(inner=m.linear), m(x)))
    for _ in range(2):
        same, kernel, new, _ = f(m, x)
        assert same is m and kernel is m.linear.kernel and new.inner is m.linear


def test_nnx_cached_partial_over_the_drop_in():
    (m, o), _ = _pair()
    step = nnx.cached_partial(cached_nnx_jit(_train), m, o)
    assert np.isfinite(float(step(jnp.ones((2, 3)))))


def test_errors_are_nnx_jits():
    m = Block(nnx.Rngs(0))
    with pytest.raises(ValueError, match="[Bb]ound method"):
        cached_nnx_jit(m.__call__)
    f = cached_nnx_jit(lambda m, x: m(x))
    with pytest.raises(TypeError):
        f(m)

    @jax.jit
    def outer(x):
        return cached_nnx_jit(lambda m, x: m.linear.kernel.set_value(x))(m, x)

    from flax.errors import TraceContextError

    with pytest.raises(TraceContextError):
        outer(jnp.ones((3, 3)))


def test_a_recorded_call_made_again_inside_another_trace_is_nnx_jits():
    """The record's trace is checked on a hit: inside ``jax.jit``, the same model and wrapper are
    nnx.jit's (which refuses to write a tracer into the caller's Variable), not the record's."""
    from flax.errors import TraceContextError

    def bump(m):
        m.offset[...] += 1.0

    for jit in (nnx.jit, cached_nnx_jit):
        m, f = Block(nnx.Rngs(0)), jit(bump)
        f(m), f(m)
        with pytest.raises(TraceContextError):
            jax.jit(lambda f=f, m=m: f(m))()
    assert f.stats == {"hits": 1, "misses": 1, "fallbacks": 1}


@pytest.mark.parametrize("back_reference", [False, True])
def test_no_model_is_kept_alive(back_reference):
    f = cached_nnx_jit(_traced([]))
    m = Block(nnx.Rngs(0))
    if back_reference:  # a node inside the graph that references the argument: nnx.jit's
        m.child = nnx.Dict(parent=m)
    f(m, jnp.ones((2, 3)))
    f(m, jnp.ones((2, 3)))
    assert f.stats["hits"] == (0 if back_reference else 1)
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None and not f._records and f._last is None


def test_threads_with_their_own_models():
    f = cached_nnx_jit(_train)
    results = {}

    def run(k):
        (m, o), _ = _pair()
        results[k] = [float(f(m, o, jnp.full((2, 3), float(k)))) for _ in range(3)]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (m, o), _ = _pair()
    g = nnx.jit(_train)
    for k in range(4):
        (m, o), _ = _pair()
        assert results[k] == pytest.approx([float(g(m, o, jnp.full((2, 3), float(k)))) for _ in range(3)])


def test_missing_flax_is_named(monkeypatch):
    import sys

    from jaxperf.fixes import _nnx as _nnx_graph

    monkeypatch.setattr(_nnx_graph, "_FLAX", None)
    monkeypatch.setitem(sys.modules, "flax.nnx", None)
    with pytest.raises(ImportError, match="pip install flax"):
        cached_nnx_jit(lambda x: x)


def test_a_variable_type_with_its_own_setter_is_written_through_it():
    writes = []

    class Logged(nnx.Param):
        def set_raw_value(self, value, **kwargs):
            writes.append(1)
            super().set_raw_value(value, **kwargs)

    def f(m):
        m.w[...] += 1.0

    counts = []
    for jit in (nnx.jit, cached_nnx_jit):
        writes.clear()
        m, step = nnx.Dict(w=Logged(jnp.zeros(2))), jit(f)
        step(m)
        step(m)
        counts.append(len(writes))
    assert counts[0] == counts[1] > 0


def test_keyword_arguments_static_and_donated_by_name():
    def f(m, x, *, times):
        for _ in range(times):
            m.w[...] += x
        return m.w[...]

    results = []
    for jit in (nnx.jit, cached_nnx_jit):
        m, step = nnx.Dict(w=nnx.Param(jnp.zeros(2))), jit(f, static_argnames="times", donate_argnames="m")
        old = m.w[...]
        outs = [np.asarray(step(m=m, x=jnp.ones(2), times=t)) for t in (1, 2, 2)]
        results.append((outs, old.is_deleted()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] is True


def test_a_pytree_value_mutated_in_place_is_written_back():
    """A Variable whose value is a dict, changed in place inside the step (as nnx.capture's
    perturbations are): the update is seen by comparing with the leaves taken before the call."""

    def f(m):
        m.v["a"] = m.v["a"] + 1.0

    outs = []
    for jit in (nnx.jit, cached_nnx_jit):
        m, step = nnx.Dict(v=nnx.Variable({"a": jnp.zeros(())})), jit(f)
        step(m)
        step(m)
        outs.append(float(m.v.get_value()["a"]))
    assert outs == [2.0, 2.0]


def test_array_attributes_are_read_and_written_as_nnx_jit_does():
    """Arrays that are no Variable: an attribute of the argument, of a submodule, an item of a list."""

    class Inner(nnx.Module):
        def __init__(self):
            self.scale = jnp.ones(())

    class Arrays(nnx.Module):
        def __init__(self):
            self.count, self.buf, self.inner = jnp.zeros(()), nnx.data([jnp.zeros(2), jnp.ones(2)]), Inner()
            self.w = nnx.Param(jnp.ones(2))

    def f(m, x):
        m.count, m.buf[0], m.inner.scale = m.count + 1, m.buf[0] + x, m.inner.scale * 2
        return (m.w[...] * m.inner.scale).sum()

    seen = []
    for jit in (nnx.jit, cached_nnx_jit):
        m, step = Arrays(), jit(f)
        outs = [float(step(m, jnp.ones(2))) for _ in range(3)]
        seen.append((outs, float(m.count), np.asarray(m.buf[0]).tolist(), float(m.inner.scale)))
    assert seen[0] == seen[1] == ([4.0, 8.0, 16.0], 3.0, [3.0, 3.0], 8.0)
    assert step.stats == {"hits": 2, "misses": 1, "fallbacks": 0}


def test_the_kept_differences_from_nnx_jit():
    """Documented in jaxperf.fixes._nnx: on a call that keeps the structure, a list inside a
    module keeps its identity and an unchanged Variable keeps its array (nnx.jit rebuilds both)."""

    class Holder(nnx.Module):
        def __init__(self):
            self.items = nnx.data([nnx.Param(jnp.zeros(2)), nnx.Param(jnp.ones(2))])

    def f(m):
        m.items[0][...] += 1.0

    kept = {}
    for jit in (nnx.jit, cached_nnx_jit):
        m, step = Holder(), jit(f)
        step(m)
        items, unchanged = m.items, m.items[1][...]
        step(m)
        kept[jit] = (m.items is items, m.items[1][...] is unchanged)
    assert kept[cached_nnx_jit] == (True, True) and kept[nnx.jit] == (False, False)


@pytest.mark.parametrize(
    ("options", "named"),
    [({"graph": False}, "graph"), ({"graph_updates": False}, "graph_updates")],
)
def test_tree_mode_is_refused_naming_the_option(options, named):
    from jaxperf.fixes._nnx import nnx_refusal_counts

    before = nnx_refusal_counts().get("tree mode", 0)
    nnx.jit(lambda m, x: m(x), **options)  # nnx.jit itself accepts it
    with pytest.raises(ValueError, match=rf"{named}=False is not allowed: .*keep nnx.jit"):
        cached_nnx_jit(lambda m, x: m(x), **options)
    assert nnx_refusal_counts()["tree mode"] == before + 1


def test_shardings_are_refused_naming_the_option():
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    with pytest.raises(ValueError, match=r"in_shardings=.* is not allowed: expected None"):
        cached_nnx_jit(lambda x: x, in_shardings=sharding)
    with pytest.raises(ValueError, match=r"out_shardings=.* is not allowed: expected None"):
        cached_nnx_jit(lambda x: x, out_shardings=sharding)


def test_a_variable_argument_is_served_by_the_drop_in_and_kept_nowhere():
    import gc
    import weakref

    def f(v, x):
        v[...] += x
        return v[...] * 2

    results = []
    for jit in (nnx.jit, cached_nnx_jit):
        v, step = nnx.Param(jnp.ones(3)), jit(f)
        outs = [step(v, jnp.full(3, float(k))) for k in range(3)]
        results.append((np.array(v[...]), [np.array(o) for o in outs]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)
    assert step.stats["fallbacks"] == 0 and step.stats["misses"] == 3  # served here, walked each call
    assert not step._records and step._last is None
    ref = weakref.ref(v[...])
    del v
    gc.collect()
    assert ref() is None  # the drop-in keeps no Variable (nor its array) alive
