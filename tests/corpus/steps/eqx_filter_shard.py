"""Equinox's "Parallelism" example: the batch sharded over every device with
eqx.filter_shard, the model replicated, eqx.filter_jit."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ._data import WIDTH, regression

EXPECT = "equal"


def make():
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    replicated = NamedSharding(mesh, PartitionSpec())
    sharded = NamedSharding(mesh, PartitionSpec("batch"))
    model = eqx.nn.MLP(WIDTH, WIDTH, 32, depth=2, key=jax.random.key(0))
    optim = optax.sgd(1e-2)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    model, opt_state = eqx.filter_shard((model, opt_state), replicated)

    @eqx.filter_jit(donate="all")
    def train_step(model, opt_state, batch):
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        x, y = eqx.filter_shard(batch, sharded)

        def loss(model):
            return jnp.mean((jax.vmap(model)(x) - y) ** 2)

        grads = eqx.filter_grad(loss)(model)
        updates, opt_state = optim.update(grads, opt_state)
        model = eqx.apply_updates(model, updates)
        model, opt_state = eqx.filter_shard((model, opt_state), replicated)
        return model, opt_state

    data = regression(batch=2 * len(jax.devices()))

    def loader():  # a new batch per call: donate="all" consumes each one
        return jax.device_put(next(data), sharded)

    return {"step": train_step, "args": (model, opt_state, loader()), "loader": loader}
