"""Equinox's scan-over-layers trick (layers made with filter_vmap, run with lax.scan); the loader
yields (x, y), which fill the last two arguments of step(model, opt_state, x, y)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

EXPECT = "equal"


class Block(eqx.Module):
    lin: eqx.nn.Linear

    def __init__(self, key):
        self.lin = eqx.nn.Linear(32, 32, key=key)

    def __call__(self, x):
        return x + jax.nn.gelu(self.lin(x))


class Model(eqx.Module):
    blocks: Block
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.blocks = eqx.filter_vmap(Block)(jax.random.split(k1, 12))
        self.head = eqx.nn.Linear(32, 1, key=k2)

    def __call__(self, x):
        dyn, static = eqx.partition(self.blocks, eqx.is_array)

        def f(x, d):
            return eqx.combine(d, static)(x), None

        x, _ = jax.lax.scan(f, x, dyn)
        return self.head(x)


def make():
    model = Model(jax.random.key(0))
    opt = optax.adamw(1e-3)
    opt_state = opt.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_jit
    def step(model, opt_state, x, y):
        def lf(m):
            return jnp.mean((jax.vmap(m)(x) - y) ** 2)

        loss, g = eqx.filter_value_and_grad(lf)(model)
        upd, opt_state = opt.update(g, opt_state, eqx.filter(model, eqx.is_inexact_array))
        return loss, eqx.apply_updates(model, upd), opt_state

    rng = np.random.default_rng(0)

    def loader():
        while True:
            x = rng.standard_normal((16, 32), dtype=np.float32)
            yield jnp.asarray(x), jnp.asarray(x[:, :1])

    it = loader()
    return {"step": step, "args": (model, opt_state, *next(it)), "loader": it}
