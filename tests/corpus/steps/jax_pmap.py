"""JAX's data-parallel pmap tutorial: replicated parameters, lax.pmean of the gradients,
donate_argnums for the replicated state."""

import functools

import jax
import jax.numpy as jnp
import optax

from . import _mlp
from ._data import over_devices, regression

EXPECT = "equal"


def make():
    n = jax.device_count()
    optimizer = optax.sgd(1e-2)
    params = _mlp.init()
    opt_state = optimizer.init(params)
    replicate = lambda tree: jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)), tree)  # noqa: E731

    @functools.partial(jax.pmap, axis_name="i", donate_argnums=(0, 1))
    def update(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(_mlp.loss)(params, x, y)
        grads = jax.lax.pmean(grads, axis_name="i")
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, jax.lax.pmean(loss, "i")

    x, y = next(regression(batch=2 * n))
    return {
        "step": update,
        "args": over_devices(
            (replicate(params), replicate(opt_state), x.reshape(n, 2, -1), y.reshape(n, 2, -1)), "i"
        ),
    }
