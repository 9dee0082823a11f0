"""The models of the dispatch study, sized so that leaf count dominates.

Small arrays, many of them: the per-call host work of a dispatch method grows
with the number of array leaves it has to partition, flatten and combine, not
with their size. Each model comes with an optimiser state beside it, as in a
training loop, because filter_pmap partitions that too: optax's Adam, as users
write it (``optax.adam(lr).init(eqx.filter(model, eqx.is_array))``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import optax

from jaxperf.errors import check_choice, check_int

MODEL_KINDS = ("mlp", "transformer", "cnn")


class Block(eqx.Module):
    """Pre-norm transformer block: attention then MLP, each with a residual."""

    norm1: eqx.nn.LayerNorm
    attention: eqx.nn.MultiheadAttention
    norm2: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, dim: int, heads: int, *, key: jax.Array):
        k1, k2 = jax.random.split(key)
        self.norm1 = eqx.nn.LayerNorm(dim)
        self.attention = eqx.nn.MultiheadAttention(heads, dim, key=k1)
        self.norm2 = eqx.nn.LayerNorm(dim)
        self.mlp = eqx.nn.MLP(dim, dim, 2 * dim, depth=1, activation=jax.nn.gelu, key=k2)

    def __call__(self, x: jax.Array) -> jax.Array:  # x: [seq, dim]
        h = jax.vmap(self.norm1)(x)
        x = x + self.attention(h, h, h)
        return x + jax.vmap(self.mlp)(jax.vmap(self.norm2)(x))


class Transformer(eqx.Module):
    # A list, as users usually write it: this is what makes jax.pmap's
    # static_broadcasted_argnums fail on the static half (lists are unhashable).
    blocks: list[Block]
    norm: eqx.nn.LayerNorm

    def __init__(self, dim: int, heads: int, layers: int, *, key: jax.Array):
        keys = jax.random.split(key, layers)
        self.blocks = [Block(dim, heads, key=k) for k in keys]
        self.norm = eqx.nn.LayerNorm(dim)

    def __call__(self, x: jax.Array) -> jax.Array:
        for block in self.blocks:
            x = block(x)
        return jax.vmap(self.norm)(x)


class CNN(eqx.Module):
    """``layers`` 3x3 convolutions of ``channels`` channels on a ``channels x 8 x 8`` image, then a
    linear head: the third kind of model whose per-leaf cost the study fits."""

    convs: list[eqx.nn.Conv2d]
    head: eqx.nn.Linear

    def __init__(self, channels: int, layers: int, *, key: jax.Array):
        keys = jax.random.split(key, layers + 1)
        self.convs = [eqx.nn.Conv2d(channels, channels, 3, padding=1, key=k) for k in keys[:-1]]
        self.head = eqx.nn.Linear(channels, channels, key=keys[-1])

    def __call__(self, x: jax.Array) -> jax.Array:  # x: [channels, 8, 8]
        for conv in self.convs:
            x = jax.nn.relu(conv(x))
        return x + self.head(x.mean(axis=(1, 2)))[:, None, None]


#: the optimiser of every train step: Adam as optax writes it
OPTIMISER = optax.adam(1e-3)


def adam_init(model: Any) -> Any:
    """optax Adam's state for ``model``'s arrays."""
    return OPTIMISER.init(eqx.filter(model, eqx.is_array))


def adam_update(model: Any, grads: Any, state: Any) -> tuple[Any, Any]:
    """One optax Adam step, as users write it."""
    updates, state = OPTIMISER.update(grads, state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), state


@dataclass(frozen=True)
class ModelSpec:
    """What to build: ``kind`` 'mlp' (``size`` = depth), 'transformer' or 'cnn' (``size`` = layers);
    a train step on it takes ``microbatches`` batches of ``batch_per_device`` per device per call,
    its gradients accumulated (the step's device time grows with them, its leaves do not)."""

    kind: str
    size: int
    width: int = 32
    batch_per_device: int = 4
    seq: int = 8
    heads: int = 4
    microbatches: int = 1

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, MODEL_KINDS)
        for name in ("size", "width", "batch_per_device", "microbatches"):
            check_int(name, getattr(self, name), minimum=1)

    @property
    def name(self) -> str:
        name = f"mlp_depth{self.size}" if self.kind == "mlp" else f"{self.kind}_{self.size}layers"
        name = name if self.width == ModelSpec.width else f"{name}_width{self.width}"
        return name if self.microbatches == 1 else f"{name}_x{self.microbatches}"

    def build(self, seed: int = 0) -> tuple[Any, Any]:
        key = jax.random.PRNGKey(seed)
        model: Any
        if self.kind == "mlp":
            model = eqx.nn.MLP(self.width, self.width, self.width, depth=self.size, key=key)
        elif self.kind == "cnn":
            model = CNN(self.width, self.size, key=key)
        else:
            model = Transformer(self.width, self.heads, self.size, key=key)
        return model, adam_init(model)

    def batch(self, n_devices: int, seed: int = 1) -> jax.Array:
        """A global batch, ``n_devices * batch_per_device * microbatches`` examples."""
        example = {"transformer": (self.seq, self.width), "cnn": (self.width, 8, 8)}.get(
            self.kind, (self.width,)
        )
        size = n_devices * self.batch_per_device * self.microbatches
        return jax.random.normal(jax.random.PRNGKey(seed), (size, *example))


def count_leaves(*trees: Any) -> int:
    """Number of array leaves: what a dispatch method has to move per call."""
    return len(jax.tree.leaves(eqx.filter(trees, eqx.is_array)))
