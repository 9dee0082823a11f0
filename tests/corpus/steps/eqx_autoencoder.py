"""An Equinox autoencoder: the step returns the reconstruction, which has the batch's shape
(not the carry: the loop passes model and optimiser state along, and a new batch)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

from ._data import WIDTH, images

EXPECT = "equal"


class AutoEncoder(eqx.Module):
    encoder: eqx.nn.MLP
    decoder: eqx.nn.MLP

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.encoder = eqx.nn.MLP(WIDTH, 4, 16, depth=1, key=k1)
        self.decoder = eqx.nn.MLP(4, WIDTH, 16, depth=1, key=k2)

    def __call__(self, x):
        return self.decoder(self.encoder(x))


def make():
    model = AutoEncoder(jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def train_step(model, opt_state, x):
        def loss_fn(model):
            recon = jax.vmap(model)(x)
            return jnp.mean((recon - x) ** 2), recon

        (loss, recon), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
        model = eqx.apply_updates(model, updates)
        return loss, recon, model, opt_state

    loader = images()
    return {"step": train_step, "args": (model, opt_state, next(loader)), "loader": loader}
