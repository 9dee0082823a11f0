"""A step whose traced program depends on Python state it changes while tracing (a learning
rate from how many times it was traced): every path traces it anew and computes something
else, so the paths differ from the step and must never be timed."""

import equinox as eqx
import jax
import jax.numpy as jnp

from ._data import WIDTH, regression

EXPECT = "differs"


def make():
    model = eqx.nn.MLP(WIDTH, WIDTH, 16, depth=1, key=jax.random.key(0))
    traced = []

    @eqx.filter_jit
    def make_step(model, x, y):
        traced.append(1)
        lr = 0.1 / len(traced)  # a Python value fixed at trace time
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        model = eqx.apply_updates(model, jax.tree.map(lambda g: -lr * g, grads))
        return loss, model

    x, y = next(regression())
    return {"step": make_step, "args": (model, x, y)}
