"""The dispatch methods: ten ways to run one step over ``n`` devices, each with
and without donated model and optimiser state.

Each builder turns a step ``step(model, x, opt_state) -> (loss, model,
opt_state)`` into a :class:`Runner`: a zero-argument ``call()`` that runs one
step on fixed inputs, and a ``canonical`` function that maps its raw output to
(loss, params, opt_state) on the host, so that every method can be proved to
compute the same thing before it is timed.

A donated runner threads its state: each call's model and optimiser state
are the previous call's outputs (the donated inputs no longer exist), as in a
training loop. The batch is never donated on purpose; methods that donate
every array (``eqx.filter_pmap(donate="all")``) offer it too, and XLA leaves it
alone because no output can reuse its buffer.
"""

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

from ..errors import bad_value, check_choice, check_int
from ..fixes import packed
from ..fixes.cached_pmap import cached_filter_pmap
from .steps import AXIS, get_step

BASELINE = "pmap_params"
SLOW = "filter_pmap"
FIX = "cached_filter_pmap"
FAST_PATHS = ("packed_pmap", "packed_jit")

#: method id -> label used in figures and tables
METHODS: dict[str, str] = {
    "filter_pmap": "eqx.filter_pmap (whole model)",
    "pmap_params": "jax.pmap on params (partition once)",
    "pmap_static_argnums": "jax.pmap, static_broadcasted_argnums",
    "cached_filter_pmap": "jaxperf.cached_filter_pmap (the drop-in fix)",
    "packed_pmap": "jaxperf.packed_pmap (packed fast path)",
    "jit_named_sharding": "jax.jit + NamedSharding",
    "filter_jit_shard": "eqx.filter_jit + eqx.filter_shard",
    "jit_shard_map": "jax.jit(jax.shard_map)",
    "packed_jit": "jaxperf.packed_jit + NamedSharding (packed fast path)",
    "jit_single_device": "jax.jit on 1 device (floor)",
}

Canonical = Callable[[Any], tuple[Any, Any, Any]]


@dataclass
class Runner:
    """A method ready to time. ``call()`` runs ``fn(*args)``, one step; a donated
    runner then feeds the step's outputs back as its next inputs (``feed``).
    ``canonical`` maps an output to (loss, params, opt_state) on the host."""

    method: str
    donated: bool
    fn: Callable[..., Any]
    args: tuple
    canonical: Canonical
    feed: Callable[[Any, tuple], tuple] | None = field(default=None, repr=False)

    def call(self) -> Any:
        out = self.fn(*self.args)
        if self.feed is not None:
            self.args = self.feed(out, self.args)
        return out


def variant_name(method: str, donated: bool) -> str:
    """The name a (method, donated) pair is timed under: one column, no renames."""
    return f"{method}+donate" if donated else method


# ---------------------------------------------------------------- placement and canonical forms


def _stack(tree: Any, n: int) -> Any:
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, tree)


def _pmap_place(tree: Any, devices: list) -> Any:
    """Put a leading-axis pytree where jax.pmap wants it, so that no call reshards."""
    dynamic, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.pmap(lambda t: t, devices=devices)(dynamic), static)


def _host(tree: Any) -> Any:
    return jax.tree.map(np.asarray, tree)


def _first(tree: Any) -> Any:
    return jax.tree.map(lambda a: np.asarray(a)[0], tree)


def _canonical(mapped: bool, static: Any = None) -> Canonical:
    """(loss, model or params, opt) -> host (loss, params, opt): the first replica when mapped."""
    pick = _first if mapped else _host

    def canonical(out: Any) -> tuple[Any, Any, Any]:
        loss, model, opt = out
        model = model if static is None else eqx.combine(model, static)
        return np.asarray(loss).reshape(-1)[0], pick(eqx.filter(model, eqx.is_array)), pick(opt)

    return canonical


def _feed(model_at: int, opt_at: int) -> Callable[[Any, tuple], tuple]:
    """Next args of a donated runner: the step's new (model, opt) in place of the donated ones."""

    def feed(out: Any, args: tuple) -> tuple:
        new = list(args)
        new[model_at], new[opt_at] = out[1], out[2]
        return tuple(new)

    return feed


