"""The packed fast path: a training state carried as one buffer per (dtype, sharding).

``eqx.filter_pmap``, ``jax.pmap`` and ``jax.jit`` pay per array leaf on every call; this path pays
once: :meth:`PackedState.pack` flattens a pytree (``(model, opt_state)``) outside the loop into one
1-D buffer per (dtype, sharding) and a static :class:`Layout`; :func:`packed_pmap` and
:func:`packed_jit` compile a step ``fun(tree, *args) -> (aux, new_tree)`` that unpacks with static
slices in the program and donates the buffers by default. The pmap form carries a leading device
axis (:meth:`PackedState.replicate`) and a plain ``0`` ``out_axes``, so it runs across processes.

What a step may return for each leaf: an array leaf comes back as an array of its shape and
dtype (a Python scalar as ``jax.jit`` returns it); a weakly typed leaf has a buffer of its
own and may come back either way, a strongly typed one must stay strong; a non-array leaf
is static and must come back as the same value of the same type. Packing a structure packed
before reuses its layout, so nothing compiles again.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np

from ..errors import bad_value

_SCALARS = (bool, int, float, complex)


@dataclass(frozen=True)
class Group:
    """One buffer: dtype, length, shared sharding (None: uncommitted), whether one weak leaf."""

    dtype: np.dtype
    size: int
    sharding: jax.sharding.Sharding | None
    weak_type: bool = False


@dataclass(frozen=True)
class Slot:
    """Where one array leaf lives: leaf index in the flattened tree, group, offset, shape."""

    leaf: int
    group: int
    offset: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def is_array(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _leaf_error(tree: Any, index: int, leaf: Any, expected: str) -> ValueError:
    path = jtu.keystr(jtu.tree_flatten_with_path(tree)[0][index][0])
    return bad_value(f"new state leaf {path}", getattr(leaf, "aval", leaf), expected)


def _same_static(leaf: Any, static: Any) -> bool:
    if leaf is static:
        return True
    try:
        return type(leaf) is type(static) and bool(leaf == static)
    except Exception:  # noqa: BLE001 -- an == that does not answer a bool is not the same value
        return False


@dataclass(frozen=True, eq=False)  # compared by identity: JAX's caches then hit in one pointer compare
class Layout:
    """The static half of a packed state: rebuilds the pytree from the buffers."""

    treedef: jtu.PyTreeDef
    statics: tuple[Any, ...]  # the non-array leaves, None where an array goes
    slots: tuple[Slot, ...]
    groups: tuple[Group, ...]

    def unpack(self, buffers: Sequence[jax.Array]) -> Any:
        """The pytree, from buffers of this layout; any leading axes (a device axis) are kept."""
        leaves = list(self.statics)
        for slot in self.slots:
            buf = buffers[slot.group]
            piece = buf[..., slot.offset : slot.offset + slot.size]
            leaves[slot.leaf] = piece.reshape(*buf.shape[:-1], *slot.shape)
        return self.treedef.unflatten(leaves)

    def repack(
        self, tree: Any, *, constrain: bool = False, unpacked: tuple[Sequence[jax.Array], Any] | None = None
    ) -> tuple[jax.Array, ...]:
        """Buffers of this layout from ``tree`` inside a step; ValueError naming the leaf that does
        not fit (see the module docstring). ``unpacked``: ``(buffers, leaves)`` :meth:`unpack` gave
        in this trace: a buffer whose leaves all come back unchanged is returned as it is."""
        leaves, treedef = jtu.tree_flatten(tree)
        same = [unpacked is not None] * len(self.groups)
        if treedef != self.treedef:
            raise bad_value("new state", treedef, f"the packed structure {self.treedef}")
        parts: list[list[jax.Array]] = [[] for _ in self.groups]
        for slot in self.slots:
            leaf, group = leaves[slot.leaf], self.groups[slot.group]
            if isinstance(leaf, _SCALARS):
                leaf = jnp.asarray(leaf)  # as jax.jit returns a Python scalar
            if not is_array(leaf) or tuple(leaf.shape) != slot.shape or leaf.dtype != group.dtype:
                expected = f"an array of shape {slot.shape} and dtype {group.dtype}, as packed"
                raise _leaf_error(tree, slot.leaf, leaf, expected)
            if getattr(leaf, "weak_type", False) and not group.weak_type:
                expected = f"a strongly typed {group.dtype} array, as packed (its buffer is shared, so "
                expected += f"it cannot turn weakly typed): return x.astype(jnp.{group.dtype})"
                raise _leaf_error(tree, slot.leaf, leaf, expected)
            parts[slot.group].append(jnp.ravel(leaf))
            if unpacked is not None and leaf is not unpacked[1][slot.leaf]:
                same[slot.group] = False
        for i, (leaf, static) in enumerate(zip(leaves, self.statics)):
            if static is None:
                continue
            if is_array(leaf) or not _same_static(leaf, static):
                expected = f"the packed non-array leaf {static!r} of type {type(static).__name__} unchanged "
                expected += (
                    "(it is static; to update it in the step, pack it as an array, e.g. jnp.asarray(...))"
                )
                raise _leaf_error(tree, i, leaf, expected)
        buffers = tuple(jnp.concatenate(p) if len(p) > 1 else p[0] for p in parts)
        if unpacked is not None:
            buffers = tuple(old if keep else new for old, new, keep in zip(unpacked[0], buffers, same))
        if constrain:
            buffers = tuple(
                b if g.sharding is None else jax.lax.with_sharding_constraint(b, g.sharding)
                for b, g in zip(buffers, self.groups)
            )
        return buffers


# Weakly: a layout lives as long as a state, a compiled step or a cache of JAX holds it.
_LAYOUTS: weakref.WeakValueDictionary[Hashable, Layout] = weakref.WeakValueDictionary()
_LAYOUTS_LOCK = threading.Lock()


def _static_key(value: Any) -> Hashable:
    # -0.0 == 0.0 and hash alike: a float's repr tells them apart
    return (type(value), value, repr(value)) if isinstance(value, (float, complex)) else (type(value), value)


def interned(layout: Layout) -> Layout:
    """The one Layout of this structure (the first packed), so every compile cache keyed on it
    hits again; a layout with an unhashable non-array leaf is its own."""
    key = (layout.treedef, tuple(map(_static_key, layout.statics)), layout.slots, layout.groups)
    try:
        hash(key)
    except TypeError:
        return layout
    with _LAYOUTS_LOCK:
        return _LAYOUTS.setdefault(key, layout)


__all__ = ["Group", "Layout", "PackedState", "Slot", "packed_jit", "packed_pmap", "state_step"]


def _group_key(leaf: Any, index: int) -> tuple[Any, ...]:
    """(dtype, sharding, own buffer) of a leaf; a traced leaf has no placement of its own."""
    _REPLICATED = "a fully replicated sharding (packing flattens each leaf)"
    if isinstance(leaf, jax.core.Tracer):
        sharding = None
        spec = getattr(jax.typeof(leaf).sharding, "spec", ())
        if any(axis is not None for axis in spec):
            raise bad_value(f"leaf {index}'s sharding", jax.typeof(leaf).sharding, _REPLICATED)
    else:
        sharding = getattr(leaf, "sharding", None) if getattr(leaf, "committed", False) else None
        if sharding is not None and not sharding.is_fully_replicated:
            raise bad_value(f"leaf {index}'s sharding", sharding, _REPLICATED)
    weak = bool(getattr(leaf, "weak_type", False))
    return leaf.dtype, sharding, index if weak else None  # a weak leaf: a buffer of its own


@functools.partial(jax.jit, static_argnums=0)
def _pack_buffers(layout: Layout, *arrays: Any) -> tuple[jax.Array, ...]:
    return layout.repack(layout.treedef.unflatten(_merge(layout.statics, arrays)))


def _identity(tree: Any) -> Any:
    return tree


def _check_devices(devices: Any) -> list[jax.Device]:
    expected = "a non-empty sequence of distinct jax.Device (each holds one replica)"
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence) or not devices:
        raise bad_value("devices", devices, expected)
    if not all(isinstance(d, jax.Device) for d in devices) or len(set(devices)) != len(devices):
        raise bad_value("devices", devices, expected)
    return list(devices)


class PackedState:
    """Buffers plus their :class:`Layout`; a pytree whose leaves are the buffers only."""

    __slots__ = ("buffers", "layout")

    def __init__(self, buffers: tuple[jax.Array, ...], layout: Layout):
        self.buffers, self.layout = tuple(buffers), layout

    @classmethod
    def pack(cls, tree: Any) -> PackedState:
        """Flatten ``tree`` once into one buffer per (dtype, sharding) and per weakly typed leaf;
        leaves replicated or uncommitted, non-array leaves kept in the layout (static)."""
        leaves, treedef = jtu.tree_flatten(tree)
        keys: dict[tuple, int] = {}
        sizes: list[int] = []
        slots, statics, arrays = [], [], []
        for i, leaf in enumerate(leaves):
            if not is_array(leaf):
                statics.append(leaf)
                continue
            statics.append(None)
            group = keys.setdefault(_group_key(leaf, i), len(keys))
            if group == len(sizes):
                sizes.append(0)
            slots.append(Slot(i, group, sizes[group], tuple(leaf.shape)))
            sizes[group] += slots[-1].size
            arrays.append(leaf)
        groups = tuple(
            Group(dtype, size, sharding, weak is not None)
            for (dtype, sharding, weak), size in zip(keys, sizes)
        )
        layout = interned(Layout(treedef, tuple(statics), tuple(slots), groups))
        buffers = _pack_buffers(layout, *arrays)
        buffers = tuple(
            b if g.sharding is None else jax.device_put(b, g.sharding) for b, g in zip(buffers, groups)
        )
        return cls(buffers, layout)

    def unpack(self) -> Any:
        """The pytree (with a leading device axis on every array for a replicated state)."""
        return self.layout.unpack(self.buffers)

    def replicate(self, devices: Sequence[jax.Device]) -> PackedState:
        """The pmap form: every buffer stacked over ``devices`` and placed as jax.pmap wants it."""
        devices = _check_devices(devices)
        if any(b.ndim != 1 for b in self.buffers):
            raise bad_value("state", self, "an unreplicated PackedState (this one is replicated already)")
        if not self.buffers:
            return PackedState((), self.layout)  # nothing to place
        n = len(devices)
        stacked = [jnp.broadcast_to(b, (n, *b.shape)) for b in self.buffers]
        return PackedState(tuple(jax.pmap(_identity, devices=devices)(stacked)), self.layout)

    def abstract(self, *, replicas: int | None = None, sharding: Any = None) -> PackedState:
        """This layout with ``jax.ShapeDtypeStruct`` buffers, to lower a packed step ahead of time:
        ``replicas`` adds the pmap form's device axis, ``sharding`` places each buffer (jit form)."""
        lead = () if replicas is None else (replicas,)
        buffers = tuple(
            jax.ShapeDtypeStruct((*lead, g.size), g.dtype, sharding=sharding, weak_type=g.weak_type)
            for g in self.layout.groups
        )
        return PackedState(buffers, self.layout)  # type: ignore[arg-type]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{b.dtype}{list(b.shape)}" for b in self.buffers)
        return f"PackedState({len(self.layout.slots)} leaves in {len(self.buffers)} buffers: {shapes})"


