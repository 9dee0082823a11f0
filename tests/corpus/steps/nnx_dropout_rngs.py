"""Flax NNX with nnx.Dropout and nnx.Rngs(dropout=...): the Rngs stream (a typed PRNG key)
advances inside the step, in place."""

import optax
from flax import nnx

from ._data import CLASSES, WIDTH, classification

EXPECT = "equal"


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(WIDTH, 32, rngs=rngs)
        self.dropout = nnx.Dropout(0.2, rngs=rngs)
        self.bn = nnx.BatchNorm(32, rngs=rngs)
        self.linear2 = nnx.Linear(32, CLASSES, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)


def make():
    model = Model(nnx.Rngs(params=0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))

    @nnx.jit
    def train_step(model, optimizer, metrics, batch):
        def loss_fn(model):
            logits = model(batch[0])
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch[1]).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        metrics.update(loss=loss)
        optimizer.update(model, grads)

    loader = classification()
    return {
        "step": train_step,
        "args": (model, optimizer, metrics, next(loader)),
        "loader": loader,
        "carry": None,
    }
