"""The patch's per-call tree work, counted rather than timed (notebook 01 times the patched
wrappers through the diagnosis engine): :func:`traversals` counts the pytree flattens and
unflattens of one call of each wrapper, shipped and patched.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import pandas as pd

from .load import patched_filter_jit, patched_filter_pmap

#: variant -> label
VARIANTS = {
    "jit_params": "jax.jit on params",
    "filter_jit": "eqx.filter_jit",
    "filter_jit_patched": "eqx.filter_jit, patched",
    "pmap_params": "jax.pmap on params",
    "filter_pmap": "eqx.filter_pmap",
    "filter_pmap_patched": "eqx.filter_pmap, patched",
}


def traversals() -> pd.DataFrame:
    """How many times one call of each wrapper flattens and unflattens a pytree node of its
    input and output (the call after the compiling one, on a node that counts itself): the
    per-call tree work that grows with the leaves, counted rather than timed. One row per
    variant of :data:`VARIANTS`, the pmap ones on one device."""
    import jax.numpy as jnp
    import jax.tree_util as jtu

    counts = {"flattens": 0, "unflattens": 0}

    class Node:
        def __init__(self, x: Any):
            self.x = x

    def flatten(node: Node) -> tuple[tuple[Any], None]:
        counts["flattens"] += 1
        return (node.x,), None

    def unflatten(_: None, children: Any) -> Node:
        counts["unflattens"] += 1
        return Node(*children)

    jtu.register_pytree_node(Node, flatten, unflatten)
    step = lambda node: Node(node.x + 1)  # noqa: E731
    shipped_filter_pmap: Any = eqx.filter_pmap  # its overloads do not list **pmapkwargs
    device = jax.devices()[:1]
    wrappers = {
        "jit_params": jax.jit(step),
        "filter_jit": eqx.filter_jit(step),
        "filter_jit_patched": patched_filter_jit(step),
        "pmap_params": jax.pmap(step, devices=device),
        "filter_pmap": shipped_filter_pmap(step, devices=device),
        "filter_pmap_patched": patched_filter_pmap(step, devices=device),
    }
    rows = []
    for variant, fn in wrappers.items():
        jax.block_until_ready(fn(Node(jnp.zeros(1))).x)  # compiled
        counts.update(flattens=0, unflattens=0)
        out = fn(Node(jnp.ones(1)))
        rows.append({"variant": variant, "label": VARIANTS[variant], **counts})
        if float(out.x[0]) != 2.0:
            raise AssertionError(f"{variant} computed {out.x} from [1.0], not [2.0]")
    return pd.DataFrame(rows)
