"""An Equinox step with dropout whose key is folded with the step number the loop passes
(``key = jax.random.fold_in(base_key, step_count)``, the base key fixed): the int is static
under eqx.filter_jit, so each call compiles again (the argument to name: ``step_count``)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import regression
from .eqx_dropout_key import Model

EXPECT = "retraces"


def make():
    model = Model(jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def make_step(model, opt_state, batch, base_key, step_count):
        x, y = batch
        keys = jax.random.split(jax.random.fold_in(base_key, step_count), x.shape[0])
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x, keys) - y) ** 2))(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return loss, eqx.apply_updates(model, updates), opt_state

    data = regression()
    return {
        "step": make_step,
        "args": (model, opt_state, next(data), jax.random.key(1), 0),
        "loader": data,
    }
