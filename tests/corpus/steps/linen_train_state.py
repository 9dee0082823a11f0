"""Flax Linen with flax.training.train_state, as the Linen docs write a training step: TrainState.step
starts as the Python int 0 and comes back as an array; the step returns (state, metrics)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state

EXPECT = "equal"


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(64)(x)
        x = nn.relu(x)
        x = nn.Dense(64)(x)
        x = nn.relu(x)
        return nn.Dense(10)(x)


def make():
    model = CNN()
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 32)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.sgd(0.1, 0.9))

    @jax.jit
    def train_step(state, batch):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, batch["image"])
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean(), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        state = state.apply_gradients(grads=grads)
        metrics = {"loss": loss, "accuracy": jnp.mean(jnp.argmax(logits, -1) == batch["label"])}
        return state, metrics

    rng = np.random.default_rng(0)

    def loader():
        while True:
            yield {
                "image": jnp.asarray(rng.standard_normal((32, 32), dtype=np.float32)),
                "label": jnp.asarray(rng.integers(0, 10, 32)),
            }

    it = loader()
    return {"step": train_step, "args": (state, next(it)), "loader": it}
