"""Data parallelism with eqx.filter_pmap: each device's gradients averaged with lax.pmean."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, over_devices, regression

EXPECT = "equal"


def make():
    n = jax.device_count()
    model = eqx.nn.MLP(WIDTH, WIDTH, 16, depth=2, key=jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    # every array replicated over the devices, one copy per device on axis 0
    model, opt_state = jax.tree.map(
        lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, (model, opt_state)
    )

    @eqx.filter_pmap(axis_name="devices")
    def train_step(model, opt_state, x, y):
        def loss(model):
            return jnp.mean((jax.vmap(model)(x) - y) ** 2)

        value, grads = eqx.filter_value_and_grad(loss)(model)
        grads = jax.lax.pmean(grads, "devices")
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return jax.lax.pmean(value, "devices"), eqx.apply_updates(model, updates), opt_state

    x, y = next(regression(batch=4 * n))
    return {
        "step": train_step,
        "args": over_devices((model, opt_state, x.reshape(n, 4, -1), y.reshape(n, 4, -1)), "devices"),
    }
