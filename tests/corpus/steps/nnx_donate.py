"""Flax NNX with donation: nnx.jit(donate_argnums=(0, 1)) donates the model's and the
optimiser's buffers (Flax's guide on donation)."""

import jax.numpy as jnp
import optax
from flax import nnx

from ._data import WIDTH, regression

EXPECT = "equal"


def make():
    model = nnx.Sequential(
        nnx.Linear(WIDTH, 32, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(32, WIDTH, rngs=nnx.Rngs(1))
    )
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit(donate_argnums=(0, 1))
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    x, y = next(regression())
    return {"step": train_step, "args": (model, optimizer, x, y), "carry": None}
