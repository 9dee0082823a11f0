"""eqx.filter_jit(donate="all-except-first") with a data loader: model and optimiser state
donated each call, as Equinox's docs advise to halve the memory."""

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

    @eqx.filter_jit(donate="all-except-first")
    def make_step(batch, model, opt_state):
        x, y = batch
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    loader = regression()
    return {"step": make_step, "args": (next(loader), model, opt_state), "loader": loader}
