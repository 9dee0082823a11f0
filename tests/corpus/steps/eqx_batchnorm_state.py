"""Equinox's stateful layers (eqx.nn.State, BatchNorm), as its "Stateful operations" example:
the state threaded through the step and returned."""

import equinox as eqx
import jax
import optax

from ._data import CLASSES, WIDTH, classification

EXPECT = "equal"


class Model(eqx.Module):
    linear1: eqx.nn.Linear
    norm: eqx.nn.BatchNorm
    linear2: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.linear1 = eqx.nn.Linear(WIDTH, 32, key=k1)
        self.norm = eqx.nn.BatchNorm(32, axis_name="batch")
        self.linear2 = eqx.nn.Linear(32, CLASSES, key=k2)

    def __call__(self, x, state):
        x = jax.nn.relu(self.linear1(x))
        x, state = self.norm(x, state)
        return self.linear2(x), state


def make():
    model, state = eqx.nn.make_with_state(Model)(jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    def compute_loss(model, state, x, y):
        batch_model = jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))
        logits, state = batch_model(x, state)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, state

    @eqx.filter_jit
    def make_step(model, state, opt_state, x, y):
        grads, state = eqx.filter_grad(compute_loss, has_aux=True)(model, state, x, y)
        updates, opt_state = optim.update(grads, opt_state)
        model = eqx.apply_updates(model, updates)
        return model, state, opt_state

    loader = classification()
    return {"step": make_step, "args": (model, state, opt_state, *next(loader))}