def on_params(step: Callable, static: Any) -> Callable:
    """The seed's fast form of ``step``: over the model's arrays only (``params``), the static
    half closed over, returning the new params. What ``jax.pmap`` on params (and the jit and
    shard_map methods) compile; ``static`` is ``eqx.partition(model, eqx.is_array)[1]``."""

    def run(p: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
        loss, m, o = step(eqx.combine(p, static), xb, o)
        return loss, eqx.filter(m, eqx.is_array), o

    return run


@dataclass
class _Inputs:
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

    def runner(self, method: str, fn: Callable, args: tuple, canonical: Canonical, at=(0, 2)) -> Runner:
        return Runner(method, self.donate, fn, args, canonical, _feed(*at) if self.donate else None)


# ---------------------------------------------------------------- the builders


def _filter_pmap(inputs: _Inputs, wrap: Callable = eqx.filter_pmap, method: str = SLOW) -> Runner:
    model, x, opt = inputs.mapped()
    fn = wrap(get_step(inputs.step, AXIS), axis_name=AXIS, donate="all" if inputs.donate else "none")
    return inputs.runner(method, fn, (model, x, opt), _canonical(True))


def _cached_filter_pmap(inputs: _Inputs) -> Runner:
    return _filter_pmap(inputs, cached_filter_pmap, FIX)


def _pmap_params(inputs: _Inputs) -> Runner:
    model, x, opt = inputs.mapped()
    params, static = eqx.partition(model, eqx.is_array)
    fn = jax.pmap(
        on_params(get_step(inputs.step, AXIS), static),
        axis_name=AXIS,
        devices=inputs.devices,
        donate_argnums=inputs.donate_argnums(0, 2),
    )
    return inputs.runner(BASELINE, fn, (params, x, opt), _canonical(True, static))


def _pmap_static_argnums(inputs: _Inputs) -> Runner:
    model, x, opt = inputs.mapped()
    params, static = eqx.partition(model, eqx.is_array)
    step = get_step(inputs.step, AXIS)

    def with_static(p: Any, s: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
        return on_params(step, s)(p, xb, o)

    fn = jax.pmap(
        with_static,
        axis_name=AXIS,
        static_broadcasted_argnums=(1,),
        devices=inputs.devices,
        donate_argnums=inputs.donate_argnums(0, 3),
    )
    args = (params, static, x, opt)
    return inputs.runner("pmap_static_argnums", fn, args, _canonical(True, static), at=(0, 3))


def _jit_single_device(inputs: _Inputs) -> Runner:
    params, static = eqx.partition(inputs.model, eqx.is_array)
    args = jax.device_put((params, inputs.x, inputs.opt_state), inputs.devices[0])
    step = on_params(get_step(inputs.step, None), static)
    fn = jax.jit(step, donate_argnums=inputs.donate_argnums(0, 2))
    return inputs.runner("jit_single_device", fn, args, _canonical(False, static))


def _filter_jit_shard(inputs: _Inputs) -> Runner:
    replicated, batch_sharded = inputs.mesh()
    step = get_step(inputs.step, None)

    # The batch first: Equinox donates "all-except-first", and a donated batch can be consumed.
    def sharded(xb: jax.Array, m: Any, o: Any) -> tuple[Any, Any, Any]:
        m, o = eqx.filter_shard((m, o), replicated)
        loss, m, o = step(m, eqx.filter_shard(xb, batch_sharded), o)
        return loss, *eqx.filter_shard((m, o), replicated)

    fn = eqx.filter_jit(sharded, donate="all-except-first" if inputs.donate else "none")
    args = (
        jax.device_put(inputs.x, batch_sharded),
        eqx.filter_shard(inputs.model, replicated),
        jax.device_put(inputs.opt_state, replicated),
    )
    return inputs.runner("filter_jit_shard", fn, args, _canonical(False), at=(1, 2))


def _global_args(inputs: _Inputs) -> tuple[tuple, Any]:
    """(params, batch, opt_state) placed replicated / batch-sharded / replicated, and the static half."""
    replicated, batch_sharded = inputs.mesh()
    params, static = eqx.partition(inputs.model, eqx.is_array)
    args = jax.device_put((params, inputs.x, inputs.opt_state), (replicated, batch_sharded, replicated))
    return args, static


def _jit_named_sharding(inputs: _Inputs) -> Runner:
    replicated, batch_sharded = inputs.mesh()
    args, static = _global_args(inputs)
    fn = jax.jit(
        on_params(get_step(inputs.step, None), static),
        in_shardings=(replicated, batch_sharded, replicated),
        out_shardings=(replicated, replicated, replicated),
        donate_argnums=inputs.donate_argnums(0, 2),
    )
    return inputs.runner("jit_named_sharding", fn, args, _canonical(False, static))


def _jit_shard_map(inputs: _Inputs) -> Runner:
    replicated, _ = inputs.mesh()
    args, static = _global_args(inputs)
    # check_vma=False keeps pmap's semantics: with it on, the gradient of a
    # replicated (P()) parameter is already psum-ed over devices, and the
    # step's pmean would leave an 8x larger gradient than pmap's.
    mapped = jax.shard_map(
        on_params(get_step(inputs.step, AXIS), static),
        mesh=replicated.mesh,
        in_specs=(P(), P(AXIS), P()),
        out_specs=(P(), P(), P()),
        check_vma=False,
    )
    fn = jax.jit(mapped, donate_argnums=inputs.donate_argnums(0, 2))
    return inputs.runner("jit_shard_map", fn, args, _canonical(False, static))


def _packed(inputs: _Inputs, mapped: bool) -> Runner:
    """The packed fast path: (model, opt_state) packed once, carried packed, unpacked on demand."""
    step = packed.state_step(get_step(inputs.step, AXIS if mapped else None))
    if mapped:
        state = packed.PackedState.pack((inputs.model, inputs.opt_state)).replicate(inputs.devices)
        x = inputs.mapped_batch()
        fn = packed.packed_pmap(step, axis_name=AXIS, devices=inputs.devices, donate=inputs.donate)
    else:
        replicated, batch_sharded = inputs.mesh()
        state = packed.PackedState.pack(eqx.filter_shard((inputs.model, inputs.opt_state), replicated))
        x = jax.device_put(inputs.x, batch_sharded)
        fn = packed.packed_jit(step, donate=inputs.donate)
    to_host = _canonical(mapped)

    def canonical(out: Any) -> tuple[Any, Any, Any]:
        loss, new_state = out
        model, opt = new_state.unpack()
        return to_host((loss, model, opt))

    def feed(out: Any, args: tuple) -> tuple:
        return (out[1], *args[1:])

    method = "packed_pmap" if mapped else "packed_jit"
    return Runner(method, inputs.donate, fn, (state, x), canonical, feed if inputs.donate else None)


_BUILDERS: dict[str, Callable[[_Inputs], Runner]] = {
    "filter_pmap": _filter_pmap,
    "pmap_params": _pmap_params,
    "pmap_static_argnums": _pmap_static_argnums,
    "cached_filter_pmap": _cached_filter_pmap,
    "packed_pmap": lambda inputs: _packed(inputs, mapped=True),
    "jit_named_sharding": _jit_named_sharding,
    "filter_jit_shard": _filter_jit_shard,
    "jit_shard_map": _jit_shard_map,
    "packed_jit": lambda inputs: _packed(inputs, mapped=False),
    "jit_single_device": _jit_single_device,
}


def build_runner(
    method: str,
    step: str,
    model: Any,
    opt_state: Any,
    x: jax.Array,
    n_devices: int,
    *,
    donate: bool = False,
) -> Runner:
    """Build ``method`` for ``step`` on (model, opt_state, global batch ``x``) over the
    first ``n_devices`` devices, donating model and optimiser state when ``donate``.
    A donated runner works on its own copy of the inputs, so the caller's stay valid."""
    check_choice("method", method, METHODS)
    check_int("n_devices", n_devices, minimum=1)
    if n_devices > jax.device_count():
        raise bad_value("n_devices", n_devices, f"at most {jax.device_count()} (devices present)")
    if x.shape[0] % n_devices:
        raise bad_value("x.shape[0]", x.shape[0], f"a multiple of n_devices={n_devices}")
    if not isinstance(donate, bool):
        raise bad_value("donate", donate, "True or False")
    if donate:
        copy = lambda a: jnp.array(a, copy=True) if eqx.is_array(a) else a  # noqa: E731
        model, opt_state = jax.tree.map(copy, (model, opt_state))
    inputs = _Inputs(step, model, opt_state, x, jax.devices()[:n_devices], donate)
    return _BUILDERS[method](inputs)