def _merge(statics: Sequence[Any], arrays: Sequence[Any]) -> list[Any]:
    """Leaves from statics and arrays: flattening never yields None, so None marks an array's slot."""
    it = iter(arrays)
    return [next(it) if s is None else s for s in statics]


jtu.register_pytree_node(
    PackedState, lambda s: (s.buffers, s.layout), lambda layout, buffers: PackedState(tuple(buffers), layout)
)

StateFun = Callable[..., tuple[Any, Any]]
_NOT_A_STATE = "a PackedState (PackedState.pack(tree), .replicate(devices) for packed_pmap)"


def _stepper(fun: StateFun, mapped: bool) -> Callable[..., tuple[Any, PackedState]]:
    # fun's signature (through __wrapped__): jax.jit's static_argnames / donate_argnames resolve on it
    @functools.wraps(fun)
    def packed_step(state: PackedState, *args: Any, **kwargs: Any) -> tuple[Any, PackedState]:
        if not isinstance(state, PackedState):
            raise bad_value("state", type(state).__name__, _NOT_A_STATE)
        if [tuple(b.shape) for b in state.buffers] != [(g.size,) for g in state.layout.groups]:  # as traced
            pmap = "a state replicated over the devices (state.replicate(devices)) for packed_pmap"
            jit = "an unreplicated PackedState for packed_jit (a replicated one goes to packed_pmap)"
            raise bad_value("state", state, pmap if mapped else jit)
        tree = state.unpack()
        unpacked = (state.buffers, jtu.tree_leaves(tree))  # now: the step may set them in place (NNX)
        aux, new_tree = fun(tree, *args, **kwargs)
        new = state.layout.repack(new_tree, constrain=not mapped, unpacked=unpacked)
        return aux, PackedState(new, state.layout)

    packed_step.__name__ = f"packed_{getattr(fun, '__name__', 'step')}"
    return packed_step


