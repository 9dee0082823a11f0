"""What every dispatch method is built into: a :class:`Runner` that runs one step on fixed
inputs (``call()``, what ``tools/bench_dropins.py`` times), and the placement its builders
share (:mod:`jaxperf_study.dispatch.methods` holds the builders)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from .steps import AXIS

Carry = Callable[[Any, tuple], tuple]


@dataclass
class Runner:
    """A method ready to time. ``call()`` runs ``fn(*args)``, one step; a donated runner
    then feeds the step's outputs back as its next inputs (``feed``)."""

    method: str
    donated: bool
    fn: Callable[..., Any]
    args: tuple
    feed: Carry | None = field(default=None, repr=False)

    def call(self) -> Any:
        out = self.fn(*self.args)
        if self.feed is not None:
            self.args = self.feed(out, self.args)
        return out


def _stack(tree: Any, n: int) -> Any:
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, tree)


def _pmap_place(tree: Any, devices: list) -> Any:
    """Put a leading-axis pytree where jax.pmap wants it, so that no call reshards."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.pmap(lambda t: t, devices=devices)(dynamic), static)


def put(tree: Any, sharding: Any) -> Any:
    """``jax.device_put`` of the arrays of ``tree`` (a Module's functions and static fields pass through)."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(dynamic, sharding), static)


def carry_state(model_at: int, opt_at: int) -> Carry:
    """Next args: the step's new (model, opt) in place of the ones it was given."""

    def carry(out: Any, args: tuple) -> tuple:
        new = list(args)
        new[model_at], new[opt_at] = out[1], out[2]
        return tuple(new)

    return carry


def on_params(step: Callable, static: Any) -> Callable:
    """The seed's fast form of ``step``: over the model's arrays only (``params``), the static
    half closed over, returning the new params. What ``jax.pmap`` on params (and the jit and
    shard_map methods) compile; ``static`` is ``eqx.partition(model, eqx.is_array)[1]``."""

    def run(p: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
        loss, m, o = step(eqx.combine(p, static), xb, o)
        return loss, eqx.filter(m, eqx.is_array), o

    return run


@dataclass
class Inputs:
    """What every builder starts from: one model, its optimiser state, a global batch."""

    step: str
    model: Any
    opt_state: Any
    x: jax.Array
    devices: list
    donate: bool

    @property
    def n(self) -> int:
        return len(self.devices)

    def donate_argnums(self, *argnums: int) -> tuple[int, ...]:
        return argnums if self.donate else ()

    def mapped_batch(self) -> jax.Array:
        """The batch split into one slice per device, placed as jax.pmap wants."""
        return _pmap_place(self.x.reshape(self.n, self.x.shape[0] // self.n, *self.x.shape[1:]), self.devices)

    def mapped(self) -> tuple[Any, jax.Array, Any]:
        """Model and opt state replicated, batch split, all placed as jax.pmap wants."""
        stack = lambda t: _pmap_place(_stack(t, self.n), self.devices)  # noqa: E731
        return stack(self.model), self.mapped_batch(), stack(self.opt_state)

    def mesh(self) -> tuple[NamedSharding, NamedSharding]:
        """(replicated, batch-sharded) over a 1-D mesh of the devices."""
        mesh = Mesh(np.array(self.devices), (AXIS,))
        return NamedSharding(mesh, P()), NamedSharding(mesh, P(AXIS))

    def runner(self, method: str, fn: Callable, args: tuple, at: tuple[int, int] = (0, 2)) -> Runner:
        return Runner(method, self.donate, fn, args, carry_state(*at) if self.donate else None)
