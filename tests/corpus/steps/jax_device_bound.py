"""A device-bound step: few parameters, much arithmetic per call (a deep stack of large
matmuls), so the host's dispatch work is a small part of each call: no change is worth it."""

import jax
import jax.numpy as jnp
import optax

EXPECT = "no change"
SIZE, DEPTH = 512, 4


def make():
    w = jax.random.normal(jax.random.key(0), (SIZE, SIZE)) / SIZE
    optimizer = optax.sgd(1e-3)
    opt_state = optimizer.init(w)

    def loss(w, x):
        for _ in range(DEPTH):
            x = jnp.tanh(x @ w)
        return jnp.mean(x**2)

    @jax.jit
    def train_step(w, opt_state, x):
        value, grad = jax.value_and_grad(loss)(w, x)
        updates, opt_state = optimizer.update(grad, opt_state)
        return value, optax.apply_updates(w, updates), opt_state

    x = jax.random.normal(jax.random.key(1), (SIZE, SIZE))
    return {"step": train_step, "args": (w, opt_state, x)}
