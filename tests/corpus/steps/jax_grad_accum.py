"""Plain JAX with gradient accumulation (lax.scan over microbatches), params as a dict, donated; the
loader yields (xs, ys), which fill the last two arguments of step(params, opt_state, xs, ys)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

EXPECT = "equal"


def init(key):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (16, 64)) * 0.1,
        "b1": jnp.zeros(64),
        "w2": jax.random.normal(k2, (64, 1)) * 0.1,
        "b2": jnp.zeros(1),
    }


def loss(p, x, y):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


opt = optax.adam(1e-3)


@functools.partial(jax.jit, donate_argnums=(0, 1))
def step(params, opt_state, xs, ys):
    def micro(g, xy):
        l, gi = jax.value_and_grad(loss)(params, *xy)
        return jax.tree.map(jnp.add, g, gi), l

    g, ls = jax.lax.scan(micro, jax.tree.map(jnp.zeros_like, params), (xs, ys))
    g = jax.tree.map(lambda a: a / xs.shape[0], g)
    updates, opt_state = opt.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, ls.mean()


def make():
    params = init(jax.random.key(1))
    rng = np.random.default_rng(0)

    def loader():
        while True:
            x = rng.standard_normal((4, 8, 16), dtype=np.float32)
            yield jnp.asarray(x), jnp.asarray(x[..., :1] ** 2)

    it = loader()
    xs, ys = next(it)
    return {"step": step, "args": (params, opt.init(params), xs, ys), "loader": it}
