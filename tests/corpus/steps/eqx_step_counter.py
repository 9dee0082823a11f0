"""An Equinox step whose loop passes the step number, a plain int, for a warm-up schedule
(``for step in range(n): loss, model, opt_state = make_step(model, opt_state, x, y, step)``):
eqx.filter_jit takes a Python int as static, so every call traces and compiles again, yet
the step never returns it (the argument to name: ``step_count``)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, regression

EXPECT = "retraces"


def make():
    model = eqx.nn.MLP(WIDTH, WIDTH, 16, depth=1, key=jax.random.key(0))
    optim = optax.sgd(1e-2)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y, step_count):
        warmup = jnp.minimum(1.0, (step_count + 1) / 100)
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        updates, opt_state = optim.update(jax.tree.map(lambda g: warmup * g, grads), opt_state)
        return loss, eqx.apply_updates(model, updates), opt_state

    x, y = next(regression())
    return {"step": make_step, "args": (model, opt_state, x, y, 0)}
