"""An Equinox model with eqx.nn.Dropout, a typed PRNG key (jax.random.key) split each call and
returned for the next: the key is part of the carry."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, regression

EXPECT = "equal"


class Model(eqx.Module):
    mlp: eqx.nn.MLP
    dropout: eqx.nn.Dropout

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(WIDTH, WIDTH, 32, depth=2, key=key)
        self.dropout = eqx.nn.Dropout(0.1)

    def __call__(self, x, key):
        return self.mlp(self.dropout(x, key=key))


def make():
    model = Model(jax.random.key(0))
    optim = optax.adamw(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y, key):
        key, subkey = jax.random.split(key)
        keys = jax.random.split(subkey, x.shape[0])

        def loss_fn(model):
            return jnp.mean((jax.vmap(model)(x, keys) - y) ** 2)

        loss, grads = eqx.filter_value_and_grad(loss_fn)(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return loss, eqx.apply_updates(model, updates), opt_state, key

    x, y = next(regression())
    return {"step": make_step, "args": (model, opt_state, x, y, jax.random.key(1))}
