"""The packed fast path: the same loss and params as eqx.filter_pmap after N train
steps (MLPs and the transformer, pmap and jit forms), donation, and clear errors."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxperf import PackedState, packed_jit, packed_pmap
from jaxperf.dispatch import AXIS, ModelSpec, make_train_step, state_step
from jaxperf.fixes import _pmap_entry, packed

N = 8
STEPS = 4
SPECS = [ModelSpec("mlp", 2), ModelSpec("mlp", 6), ModelSpec("transformer", 1)]


def stacked(tree):
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (N, *a.shape)) if eqx.is_array(a) else a, tree)


@functools.cache
def reference_run(spec):
    """Losses and final (params, opt_state) of STEPS train steps under eqx.filter_pmap."""
    model, opt = spec.build()
    x = spec.batch(N)
    step = eqx.filter_pmap(make_train_step(AXIS), axis_name=AXIS)
    model, opt, xs = stacked(model), stacked(opt), x.reshape(N, -1, *x.shape[1:])
    losses = []
    for _ in range(STEPS):
        loss, model, opt = step(model, xs, opt)
        losses.append(float(loss[0]))
    first = lambda t: jax.tree.map(lambda a: np.asarray(a)[0], eqx.filter(t, eqx.is_array))  # noqa: E731
    return losses, first((model, opt))


def assert_close(expected, got, rtol=2e-5, atol=1e-6):
    le, te = jax.tree.flatten(expected)
    lg, tg = jax.tree.flatten(got)
    assert te == tg
    for a, b in zip(le, lg):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@pytest.mark.parametrize("donate", [True, False])
def test_packed_pmap_trains_like_filter_pmap(spec, donate):
    losses, params = reference_run(spec)
    model, opt = spec.build()
    x = spec.batch(N)
    devices = jax.devices()[:N]
    state = PackedState.pack((model, opt)).replicate(devices)
    step = packed_pmap(state_step(make_train_step(AXIS)), axis_name=AXIS, devices=devices, donate=donate)
    xs = x.reshape(N, -1, *x.shape[1:])
    got = []
    for _ in range(STEPS):
        old = state
        loss, state = step(state, xs)
        got.append(float(loss[0]))
        assert all(b.is_deleted() for b in old.buffers) is donate
    np.testing.assert_allclose(got, losses, rtol=2e-5)
    model_n, opt_n = state.unpack()  # replicated: every leaf has the device axis
    first = lambda t: jax.tree.map(lambda a: np.asarray(a)[0], eqx.filter(t, eqx.is_array))  # noqa: E731
    assert_close(params, first((model_n, opt_n)))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_packed_jit_trains_like_filter_pmap(spec):
    losses, params = reference_run(spec)
    model, opt = spec.build()
    mesh = Mesh(np.array(jax.devices()[:N]), (AXIS,))
    replicated, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P(AXIS))
    state = PackedState.pack(eqx.filter_shard((model, opt), replicated))
    assert all(b.sharding == replicated for b in state.buffers)
    x = jax.device_put(spec.batch(N), batch)
    step = packed_jit(state_step(make_train_step(None)))
    got = []
    for _ in range(STEPS):
        loss, state = step(state, x)
        got.append(float(loss))
    assert all(b.sharding == replicated for b in state.buffers)
    np.testing.assert_allclose(got, losses, rtol=2e-5)
    host = jax.tree.map(np.asarray, eqx.filter(state.unpack(), eqx.is_array))
    assert_close(params, host)


def test_pack_groups_by_dtype_and_round_trips():
    model, opt = ModelSpec("mlp", 2).build()
    state = PackedState.pack((model, opt))
    assert [str(b.dtype) for b in state.buffers] == ["float32", "int32"]  # params + Adam moments, count
    assert state.buffers[1].shape == (1,)
    back_model, back_opt = state.unpack()
    assert_close(eqx.filter((model, opt), eqx.is_array), eqx.filter((back_model, back_opt), eqx.is_array))
    assert back_model.activation is model.activation  # non-array leaves kept in the layout
    assert "19 leaves in 2 buffers" in repr(state) and state.nbytes == sum(b.nbytes for b in state.buffers)


def test_a_step_that_changes_the_state_is_a_clear_error():
    state = PackedState.pack({"w": jnp.ones((2, 3)), "n": jnp.zeros((), jnp.int32)})
    reshape = packed_jit(lambda tree: (0.0, {"w": tree["w"].T, "n": tree["n"]}), donate=False)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) and dtype float32"):
        reshape(state)
    restructure = packed_jit(lambda tree: (0.0, {"w": tree["w"]}), donate=False)
    with pytest.raises(ValueError, match="new state"):
        restructure(state)


def test_sharded_leaves_cannot_be_packed():
    mesh = Mesh(np.array(jax.devices()[:N]), (AXIS,))
    sharded = jax.device_put(jnp.ones((N, 2)), NamedSharding(mesh, P(AXIS)))
    with pytest.raises(ValueError, match="fully replicated"):
        PackedState.pack({"w": sharded})


def _spy_on_pmap(monkeypatch, module):
    calls = []
    real = jax.pmap

    def spy(fun, **kwargs):
        calls.append(kwargs)
        return real(fun, **kwargs)

    monkeypatch.setattr(module.jax, "pmap", spy)
    return calls


def _has_list(tree):
    return isinstance(tree, list) or (isinstance(tree, tuple) and any(_has_list(t) for t in tree))


def test_no_list_axes_reach_jax_pmap(monkeypatch):
    """Multi-process jax.pmap rejects list out_axes (equinox's bug there): neither path passes one."""
    from jaxperf import cached_filter_pmap

    calls = _spy_on_pmap(monkeypatch, packed)
    model, opt = ModelSpec("mlp", 1).build()
    state = PackedState.pack((model, opt)).replicate(jax.devices()[:N])
    packed_pmap(lambda t, x: (x.sum(), t), axis_name=AXIS)(state, jnp.ones((N, 2)))
    monkeypatch.undo()
    calls += _spy_on_pmap(monkeypatch, _pmap_entry)
    cached_filter_pmap(lambda m, x: (0.0, m, x), out_axes=(None, 0, 0))(stacked(model), jnp.ones((N, 2)))
    assert len(calls) == 2
    for kwargs in calls:
        assert not _has_list(kwargs.get("out_axes")) and not _has_list(kwargs.get("in_axes"))


def test_ahead_of_time_from_abstract_arrays():
    """What the TPU study does: lower each path from ShapeDtypeStructs, then run the compiled one."""
    from jaxperf import cached_filter_pmap

    spec = ModelSpec("mlp", 1)
    model, opt = spec.build()
    x = spec.batch(N).reshape(N, -1, spec.width)
    step = make_train_step(AXIS)

    def abstract(t):
        return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype) if eqx.is_array(a) else a, t)

    args = (stacked(model), x, stacked(opt))
    compiled = cached_filter_pmap(step, axis_name=AXIS).lower(*map(abstract, args)).compile()
    assert_close(
        eqx.filter(eqx.filter_pmap(step, axis_name=AXIS)(*args), eqx.is_array),
        eqx.filter(compiled(*args), eqx.is_array),
    )

    state = PackedState.pack((model, opt))
    fn = packed_pmap(state_step(step), axis_name=AXIS, donate=False)
    lowered = fn.lower(state.abstract(replicas=N), jax.ShapeDtypeStruct(x.shape, x.dtype))
    loss, _ = lowered.compile()(state.replicate(jax.devices()[:N]), x)
    np.testing.assert_allclose(
        np.asarray(loss), np.asarray(eqx.filter_pmap(step, axis_name=AXIS)(*args)[0]), rtol=1e-6
    )
