"""The dispatch methods: eight ways to run one step over ``n`` devices (or on one), each
with and without donated model and optimiser state, built as runners for
``tools/bench_dropins.py``.

Each builder turns a step ``step(model, x, opt_state) -> (loss, model, opt_state)`` into a
:class:`~jaxperf_study.dispatch.runners.Runner`. A donated runner threads its state: each call's
model and optimiser state are the previous call's outputs (the donated inputs no longer
exist), as in a training loop. The batch is never donated on purpose; methods that donate
every array (``eqx.filter_pmap(donate="all")``) offer it too, and XLA leaves it alone because
no output can reuse its buffer. :data:`METHODS` (id -> label) comes from :mod:`.vocab`
(standard library only, for the settings check).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from jaxperf.errors import bad_value, check_choice, check_int
from jaxperf.fixes import _packed as packed
from jaxperf.fixes import cached_filter_jit, cached_filter_pmap

from .runners import Inputs, Runner, on_params, put
from .steps import AXIS, batch_first, get_step
from .vocab import BASELINE, FIX, METHODS, SLOW


def _filter_pmap(inputs: Inputs, wrap: Callable = eqx.filter_pmap, method: str = SLOW) -> Runner:
    model, x, opt = inputs.mapped()
    fn = wrap(get_step(inputs.step, AXIS), axis_name=AXIS, donate="all" if inputs.donate else "none")
    return inputs.runner(method, fn, (model, x, opt))


def _cached_filter_pmap(inputs: Inputs) -> Runner:
    return _filter_pmap(inputs, cached_filter_pmap, FIX)


def _pmap_params(inputs: Inputs) -> Runner:
    model, x, opt = inputs.mapped()
    params, static = eqx.partition(model, eqx.is_array)
    fn = jax.pmap(
        on_params(get_step(inputs.step, AXIS), static),
        axis_name=AXIS,
        devices=inputs.devices,
        donate_argnums=inputs.donate_argnums(0, 2),
    )
    return inputs.runner(BASELINE, fn, (params, x, opt))


def _jit_single_device(inputs: Inputs) -> Runner:
    params, static = eqx.partition(inputs.model, eqx.is_array)
    args = jax.device_put((params, inputs.x, inputs.opt_state), inputs.devices[0])
    step = on_params(get_step(inputs.step, None), static)
    fn = jax.jit(step, donate_argnums=inputs.donate_argnums(0, 2))
    return inputs.runner("jit_single_device", fn, args)


def _filter_jit(inputs: Inputs, wrap: Callable = eqx.filter_jit, method: str = "filter_jit") -> Runner:
    """``wrap`` (``eqx.filter_jit`` or a drop-in for it) on the whole model, on one device:
    Equinox's recommended path without sharding, the ``jax.jit`` floor's counterpart."""
    fn = wrap(
        batch_first(get_step(inputs.step, None)), donate="all-except-first" if inputs.donate else "none"
    )
    args = put((inputs.x, inputs.model, inputs.opt_state), inputs.devices[0])
    return inputs.runner(method, fn, args, at=(1, 2))


def _packed(inputs: Inputs, mapped: bool) -> Runner:
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

    def carry(out: Any, args: tuple) -> tuple:
        return (out[1], *args[1:])

    method = "packed_pmap" if mapped else "packed_jit"
    return Runner(method, inputs.donate, fn, (state, x), carry if inputs.donate else None)


# One builder per method of vocab.METHODS, in its order (tests/test_settings_stdlib.py).
_BUILDERS: dict[str, Callable[[Inputs], Runner]] = {
    "filter_pmap": _filter_pmap,
    "pmap_params": _pmap_params,
    "cached_filter_pmap": _cached_filter_pmap,
    "packed_pmap": lambda inputs: _packed(inputs, mapped=True),
    "packed_jit": lambda inputs: _packed(inputs, mapped=False),
    "jit_single_device": _jit_single_device,
    "filter_jit": _filter_jit,
    "cached_filter_jit": lambda inputs: _filter_jit(inputs, cached_filter_jit, "cached_filter_jit"),
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
    inputs = Inputs(step, model, opt_state, x, jax.devices()[:n_devices], donate)
    return _BUILDERS[method](inputs)
