"""Flax NNX "scan over layers": layers created with nnx.vmap, applied with nnx.scan."""

import jax.numpy as jnp
import optax
from flax import nnx

from ._data import WIDTH, regression

EXPECT = "equal"


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(WIDTH, WIDTH, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.linear(x))


class Stack(nnx.Module):
    def __init__(self, depth: int, rngs: nnx.Rngs):
        @nnx.split_rngs(splits=depth)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def create(rngs: nnx.Rngs):
            return Block(rngs)

        self.blocks = create(rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def forward(x, block):
            return block(x)

        return forward(x, self.blocks)


def make():
    model = Stack(4, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    x, y = next(regression())
    return {"step": train_step, "args": (model, optimizer, x, y), "carry": None}
