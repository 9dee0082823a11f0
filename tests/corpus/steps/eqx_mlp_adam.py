"""Equinox's "Train an MLP" style: eqx.filter_jit, eqx.filter_value_and_grad, optax.adam."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, regression

EXPECT = "equal"


def make():
    model = eqx.nn.MLP(WIDTH, WIDTH, 32, depth=2, key=jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        def loss_fn(model, x, y):
            return jnp.mean((jax.vmap(model)(x) - y) ** 2)

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        model = eqx.apply_updates(model, updates)
        return loss, model, opt_state

    x, y = next(regression())
    return {"step": make_step, "args": (model, opt_state, x, y)}
