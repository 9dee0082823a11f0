"""Flax NNX in tree mode (nnx.jit(graph=False)) with a static argument (``training``)."""

import jax.numpy as jnp
import optax
from flax import nnx

from ._data import WIDTH, regression

EXPECT = "equal"


def make():
    model = nnx.Sequential(
        nnx.Linear(WIDTH, 32, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(32, WIDTH, rngs=nnx.Rngs(1))
    )
    optimizer = nnx.Optimizer(model, optax.sgd(1e-2), wrt=nnx.Param)

    @nnx.jit(graph=False, static_argnums=2)
    def train_step(model, optimizer, training, x, y):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        if training:
            optimizer.update(model, grads)
        return loss

    x, y = next(regression())
    return {"step": train_step, "args": (model, optimizer, True, x, y), "carry": None}
