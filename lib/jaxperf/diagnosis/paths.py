"""The ways one step can be dispatched, each a :class:`Path` that runs the reader's loop in
its own form of the arguments and can show what the reader's step would have returned
(``view``), so that it is proved to compute the same before it is timed. Equinox and JAX
kinds here, Flax NNX's in :mod:`.nnx_paths`; a builder raises :class:`NotApplicable` with why.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import carry as carry_mod
from .kinds import Step

NO_BATCH = object()


class Spread(tuple):
    """A loader's batch that fills consecutive arguments (``(x, y)`` for ``step(model, x, y)``)."""


def put_batch(args: tuple, at: int, batch: Any) -> tuple:
    """``args`` with the loader's ``batch`` at argument ``at`` (a :class:`Spread` from ``at`` on)."""
    items = tuple(batch) if isinstance(batch, Spread) else (batch,)
    return (*args[:at], *items, *args[at + len(items) :])


class NotApplicable(Exception):
    """A cheaper path that does not apply to this step; the message says why."""


@dataclasses.dataclass
class Path:
    """One way to dispatch the step, ready to run the reader's loop.

    ``fn(*args)`` is one call; ``carry`` maps the path's argument positions to the output
    positions that replace them; ``view(out, args)`` is ``(outputs, next arguments)`` in the
    reader's form; ``batch_at`` is where a loader's batch goes in ``args`` (None: nowhere).
    """

    name: str
    what: str
    fn: Callable[..., Any]
    args: tuple
    carry: carry_mod.Carry
    view: Callable[[Any, tuple], Any]
    batch_at: int | None = None
    method: str = ""  # the study's name for this way of dispatching (its colour in figures)
    last: Any = dataclasses.field(default=None, repr=False)

    def call(self, batch: Any = NO_BATCH) -> Any:
        args = self.args
        if batch is not NO_BATCH and self.batch_at is not None:
            args = put_batch(args, self.batch_at, batch)
        out = self.fn(*args)
        self.args = carry_mod.apply(self.carry, out, args)
        self.last = out
        return out

    def reader_view(self) -> Any:
        """(the last outputs, the arguments of the next call) as the reader's step has them."""
        return self.view(self.last, self.args)


#: the study's name (palette id) of each kind of reader's step
READER_METHODS = {
    "eqx.filter_jit": "filter_jit",
    "eqx.filter_pmap": "filter_pmap",
    "jax.jit": "jit_params",
    "jax.pmap": "pmap_params",
    "nnx.jit": "nnx_jit",
    "nnx.jit tree mode": "nnx_tree",
}


