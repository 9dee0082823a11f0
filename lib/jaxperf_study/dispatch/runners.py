"""Where the dispatch study's steps take their inputs: placed as ``jax.pmap`` wants them
(:func:`mapped`) or on one device (:func:`put`), and the seed's fast form of a step
(:func:`on_params`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp


def _pmap_place(tree: Any, devices: list) -> Any:
    """Put a leading-axis pytree where jax.pmap wants it, so that no call reshards."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.pmap(lambda t: t, devices=devices)(dynamic), static)


def put(tree: Any, sharding: Any) -> Any:
    """``jax.device_put`` of the arrays of ``tree`` (a Module's functions and static fields pass through)."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(dynamic, sharding), static)


def mapped(model: Any, opt_state: Any, x: jax.Array, devices: list) -> tuple[Any, jax.Array, Any]:
    """Model and optimiser state replicated over ``devices``, the global batch ``x`` split into
    one slice per device, all placed as jax.pmap wants."""
    n = len(devices)
    stack = lambda t: jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, t)  # noqa: E731
    x = x.reshape(n, x.shape[0] // n, *x.shape[1:])
    return _pmap_place(stack(model), devices), _pmap_place(x, devices), _pmap_place(stack(opt_state), devices)


def on_params(step: Callable, static: Any) -> Callable:
    """The seed's fast form of ``step``: over the model's arrays only (``params``), the static
    half closed over, returning the new params. What ``jax.pmap`` / ``jax.jit`` on params
    compile; ``static`` is ``eqx.partition(model, eqx.is_array)[1]``."""

    def run(p: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
        loss, m, o = step(eqx.combine(p, static), xb, o)
        return loss, eqx.filter(m, eqx.is_array), o

    return run
