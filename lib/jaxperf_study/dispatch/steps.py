"""The two steps the dispatch study times, both ``step(model, x, opt_state) -> (loss, model, opt_state)``.

- ``noop``: the seed's step from equinox#192; it touches nothing, so every
  microsecond it costs is dispatch.
- ``train``: a real step: loss, gradients, a ``pmean`` over the mapped axis
  when there is one, then Adam.

The mapped methods (pmap, shard_map) call a step built with ``axis_name``; the
global ones (jit with shardings, one device) a step built with ``None``: the
same arithmetic, with the mean taken over the whole batch by XLA instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxperf.errors import check_choice

from .models import adam_update
from .vocab import AXIS as AXIS
from .vocab import STEPS

Step = Callable[[Any, jax.Array, Any], tuple[Any, Any, Any]]


def noop_step(model: Any, x: jax.Array, opt_state: Any) -> tuple[Any, Any, Any]:
    """The seed's step from equinox#192: touches nothing, returns its inputs."""
    return 0.0, model, opt_state


def make_train_step(axis_name: str | None, microbatches: int = 1) -> Step:
    """Mean squared reconstruction loss, its gradient (averaged over ``microbatches`` equal
    slices of the batch, one after another in a ``lax.scan``: gradient accumulation), a
    ``pmean`` over ``axis_name`` (when not None), then one Adam update of model and optimiser state."""

    def loss_fn(m: Any, x: jax.Array) -> jax.Array:
        return jnp.mean((jax.vmap(m)(x) - x) ** 2)

    def train_step(model: Any, x: jax.Array, opt_state: Any) -> tuple[Any, Any, Any]:
        if microbatches == 1:
            loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x)
        else:

            def add(total: Any, xb: jax.Array) -> tuple[Any, None]:
                return jax.tree.map(jnp.add, total, eqx.filter_value_and_grad(loss_fn)(model, xb)), None

            zeros = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, eqx.filter(model, eqx.is_array)))
            slices = x.reshape(microbatches, x.shape[0] // microbatches, *x.shape[1:])
            loss, grads = jax.tree.map(lambda t: t / microbatches, jax.lax.scan(add, zeros, slices)[0])
        if axis_name is not None:
            loss, grads = jax.lax.pmean((loss, grads), axis_name)
        model, opt_state = adam_update(model, grads, opt_state)
        return loss, model, opt_state

    return train_step


def batch_first(step: Step) -> Callable[[jax.Array, Any, Any], tuple[Any, Any, Any]]:
    """``step`` with the batch as its first argument: Equinox's "all-except-first" then donates
    model and optimiser state and keeps the batch (a donated batch can be consumed)."""

    def first(x: jax.Array, model: Any, opt_state: Any) -> tuple[Any, Any, Any]:
        return step(model, x, opt_state)

    first.__name__ = getattr(step, "__name__", "step")
    return first


def get_step(step: str, axis_name: str | None, microbatches: int = 1) -> Step:
    """The step named ``step`` (one of :data:`STEPS`), for a mapped (``axis_name``) or global (None) method."""
    check_choice("step", step, STEPS)
    return noop_step if step == "noop" else make_train_step(axis_name, microbatches)