def _donated(donate: bool, donate_argnums: Any) -> tuple[int, ...]:
    """The state (argument 0) when ``donate``, with any ``donate_argnums`` the caller gives."""
    extra = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    return tuple(sorted({0, *extra} if donate else set(extra)))


def _state_first(name: str, axes: Any, aux_part: bool) -> Any:
    """``in_axes``/``out_axes`` with the state's part mapped over axis 0 (the device axis every
    replicated buffer carries); a ValueError naming the option when the caller's maps it otherwise."""
    expected = (
        f"0, or a tuple whose {'second' if aux_part else 'first'} entry (the state's) is 0: the state's "
        "buffers carry the device axis first"
    )
    if axes == 0 and not isinstance(axes, bool):
        return (0, 0) if aux_part else 0
    if not isinstance(axes, (tuple, list)) or not axes:
        raise bad_value(name, axes, expected)
    state_axis = axes[1] if aux_part else axes[0]
    if aux_part and len(axes) != 2 or isinstance(state_axis, bool) or state_axis != 0:
        raise bad_value(name, axes, expected)
    return tuple(axes)


def _replication_problem(state: Any, devices: Sequence[jax.Device] | None) -> ValueError | None:
    """What is wrong with ``state`` for a packed_pmap over ``devices``, when something is."""
    if not isinstance(state, PackedState):
        return bad_value("state", type(state).__name__, _NOT_A_STATE)
    leading = {b.shape[0] if b.ndim == 2 else None for b in state.buffers}
    if None in leading or len(leading) > 1:
        return bad_value(
            "state", state, "a state replicated over the devices: call state.replicate(devices) first"
        )
    replicas = int(leading.pop() or 0) if leading else 0
    available = len(devices) if devices is not None else jax.local_device_count()
    if (devices is not None and replicas != available) or replicas > available:
        return bad_value(
            "devices" if devices is not None else "state",
            devices if devices is not None else state,
            f"as many devices ({available}) as the state has replicas ({replicas}): replicate it over "
            "the devices the step runs on",
        )
    return None


