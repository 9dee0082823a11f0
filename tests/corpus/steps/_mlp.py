"""A plain-JAX MLP as JAX's and optax's docs write one: a list of {"w", "b"} dicts."""

import jax
import jax.numpy as jnp

from ._data import WIDTH


def init(sizes=(WIDTH, 32, WIDTH), seed=0):
    keys = jax.random.split(jax.random.key(seed), len(sizes) - 1)
    return [
        {"w": jax.random.normal(k, (m, n)) / jnp.sqrt(m), "b": jnp.zeros(n)}
        for k, m, n in zip(keys, sizes[:-1], sizes[1:])
    ]


def predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)
