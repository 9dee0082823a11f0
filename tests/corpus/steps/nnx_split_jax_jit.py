"""Flax NNX's performance guide: nnx.split once outside the loop, a jax.jit step that merges
(graphdef, state), updates the model and optimiser in place and returns nnx.state of both.
nnx.merge reuses the state's Variables, so the step sets its input's leaves in place."""

import jax
import optax
from flax import nnx

from ._data import CLASSES, WIDTH, classification

EXPECT = "equal"


def make():
    model = nnx.Sequential(
        nnx.Linear(WIDTH, 32, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(32, CLASSES, rngs=nnx.Rngs(1))
    )
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))

    def loss_fn(model, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()

    @jax.jit
    def train_step(graphdef, state, x, y):
        model, optimizer = nnx.merge(graphdef, state)
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        state = nnx.state((model, optimizer))
        return loss, state

    loader = classification()
    return {"step": train_step, "args": (graphdef, state, *next(loader)), "loader": loader}