class PackedPmap:
    """What :func:`packed_pmap` returns: its ``jax.pmap``, with a clear error for a misfit state."""

    def __init__(self, pmapped: Any, devices: Sequence[jax.Device] | None) -> None:
        self.pmapped, self._devices = pmapped, devices
        functools.update_wrapper(self, pmapped, updated=())

    def _checked(self, call: Callable[..., Any], state: Any, args: tuple) -> Any:
        try:
            return call(state, *args)
        except (ValueError, TypeError) as err:
            problem = _replication_problem(state, self._devices)
            if problem is None:
                raise
            raise problem from err

    def __call__(self, state: PackedState, *args: Any) -> tuple[Any, PackedState]:
        return self._checked(self.pmapped, state, args)

    def lower(self, state: PackedState, *args: Any) -> Any:
        return self._checked(self.pmapped.lower, state, args)


def packed_pmap(
    fun: StateFun,
    *,
    axis_name: Any = None,
    devices: Sequence[jax.Device] | None = None,
    donate: bool = True,
    **pmap_kwargs: Any,
) -> Callable[..., tuple[Any, PackedState]]:
    """``jax.pmap`` of ``fun(tree, *args) -> (aux, new_tree)`` over a replicated
    :class:`PackedState`: returns ``(aux, new_state)``, every argument mapped over axis 0, the
    state donated unless ``donate=False``. ``new_tree`` must fit the layout."""
    if devices is not None:
        devices = _check_devices(devices)
    # a plain 0 (never a list) unless the caller maps the aux otherwise: multi-process pmap rejects lists
    out_axes = _state_first("out_axes", pmap_kwargs.pop("out_axes", 0), aux_part=True)
    if "in_axes" in pmap_kwargs:
        pmap_kwargs["in_axes"] = _state_first("in_axes", pmap_kwargs["in_axes"], aux_part=False)
    pmapped = jax.pmap(
        _stepper(fun, mapped=True),
        axis_name=axis_name,
        devices=devices,
        out_axes=0 if out_axes == (0, 0) else out_axes,
        donate_argnums=_donated(donate, pmap_kwargs.pop("donate_argnums", ())),
        **pmap_kwargs,
    )
    return PackedPmap(pmapped, devices)


