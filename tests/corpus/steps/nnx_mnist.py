"""Flax NNX's MNIST tutorial style: nnx.Module, nnx.Optimizer(wrt=nnx.Param), nnx.jit, the
model and optimiser updated in place, a loader."""

import optax
from flax import nnx

from ._data import CLASSES, WIDTH, classification

EXPECT = "equal"


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(WIDTH, 32, rngs=rngs)
        self.linear2 = nnx.Linear(32, CLASSES, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.linear1(x)))


def make():
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, 0.9), wrt=nnx.Param)

    def loss_fn(model, batch):
        logits = model(batch[0])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch[1]).mean()

    @nnx.jit
    def train_step(model, optimizer, batch):
        loss, grads = nnx.value_and_grad(loss_fn)(model, batch)
        optimizer.update(model, grads)
        return loss

    loader = classification()
    return {"step": train_step, "args": (model, optimizer, next(loader)), "loader": loader, "carry": None}
