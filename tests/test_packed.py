"""The packed fast path on the study's models: the same loss and params as eqx.filter_pmap
after N train steps (MLPs and the transformer, pmap and jit forms), donation, and the TPU
study's ahead-of-time path. PackedState's own contract (every way a leaf comes back, misuse
errors, re-packing) is tested in tests/core/test_packed_state.py."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxperf import PackedState, packed_jit, packed_pmap
from jaxperf_study.dispatch import AXIS, ModelSpec, make_train_step, state_step

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