def packed_jit(
    fun: StateFun, *, donate: bool = True, **jit_kwargs: Any
) -> Callable[..., tuple[Any, PackedState]]:
    """``jax.jit`` of ``fun(tree, *args) -> (aux, new_tree)`` over a :class:`PackedState` whose
    buffers keep their sharding: returns ``(aux, new_state)``, the state donated unless
    ``donate=False``. ``new_tree`` must fit the layout (see the module docstring); ``jit_kwargs``
    are ``jax.jit``'s, read against ``fun``'s signature."""
    stepper = _stepper(fun, mapped=False)
    names = jit_kwargs.pop("donate_argnames", None)
    if names is not None and "donate_argnums" not in jit_kwargs:
        # names alone: jax.jit finds their positions, so the state is donated by its name too
        names = (names,) if isinstance(names, str) else tuple(names)
        first = next(iter(inspect.signature(stepper).parameters), None)
        if first is not None:
            return jax.jit(stepper, donate_argnames=names + ((first,) if donate else ()), **jit_kwargs)
    donate_argnums = _donated(donate, jit_kwargs.pop("donate_argnums", ()))
    if names is not None:
        jit_kwargs["donate_argnames"] = names
    return jax.jit(stepper, donate_argnums=donate_argnums, **jit_kwargs)


def state_step(step: Callable[[Any, Any, Any], tuple[Any, Any, Any]]) -> StateFun:
    """``step(model, x, opt) -> (loss, model, opt)`` as ``fun((model, opt), x) -> (loss, (model, opt))``."""

    def fun(tree: tuple[Any, Any], x: Any) -> tuple[Any, tuple[Any, Any]]:
        loss, model, opt = step(tree[0], x, tree[1])
        return loss, (model, opt)

    fun.__name__ = getattr(step, "__name__", "step")
    return fun
