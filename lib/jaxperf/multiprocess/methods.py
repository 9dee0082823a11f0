"""The dispatch methods, built to run across the processes of one job.

Every process builds the same model, optimiser state and global batch from
the same seeds and keeps its own rows of the batch (process ``p`` of ``N``
holds rows ``p*B/N ... (p+1)*B/N``). Two families:

- *mapped* (``jax.pmap`` underneath): every argument carries a leading axis of
  this process's local device count; the mapped axis spans every device of
  the job. ``pmap_params``, ``filter_pmap`` (as shipped), ``filter_pmap_fixed``
  (the proposed Equinox fix patched in), ``cached_filter_pmap``, ``packed_pmap``;
- *global* (``jax.jit`` over a Mesh of every device in the job, arrays built
  with ``jax.make_array_from_process_local_data``): ``jit_named_sharding``,
  ``packed_jit``, ``jit_shard_map``.

Steps: ``noop`` and ``train`` (with its all-reduce) for every method; to split
collective time from dispatch, ``train_local`` (the same step without the
``pmean``: no collective) and ``allreduce`` (only the ``pmean`` of the
parameters) for ``pmap_params`` and ``jit_shard_map``.

A :class:`Runner`'s ``canonical`` maps one call's output to ``(loss, leaves)``
on the host, comparable with :func:`reference` (the same step on one device
with the whole batch) and across processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ..dispatch.models import ModelSpec
from ..dispatch.steps import AXIS, make_train_step, noop_step
from ..errors import check_choice
from ..fixes import cached_filter_pmap
from . import bug
from .vocab import CHECKED_STEPS as CHECKED_STEPS
from .vocab import MAPPED, METHODS, SPLIT_METHODS, STEPS

Canonical = tuple[float, list[np.ndarray]]


@dataclass
class Runner:
    """``call()`` runs one step; ``canonical(out)`` gives (loss, array leaves of params and optimiser state)."""

    method: str
    step: str
    call: Callable[[], Any]
    canonical: Callable[[Any], Canonical]


def supports(method: str, step: str) -> bool:
    """Whether ``method`` runs ``step`` (the split steps are timed for :data:`SPLIT_METHODS` only)."""
    check_choice("method", method, METHODS)
    check_choice("step", step, STEPS)
    return step in ("noop", "train") or method in SPLIT_METHODS


def _allreduce_step(model: Any, x: jax.Array, opt_state: Any) -> tuple[Any, Any, Any]:
    """Only the collective: the parameters' ``pmean`` (replicated, so the values do not change)."""
    params, static = eqx.partition(model, eqx.is_array)
    return 0.0, eqx.combine(jax.lax.pmean(params, AXIS), static), opt_state


def mapped_step(step: str) -> Callable:
    """The step as a mapped method runs it (its collectives over :data:`AXIS`)."""
    check_choice("step", step, STEPS)
    return {
        "noop": noop_step,
        "train": make_train_step(AXIS),
        "train_local": make_train_step(None),
        "allreduce": _allreduce_step,
    }[step]


def _leaves(loss: Any, model: Any, opt_state: Any, pick: Callable[[Any], np.ndarray]) -> Canonical:
    arrays = jax.tree.leaves(eqx.filter((model, opt_state), eqx.is_array))
    # A Python-float loss (the no-op's 0.0) stays one: filter_pmap returns it unmapped.
    loss = pick(loss) if eqx.is_array(loss) else loss
    return float(np.asarray(loss).reshape(-1)[0]), [pick(a) for a in arrays]


def _first_local(a: Any) -> np.ndarray:
    return np.asarray(a)[0]


def _first_shard(a: Any) -> np.ndarray:
    return np.asarray(a.addressable_data(0)) if isinstance(a, jax.Array) else np.asarray(a)


def local_rows(x: jax.Array) -> jax.Array:
    """This process's rows of the global batch ``x``."""
    per = x.shape[0] // jax.process_count()
    return x[jax.process_index() * per : (jax.process_index() + 1) * per]


def _local_place(tree: Any) -> Any:
    """A replica of ``tree`` per local device, placed where jax.pmap wants it (so no call reshards)."""
    k = jax.local_device_count()
    dynamic, static = eqx.partition(tree, eqx.is_array)
    stacked = jax.tree.map(lambda a: np.broadcast_to(np.asarray(a), (k, *a.shape)), dynamic)
    return eqx.combine(jax.pmap(lambda t: t)(stacked), static)


