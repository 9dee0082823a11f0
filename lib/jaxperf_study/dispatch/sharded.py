"""What Equinox advises instead of ``eqx.filter_pmap`` (its 0.13.8 docstring), as paths of the
study's pmap cells (``extra_paths=PATHS``): the state replicated over a Mesh of the pmap's devices
and axis, the batch split over it. Under jit the step has no pmean (the global batch's mean is the
devices' mean: equal shards, a mean loss); under shard_map it keeps it, as pmap (now built on it)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxperf.diagnosis import carry as carry_mod
from jaxperf.diagnosis.kinds import Step
from jaxperf.diagnosis.paths import NotApplicable, Path, _devices_of, _quiet_donation

from .steps import AXIS, make_train_step, noop_step
from .vocab import SHARDED

_TRAIN = make_train_step(None).__code__


def global_step(raw: Callable[..., Any]) -> Callable[..., Any]:
    """The study's step ``raw`` as a user migrating from pmap writes it for jit: without its pmean."""
    if raw is noop_step:
        return raw
    if getattr(raw, "__code__", None) is _TRAIN:
        return make_train_step(None, inspect.getclosurevars(raw).nonlocals["microbatches"])
    raise NotApplicable("only the study's own steps are written here without their collective")


def _place(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> tuple:
    """(a NamedSharding per argument, the arguments so placed, a view in pmap's layout)."""
    mapped_by_pmap = step.family == "pmap" and step.default_axes and carry_mod.WHOLE not in carry.values()
    if not mapped_by_pmap or batch_at is not None:
        raise NotApplicable("a pmap step over every array's axis 0, without a loader, its state in a tuple")
    devices = _devices_of(args)
    mesh, n = Mesh(np.array(devices), (AXIS if step.axis_name is None else step.axis_name,)), len(devices)
    shardings = [NamedSharding(mesh, P() if i in carry else P(*mesh.axis_names)) for i in range(len(args))]

    def to_global(i: int, x: Any) -> Any:
        if not eqx.is_array(x):
            return x
        if i in carry and not (x == x[:1]).all():
            raise NotApplicable(f"argument {i} differs between devices: it is not replicated state")
        return jax.device_put(x[0] if i in carry else x.reshape(-1, *x.shape[2:]), shardings[i])

    host = jax.device_get(args)
    placed = tuple(jax.tree.map(functools.partial(to_global, i), a) for i, a in enumerate(host))

    def back(replicated: bool, x: Any) -> Any:
        if not eqx.is_array(x) or isinstance(x, jax.Array) and x.is_deleted():
            return x
        x = np.asarray(x)
        return np.broadcast_to(x, (n, *x.shape)) if replicated else x.reshape(n, -1, *x.shape[1:])

    def view(out: Any, path_args: tuple) -> Any:  # every output replicated: a sharded one then differs
        next_args = tuple(
            jax.tree.map(functools.partial(back, i in carry), a) for i, a in enumerate(path_args)
        )
        return jax.tree.map(functools.partial(back, True), out), next_args

    return shardings, placed, view


#: (name, what) of each path, by palette id; each: state replicated over a Mesh, batch split over it
FORMS = {
    SHARDED[0]: ("eqx.filter_jit, sharded", "eqx.filter_jit on the whole model, no pmean"),
    SHARDED[1]: ("jax.jit, sharded", "jax.jit on the arrays, partitioned once, no pmean"),
    SHARDED[2]: ("jax.jit of jax.shard_map", "jax.jit of jax.shard_map on the arrays, with the pmean"),
}


def _build(method: str, step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    mapped, (name, what) = method == SHARDED[2], FORMS[method]
    fun = step.raw if mapped else global_step(step.raw)
    shardings, placed, view = _place(step, args, carry, batch_at)

    def sharded(*a: Any) -> Any:  # eqx.filter_shard in and out, as Equinox's parallelism example
        out = list(fun(*(eqx.filter_shard(x, s) for x, s in zip(a, shardings))))
        for i, j in carry.items():  # the state stays replicated: the next call reuses the program
            out[j] = eqx.filter_shard(out[j], shardings[i])
        return tuple(out)

    donate = step.donated(len(args))
    if method == SHARDED[0]:
        fn = eqx.filter_jit(sharded, donate="all" if donate else "none")
        return Path(name, what, fn, placed, dict(carry), view, None, method)
    dynamic, static = eqx.partition(placed, eqx.is_array)
    body = fun if mapped else sharded  # jax.jit: the arguments' shardings, the state's kept
    out_static = SimpleNamespace(value=None)  # the outputs' non-array part, recorded while JAX traces

    def on_arrays(*arrays: Any) -> Any:
        out_dynamic, out_static.value = eqx.partition(body(*eqx.combine(arrays, static)), eqx.is_array)
        return out_dynamic

    if mapped:  # check_vma off, as in pmap: on, grad psums over devices what comes in replicated
        specs, mesh = tuple(s.spec for s in shardings), shardings[0].mesh
        on_arrays = jax.shard_map(on_arrays, mesh=mesh, in_specs=specs, out_specs=P(), check_vma=False)
    fn = jax.jit(on_arrays, donate_argnums=donate)
    fn = _quiet_donation(fn) if donate else fn

    combined = lambda out, a: view(eqx.combine(out, out_static.value), eqx.combine(a, static))  # noqa: E731
    return Path(name, what, fn, tuple(dynamic), dict(carry), combined, None, method)


PATHS = {name: functools.partial(_build, method) for method, (name, _) in FORMS.items()}
