"""An Equinox step that prints its loss every call with jax.debug.print, as people debug."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, regression

EXPECT = "equal"


def make():
    model = eqx.nn.MLP(WIDTH, WIDTH, 16, depth=1, key=jax.random.key(0))
    optim = optax.sgd(1e-2)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        jax.debug.print("loss {loss}", loss=loss)
        updates, opt_state = optim.update(grads, opt_state)
        return loss, eqx.apply_updates(model, updates), opt_state

    x, y = next(regression())
    return {"step": make_step, "args": (model, opt_state, x, y)}