def _local_batch(x: jax.Array) -> jax.Array:
    rows = np.asarray(local_rows(x))
    k = jax.local_device_count()
    return jax.pmap(lambda t: t)(rows.reshape(k, rows.shape[0] // k, *rows.shape[1:]))


def build(method: str, step: str, model: Any, opt_state: Any, x: jax.Array) -> Runner:
    """Build ``method`` for ``step`` on (model, opt_state, global batch ``x``) over every device of the job."""
    if not supports(method, step):
        raise ValueError(
            f"method={method!r} does not time step={step!r}: split steps run for {SPLIT_METHODS}"
        )
    if x.shape[0] % jax.device_count():
        raise ValueError(
            f"x.shape[0]={x.shape[0]} is not allowed: expected a multiple of {jax.device_count()}"
        )
    fn_step = mapped_step(step)
    if method in MAPPED:
        return _build_mapped(method, step, fn_step, model, opt_state, x)
    return _build_global(method, step, fn_step, model, opt_state, x)


def _build_mapped(
    method: str, step: str, fn_step: Callable, model: Any, opt_state: Any, x: jax.Array
) -> Runner:
    x_r = _local_batch(x)
    if method == "packed_pmap":
        from ..fixes import _packed as packed

        state = _local_place(packed.PackedState.pack((model, opt_state)))
        fn = packed.packed_pmap(packed.state_step(fn_step), axis_name=AXIS)
        return _packed_runner(method, step, fn, state, x_r, _first_local)
    model_r, opt_r = _local_place(model), _local_place(opt_state)
    if method in ("filter_pmap", "filter_pmap_fixed", "cached_filter_pmap"):
        wrap = cached_filter_pmap if method == "cached_filter_pmap" else eqx.filter_pmap
        fn = wrap(fn_step, axis_name=AXIS)
        fn = bug.fixed(fn) if method == "filter_pmap_fixed" else fn
        return Runner(method, step, lambda: fn(model_r, x_r, opt_r), lambda out: _leaves(*out, _first_local))
    params, static = eqx.partition(model_r, eqx.is_array)

    def on_params(p: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
        loss, m, o = fn_step(eqx.combine(p, static), xb, o)
        return loss, eqx.filter(m, eqx.is_array), o

    fn = jax.pmap(on_params, axis_name=AXIS)
    return Runner(method, step, lambda: fn(params, x_r, opt_r), lambda out: _leaves(*out, _first_local))


def _packed_runner(method: str, step: str, fn: Callable, state: Any, x: Any, pick: Callable) -> Runner:
    """A packed step carries its state: the buffers are donated, so each call feeds the new
    state to the next and returns only the loss (states a timing loop kept would be gone;
    one program computes both)."""
    carry = {"state": state}

    def call() -> Any:
        loss, carry["state"] = fn(carry["state"], x)
        return loss

    def canonical(loss: Any) -> Canonical:
        m, o = carry["state"].unpack()
        return _leaves(loss, m, o, pick)

    return Runner(method, step, call, canonical)


def _global(sharding: NamedSharding, tree: Any, local: Callable[[Any], Any] = lambda a: a) -> Any:
    return jax.tree.map(
        lambda a: jax.make_array_from_process_local_data(sharding, np.asarray(local(a))),
        tree,
    )


def _build_global(
    method: str, step: str, fn_step: Callable, model: Any, opt_state: Any, x: jax.Array
) -> Runner:
    mesh = Mesh(np.array(jax.devices()), (AXIS,))
    replicated, batch_sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P(AXIS))
    params, static = eqx.partition(model, eqx.is_array)
    params_g, opt_g = _global(replicated, params), _global(replicated, opt_state)
    x_g = _global(batch_sharded, x, local_rows)

    def on_params(step_fn: Callable) -> Callable:
        def run(p: Any, xb: jax.Array, o: Any) -> tuple[Any, Any, Any]:
            loss, m, o = step_fn(eqx.combine(p, static), xb, o)
            return loss, eqx.filter(m, eqx.is_array), o

        return run

    global_step = noop_step if step == "noop" else make_train_step(None)
    if method == "packed_jit":
        from ..fixes import _packed as packed

        state = packed.PackedState.pack((eqx.combine(params_g, static), opt_g))
        fn = packed.packed_jit(packed.state_step(global_step))
        return _packed_runner(method, step, fn, state, x_g, _first_shard)
    if method == "jit_named_sharding":
        fn = jax.jit(
            on_params(global_step),
            in_shardings=(replicated, batch_sharded, replicated),
            out_shardings=(replicated, replicated, replicated),
        )
    else:
        # check_vma=False keeps pmap's semantics for the replicated parameters' gradient (see dispatch.methods).
        fn = jax.jit(
            jax.shard_map(
                on_params(fn_step),
                mesh=mesh,
                in_specs=(P(), P(AXIS), P()),
                out_specs=(P(), P(), P()),
                check_vma=False,
            )
        )
    return Runner(method, step, lambda: fn(params_g, x_g, opt_g), lambda out: _leaves(*out, _first_shard))


def reference(step: str, spec: ModelSpec) -> Canonical:
    """``step`` on one local device with the whole global batch, no collective: what every
    method must match (a mean of equal shards' means is the mean over the batch)."""
    model, opt_state = spec.build()
    x = spec.batch(jax.device_count())
    device = jax.local_devices()[0]
    params, static = eqx.partition(model, eqx.is_array)
    params, opt_state, x = jax.device_put((params, opt_state, x), device)
    model = eqx.combine(params, static)
    global_step = {"noop": noop_step, "allreduce": noop_step}.get(step) or make_train_step(None)
    loss, m, o = eqx.filter_jit(global_step)(model, x, opt_state)
    return _leaves(loss, m, o, np.asarray)
