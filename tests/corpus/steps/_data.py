"""The data every corpus step trains on: small regression and classification batches, as a
numpy data pipeline hands them (a new batch per call)."""

from __future__ import annotations

from collections.abc import Iterator

import jax.numpy as jnp
import numpy as np

WIDTH, BATCH, CLASSES = 16, 16, 4


def regression(width: int = WIDTH, batch: int = BATCH, seed: int = 0) -> Iterator[tuple]:
    rng = np.random.default_rng(seed)
    while True:
        x = rng.standard_normal((batch, width), dtype=np.float32)
        yield jnp.asarray(x), jnp.asarray(np.tanh(x))


def classification(width: int = WIDTH, batch: int = BATCH, seed: int = 0) -> Iterator[tuple]:
    rng = np.random.default_rng(seed)
    while True:
        x = rng.standard_normal((batch, width), dtype=np.float32)
        yield jnp.asarray(x), jnp.asarray(rng.integers(0, CLASSES, batch))


def images(width: int = WIDTH, batch: int = BATCH, seed: int = 0) -> Iterator:
    rng = np.random.default_rng(seed)
    while True:
        yield jnp.asarray(rng.standard_normal((batch, width), dtype=np.float32))


def over_devices(tree, axis="devices"):
    """Every array of ``tree`` placed as ``pmap`` places its inputs: split over the devices on
    axis 0 (``jax.pmap`` docs: one slice per device)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(np.array(jax.devices()), (axis,)), PartitionSpec(axis))
    return jax.tree.map(lambda a: jax.device_put(a, sharding) if isinstance(a, jax.Array) else a, tree)
