"""The paths Equinox advises instead of eqx.filter_pmap (jaxperf_study.dispatch.sharded): the
global-batch step equals pmap's step with its pmean on the study's own steps (8 CPU devices and 1),
each path is proved by the diagnosis to compute what the reader's filter_pmap computes before it is
timed, and a step or state the paths cannot take is refused with why. No timing is asserted."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxperf.diagnosis import diagnose
from jaxperf.diagnosis.kinds import identify
from jaxperf.diagnosis.paths import NotApplicable, _as_pmap_outputs
from jaxperf_study.dispatch import sharded
from jaxperf_study.dispatch.cost import Cell
from jaxperf_study.dispatch.models import ModelSpec
from jaxperf_study.dispatch.runners import mapped
from jaxperf_study.dispatch.steps import AXIS, get_step
from jaxperf_study.dispatch.vocab import SHARDED
from jaxperf_study.palette import METHOD_COLORS

FAST = dict(
    precision=0.5,
    max_seconds=2,
    min_rounds=2,
    calls_per_round=2,
    timing_only=True,
    loop_calls=4,
    loop_seconds=0.02,
)


@pytest.mark.parametrize("devices", [8, 1])
@pytest.mark.parametrize("microbatches", [1, 2])
def test_the_global_batch_gradient_is_the_mean_of_the_devices_gradients(devices, microbatches):
    """The study's train step: eqx.filter_pmap with its pmean over equal shards, against the
    step without the pmean under eqx.filter_jit on the whole batch sharded over a Mesh."""
    spec = ModelSpec("mlp", 2, microbatches=microbatches)
    model, opt_state = spec.build()
    x, on = spec.batch(devices), jax.devices()[:devices]
    pmapped = eqx.filter_pmap(get_step("train", AXIS, microbatches), axis_name=AXIS)
    loss, new_model, new_state = pmapped(*mapped(model, opt_state, x, on))
    assert loss.shape == (devices,)
    mesh = Mesh(np.array(on), (AXIS,))
    x = jax.device_put(x, NamedSharding(mesh, P(AXIS)))
    g_loss, g_model, g_state = eqx.filter_jit(sharded.global_step(get_step("train", AXIS, microbatches)))(
        model, x, opt_state
    )
    np.testing.assert_allclose(np.asarray(loss), np.full(devices, g_loss), rtol=1e-6)
    arrays = lambda t: jax.tree.leaves(eqx.filter(t, eqx.is_array))  # noqa: E731
    for a, b in zip(arrays((new_model, new_state)), arrays((g_model, g_state)), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.broadcast_to(b, a.shape), rtol=1e-5, atol=1e-7)
    moved = arrays(g_model)[0] - arrays(model)[0]
    assert np.abs(np.asarray(moved)).max() > 1e-4  # a step was taken: the comparison is not of two copies


@pytest.mark.parametrize(("step", "microbatches"), [("noop", 1), ("train", 2)])
def test_each_path_is_proved_equal_to_filter_pmap_then_timed(step, microbatches):
    wrapped, args = Cell(step, ModelSpec("mlp", 2, microbatches=microbatches), False, "pmap").make()
    result = diagnose(wrapped, *args, extra_paths=sharded.PATHS, **FAST)
    names = {name for name, _ in sharded.FORMS.values()}
    assert not names & {*result.skipped, *result.problems, *result.failed}
    assert names <= set(result.timings["variant"])
    assert {result.methods[n] for n in names} == set(SHARDED) <= set(METHOD_COLORS)


def test_one_device_is_a_mesh_of_one():
    """The TPU v5e lent is one chip: pmap over one device, each path on a Mesh of one."""
    spec, on = ModelSpec("mlp", 1), jax.devices()[:1]
    model, opt_state = spec.build()
    args = _as_pmap_outputs(mapped(model, opt_state, spec.batch(1), on), on, AXIS)
    result = diagnose(
        eqx.filter_pmap(get_step("train", AXIS), axis_name=AXIS), *args, extra_paths=sharded.PATHS, **FAST
    )
    assert {name for name, _ in sharded.FORMS.values()} <= set(
        result.timings["variant"]
    ) and not result.problems


def _sgd(model, x, mean_loss):
    """A pmap step the study did not write: only shard_map can run it with its own pmean."""
    loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - x) ** 2))(model)
    loss, grads = jax.lax.pmean((loss, grads), AXIS) if mean_loss else (loss, jax.lax.pmean(grads, AXIS))
    return loss, eqx.apply_updates(model, jax.tree.map(lambda g: -0.1 * g, grads))


def my_step(model, x, opt_state):
    loss, model = _sgd(model, x, mean_loss=True)
    return loss, model, opt_state


def my_step_loss_per_device(model, x, opt_state):
    loss, model = _sgd(model, x, mean_loss=False)
    return loss, model, opt_state


def test_a_step_of_ones_own_runs_under_shard_map_only_and_its_outputs_are_checked():
    _, args = Cell("train", ModelSpec("mlp", 1), False, "pmap").make()
    result = diagnose(eqx.filter_pmap(my_step, axis_name=AXIS), *args, extra_paths=sharded.PATHS, **FAST)
    for key in ("eqx.filter_jit, sharded", "jax.jit, sharded"):
        assert "only the study's own steps" in result.skipped[key]
    assert "jax.jit of jax.shard_map" in set(result.timings["variant"]) and not result.problems
    # a loss left per device: shard_map returns one device's as the replicated output, and the check says so
    own = eqx.filter_pmap(my_step_loss_per_device, axis_name=AXIS)
    result = diagnose(own, *args, extra_paths=sharded.PATHS, **FAST)
    assert result.problems["jax.jit of jax.shard_map"].startswith("output[0]: largest difference")
    assert "jax.jit of jax.shard_map" not in set(result.timings["variant"])


def test_state_that_differs_between_devices_is_not_replicated():
    wrapped, (model, x, opt_state) = Cell("noop", ModelSpec("mlp", 1), False, "pmap").make()
    count = jnp.arange(jax.device_count())  # Adam's step count, one per device
    opt_state = eqx.tree_at(lambda s: s[0].count, opt_state, count)  # optax Adam: (ScaleByAdamState, ...)
    with pytest.raises(NotApplicable, match="argument 2 differs between devices"):
        sharded.PATHS["jax.jit, sharded"](identify(wrapped), (model, x, opt_state), {0: 1, 2: 2}, None)