def reader(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """The reader's own step, as they call it."""
    method = READER_METHODS.get(step.kind, step.kind.replace("jaxperf.", ""))
    mine = f"{step.kind} (yours)"
    return Path(
        mine, "your step as you call it", step.call, carry_mod.fresh(args), carry, _same, batch_at, method
    )


def _same(out: Any, args: tuple) -> Any:
    return out, args


def _quiet_donation(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` without JAX's unusable-donation warning, as Equinox filters it."""

    def call(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
            return fn(*args)

    return call


def partitioned(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """``jax.jit`` (or ``jax.pmap``) on the arrays of the arguments, partitioned once outside
    the loop: the seed's manual ``eqx.partition``, and Equinox's "low-overhead training
    loops" advice."""
    if step.kind in ("jax.jit", "jax.pmap"):
        raise NotApplicable("your step already takes arrays only")
    if step.family == "pmap" and not step.default_axes:
        raise NotApplicable("in_axes/out_axes other than the default (every array over axis 0)")
    dynamic, static = eqx.partition(carry_mod.fresh(args), eqx.is_array)
    out_static = SimpleNamespace(value=None)  # the outputs' non-array part, recorded while JAX traces

    def on_arrays(*arrays: Any) -> Any:
        out = step.raw(*eqx.combine(arrays, static))
        out_dynamic, out_static.value = eqx.partition(out, eqx.is_array)
        return out_dynamic

    donate = step.donated(len(args))
    if step.family == "pmap":
        fn, kind = jax.pmap(on_arrays, axis_name=step.axis_name, donate_argnums=donate), "jax.pmap"
    else:
        fn, kind = jax.jit(on_arrays, donate_argnums=donate), "jax.jit"
    what = f"{kind} over the arrays only, partitioned once outside the loop"
    fn = _quiet_donation(fn) if donate else fn

    def view(out: Any, arrays: tuple) -> Any:
        for i, j in carry.items():
            if carry_mod.first_difference(static[i], carry_mod.output(out_static.value, j)) is not None:
                raise NotApplicable(
                    f"the step changes the non-array part of argument {i} (a partitioned path keeps it fixed)"
                )
        return eqx.combine(out, out_static.value), eqx.combine(arrays, static)

    name = f"{kind} on the partitioned state"
    return Path(name, what, fn, tuple(dynamic), dict(carry), view, batch_at, READER_METHODS[kind])


def cached(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """jaxperf's drop-in for the Equinox wrapper the reader uses."""
    from .. import fixes

    if step.kind.startswith("jaxperf."):
        raise NotApplicable("your step already is jaxperf's drop-in")
    if step.kind not in ("eqx.filter_jit", "eqx.filter_pmap"):
        raise NotApplicable(f"no drop-in replaces {step.kind}")
    if not step.default_axes:
        raise NotApplicable("in_axes/out_axes other than the default: wrap it yourself with the same axes")
    method = f"cached_{step.kind[4:]}"
    options = {"axis_name": step.axis_name} if step.family == "pmap" else {}
    fn = getattr(fixes, method)(step.raw, donate=step.donate, **options)
    what = "the same call, its partition cached per input structure" + (
        ", never waiting for the result" if step.family == "jit" else ""
    )
    return Path(f"jaxperf.{method}", what, fn, carry_mod.fresh(args), dict(carry), _same, batch_at, method)


def _devices_of(tree: Any) -> list[Any]:
    leaf = next((x for x in jax.tree.leaves(tree) if isinstance(x, jax.Array)), None)
    if leaf is None:
        raise NotApplicable("no array argument to find the devices from")
    return [shard.device for shard in sorted(leaf.addressable_shards, key=lambda s: s.index[0].start or 0)]


def _as_pmap_outputs(tree: Any, devices: list[Any], axis_name: Any) -> Any:
    """``tree`` placed as ``jax.pmap(..., axis_name=axis_name)`` places its outputs (a mesh axis
    named after the pmap's): the first call then compiles the program the loop's later calls
    reuse, instead of a second one for the carried state's placement."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    sharding = NamedSharding(Mesh(np.array(devices), (axis_name,)), PartitionSpec(axis_name))
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(arrays, sharding), static)


def _carried_state(step: Step, carry: carry_mod.Carry, batch_at: int | None, what: str) -> None:
    """NotApplicable unless the step returns its carried state in a tuple, mapped as pmap's default."""
    if not carry:
        raise NotApplicable(f"nothing is carried from one call to the next (no state to {what})")
    if carry_mod.WHOLE in carry.values():
        raise NotApplicable("the step returns its new state alone, not in a tuple")
    if step.family == "pmap" and not step.default_axes:
        raise NotApplicable("in_axes/out_axes other than the default (every array over axis 0)")
    if batch_at is not None and batch_at in carry:
        raise NotApplicable("the loader's batch is carried")


def packed(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """The carried state packed once (``PackedState``), through ``packed_jit`` / ``packed_pmap``."""
    from ..fixes import PackedState, packed_jit, packed_pmap

    _carried_state(step, carry, batch_at, "pack")
    order = sorted(carry)
    rest_at = [i for i in range(len(args)) if i not in carry]
    args = carry_mod.fresh(args)
    rest_dynamic, rest_static = eqx.partition(tuple(args[i] for i in rest_at), eqx.is_array)
    aux_static = SimpleNamespace(value=None)
    out_at = [carry[i] for i in order]

    def full_args(tree: tuple, rest: tuple) -> list[Any]:
        at = {**dict(zip(order, tree)), **dict(zip(rest_at, rest))}
        return [at[i] for i in range(len(args))]

    def fun(tree: tuple, *rest: Any) -> tuple[Any, tuple]:
        out = step.raw(*full_args(tree, eqx.combine(rest, rest_static)))
        outs = tuple(out)
        aux = tuple(o for j, o in enumerate(outs) if j not in out_at)
        aux_dynamic, aux_static.value = eqx.partition(aux, eqx.is_array)
        return aux_dynamic, tuple(outs[j] for j in out_at)

    donated = set(step.donated(len(args)))
    donate = bool(donated & set(carry))
    not_donated = sorted(donated - set(carry))
    tree = tuple(args[i] for i in order)
    if step.kind in ("jax.jit", "jax.pmap"):  # jax traces a Python scalar leaf: pack the array it becomes
        tree = jax.tree.map(
            lambda x: jnp.asarray(x) if isinstance(x, (bool, int, float, complex)) else x, tree
        )
    try:
        if step.family == "pmap":
            devices = _devices_of(tree)
            # one replica, on the host: packing places it again, replicated over the devices
            first = jax.tree.map(lambda x: np.asarray(x)[0] if eqx.is_array(x) else x, tree)
            axis = "_internal_pmap_axis_name" if step.axis_name is None else step.axis_name  # jax.pmap's own
            state = _as_pmap_outputs(PackedState.pack(first).replicate(devices), devices, axis)
            fn = packed_pmap(fun, axis_name=step.axis_name, devices=devices, donate=donate)
        else:
            state = PackedState.pack(tree)
            fn = packed_jit(fun, donate=donate)
    except ValueError as err:
        raise NotApplicable(f"the state cannot be packed: {err}") from err

    def view(out: Any, path_args: tuple) -> Any:
        aux = iter(eqx.combine(out[0], aux_static.value))
        new_tree = out[1].unpack()
        total = len(out_at) + len(aux_static.value)
        outs = tuple(new_tree[out_at.index(j)] if j in out_at else next(aux) for j in range(total))
        rest = eqx.combine(tuple(path_args[1:]), rest_static)
        return outs, tuple(full_args(path_args[0].unpack(), rest))

    batch = None if batch_at is None else 1 + rest_at.index(batch_at)
    what = f"the carried state packed once into one buffer per dtype, carried packed{', donated' * donate}"
    if not_donated:  # packed_jit / packed_pmap donate the packed state only
        what += f" (argument {', '.join(map(str, not_donated))}, which you donate, is not donated here)"
    name = "jaxperf.packed_pmap" if step.family == "pmap" else "jaxperf.packed_jit"
    return Path(name, what, fn, (state, *rest_dynamic), {0: 1}, view, batch, name.split(".")[1])


def recipe(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    """Equinox's "low-overhead training loops" recipe (docs/tricks.md) with the reader's own
    wrapper: each carried argument flattened once outside the loop, the step wrapped over the
    flat leaves (unflattened inside, ``tree_leaves`` of the new state returned); donation kept."""
    if not step.kind.startswith(("eqx.", "jaxperf.cached_filter")):
        raise NotApplicable(f"Equinox's recipe is for Equinox's filter_jit and filter_pmap, not {step.kind}")
    _carried_state(step, carry, batch_at, "flatten")
    args, back, tu = carry_mod.fresh(args), {j: i for i, j in carry.items()}, jax.tree_util
    treedefs = {i: tu.tree_structure(args[i]) for i in carry}
    unflat = lambda i, a: tu.tree_unflatten(treedefs[i], a) if i in carry else a  # noqa: E731

    def on_leaves(*leaves_or_args: Any) -> Any:
        outs = list(step.raw(*(unflat(i, a) for i, a in enumerate(leaves_or_args))))
        for i, j in carry.items():
            if str(tu.tree_structure(outs[j])) != str(treedefs[i]):
                raise NotApplicable(f"output {j} does not have the structure of argument {i}")
            outs[j] = tu.tree_leaves(outs[j])
        return tuple(outs)

    def view(out: Any, path_args: tuple) -> Any:
        outs = tuple(unflat(back[j], o) if j in back else o for j, o in enumerate(out))
        return outs, tuple(unflat(i, a) for i, a in enumerate(path_args))

    wrapper = "filter_pmap" if step.family == "pmap" else "filter_jit"
    options = {"axis_name": step.axis_name} if step.family == "pmap" else {}
    fn = getattr(eqx, wrapper)(on_leaves, donate=step.donate, **options)
    flat = tuple(tu.tree_leaves(a) if i in carry else a for i, a in enumerate(args))
    what = f"Equinox's low-overhead loop (docs/tricks.md): state flattened once, eqx.{wrapper} on its leaves"
    return Path(
        f"eqx.{wrapper} on flat leaves", what, fn, flat, dict(carry), view, batch_at, f"{wrapper}_recipe"
    )


#: the cheaper paths of the Equinox and JAX kinds, the likely fix first (checked in this order
#: within a time cap): the drop-in (no other change), the packed state, the partition by hand
BUILDERS: dict[str, Callable[[Step, tuple, carry_mod.Carry, int | None], Path]] = {
    "cached": cached,
    "packed": packed,
    "partitioned": partitioned,
    "Equinox's recipe": recipe,
}


def _recipe_snippet(step: Step, fn: str, names: list[str], carry: carry_mod.Carry, donate: str) -> str:
    """Equinox's recipe as docs/tricks.md writes it, for the reader's step and names."""
    t, held, back = "jax.tree_util.tree_", sorted(carry), {j: names[i] for i, j in carry.items()}
    flat_args = ", ".join(f"flat_{n}" if i in carry else n for i, n in enumerate(names))
    outs = [back.get(j, f"out{j}") for j in range(max(carry.values()) + 1)]
    new = ", ".join(f"flat_{o}" if j in back else o for j, o in enumerate(outs))
    options = ", ".join(["axis_name=..."] * (step.family == "pmap") + [f"donate={donate}"] * bool(donate))
    wrapper = f"@eqx.{'filter_pmap' if step.family == 'pmap' else 'filter_jit'}" + (
        f"({options})" * bool(options)
    )
    unflatten = [f"{names[i]} = {t}unflatten(treedef_{names[i]}, flat_{names[i]})" for i in held]
    return "\n".join(
        [f"flat_{names[i]}, treedef_{names[i]} = {t}flatten({names[i]})  # before the loop" for i in held]
        + [wrapper, f"def {fn}_flat({flat_args}):", *(f"    {u}" for u in unflatten)]
        + [f"    {', '.join(outs)} = {fn}({', '.join(names)})  # {fn} undecorated"]
        + [f"    return {', '.join(f'{t}leaves({o})' if j in back else o for j, o in enumerate(outs))}"]
        + [f"# loop: {new} = {fn}_flat({flat_args})", *(f"{u}  # after the loop" for u in unflatten)]
    )


#: how to write each path for the reader's step: {fn} the step's function, {args} its
#: arguments, {state} the carried ones (NNX: the leading modules), {rest} the others,
#: {donate...} the donation as the path's own argument, {static} jax.jit's static_argnums
SNIPPETS = {
    **{
        f"{kind} on the partitioned state": f"""\
arrays, static = eqx.partition(({{args}},), eqx.is_array)  # once, outside the loop
@functools.partial({wrap}{{donate_argnums}})
def {{fn}}_arrays(*arrays):
    return eqx.filter({{fn}}(*eqx.combine(arrays, static)), eqx.is_array)  # {{fn}} undecorated
# loop: out = {{fn}}_arrays(*arrays); put the carried outputs back into arrays"""
        for kind, wrap in (("jax.jit", "jax.jit"), ("jax.pmap", "jax.pmap, axis_name=..."))
    },
    "jaxperf.cached_filter_jit": """\
{fn} = jaxperf.cached_filter_jit({fn}{donate_eqx_arg})  # instead of eqx.filter_jit; the loop unchanged""",
    "jaxperf.cached_filter_pmap": """\
{fn} = jaxperf.cached_filter_pmap({fn}, axis_name=...{donate_eqx_arg})  # instead of eqx.filter_pmap""",
    "jaxperf.packed_jit": """\
state = jaxperf.PackedState.pack(({state},))  # once: one buffer per dtype
def {fn}_packed(tree, {rest}):  # -> (the other outputs, the new state)
    {state}, = tree
    out = {fn}({args})  # {fn} undecorated
    return (...), ({state},)
{fn}_packed = jaxperf.packed_jit({fn}_packed, donate={donate_bool}{static})
# loop: aux, state = {fn}_packed(state, {rest}); state.unpack() at the end""",
    "jaxperf.packed_pmap": """\
state = jaxperf.PackedState.pack(({state},)).replicate(jax.devices())  # once
{fn}_packed = jaxperf.packed_pmap({fn}_packed, axis_name=..., donate={donate_bool})  # as packed_jit
# loop: aux, state = {fn}_packed(state, {rest}); state.unpack() at the end""",
    "nnx.jit tree mode": """\
@nnx.jit(graph=False{donate_argnums})  # instead of @nnx.jit
def {fn}({args}): ...""",
    "nnx.cached_partial": """\
{fn}_bound = nnx.cached_partial({fn}, {state})  # once, outside the loop
# loop: out = {fn}_bound({rest})""",
    "nnx.jit_partial": """\
{fn}_bound = nnx.jit_partial({fn}, {state}, graph=False{donate_argnums})  # {fn} undecorated
# loop: out = {fn}_bound({rest})""",
    "jax.jit on nnx.split state": """\
graphdef, state = nnx.split(({state},))  # once, outside the loop
@functools.partial(jax.jit{donate_split})
def {fn}_pure(state, {rest}):
    {state}, = nnx.merge(graphdef, state)
    out = {fn}({args})  # {fn} undecorated
    return out, nnx.split(({state},))[1]
# loop: out, state = {fn}_pure(state, {rest}); nnx.update(({state},), state) at the end""",
    "jax.jit on nnx.split leaves": """\
graphdef, state = nnx.split(({state},)); leaves, treedef = jax.tree.flatten(state)  # once
@functools.partial(jax.jit{donate_split})
def {fn}_pure(leaves, {rest}):
    {state}, = nnx.merge(graphdef, jax.tree.unflatten(treedef, leaves))
    out = {fn}({args})  # {fn} undecorated
    return out, jax.tree.leaves(nnx.split(({state},))[1])
# loop: out, leaves = {fn}_pure(leaves, {rest}); nnx.update(({state},), jax.tree.unflatten(treedef, leaves)) at the end""",
    "jaxperf.cached_nnx_jit": """\
@jaxperf.cached_nnx_jit{donate_nnx}  # instead of @nnx.jit, the same arguments
def {fn}({args}): ...""",
}


def snippet(
    name: str, step: Step, names: list[str], args: tuple, carry: carry_mod.Carry, nodes: int = 0
) -> str:
    """How to write path ``name`` for the reader's step ("" for a path without one)."""
    names = [names[i] if i < len(names) else f"arg{i}" for i in range(len(args))]
    held = sorted(carry) if carry else list(range(nodes))
    donated, rest_at = step.donated(len(args)), [i for i in range(len(args)) if i not in held]
    leaves = [jax.tree.leaves(args[i]) for i in rest_at]  # a Python flag is static, as on the path
    static = tuple(1 + k for k, x in enumerate(leaves) if x and not any(map(eqx.is_array, x)))
    state = ", ".join(names[i] for i in held) or names[0]
    rest = ", ".join(names[i] for i in rest_at) or "batch"
    eqx_donate = (
        "" if step.donate in ("none", ()) else repr(step.donate if isinstance(step.donate, str) else "all")
    )
    fn = getattr(step.raw, "__name__", "step")
    if name.endswith(" on flat leaves"):
        return _recipe_snippet(step, fn, names, carry, eqx_donate)
    if name not in SNIPPETS:
        return ""
    split = sorted({0 if i in held else 1 + rest_at.index(i) for i in donated})
    text = SNIPPETS[name].format(
        fn=fn,
        args=", ".join(names),
        state=state,
        rest=rest,
        donate_argnums=f", donate_argnums={tuple(donated)}" if donated else "",
        donate_eqx_arg=f", donate={eqx_donate}" if eqx_donate else "",
        donate_bool=bool(set(donated) & set(carry)),
        static=f", static_argnums={static}" if static else "",
        donate_split=f", donate_argnums={tuple(split)}" if split else "",
        donate_nnx=f"(donate_argnums={tuple(donated)})" if donated else "",
    )
    if len(held) > 1:  # (model, opt_state) rather than (model, opt_state,)
        text = text.replace(f"{state},)", f"{state})").replace(f"{state}, =", f"{state} =")
    return text
