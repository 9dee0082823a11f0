"""The packed fast path: a training state carried as one buffer per (dtype, sharding).

``eqx.filter_pmap``, ``jax.pmap`` and ``jax.jit`` all pay per array leaf on
every call: flatten, check, hand each buffer to the runtime, and (without
donation) copy every output. A model with optimiser state has hundreds of
leaves. This path pays that once:

- :meth:`PackedState.pack` flattens a pytree (typically ``(model, opt_state)``)
  once, outside the loop, into one contiguous 1-D buffer per (dtype,
  sharding), and keeps the rest (tree structure, non-array leaves, each
  leaf's offset and shape) in a static :class:`Layout`;
- :func:`packed_pmap` / :func:`packed_jit` compile a step ``fun(tree, *args)
  -> (aux, new_tree)`` that takes and returns the packed state: unpacking is
  static slices inside the compiled program (free for XLA), and the buffers
  are donated by default, so a call moves a handful of buffers, not hundreds;
- :meth:`PackedState.unpack` rebuilds the pytree, on the host only when the
  user asks for the model (to evaluate or save it).

The pmap form carries a leading device axis on every buffer
(:meth:`PackedState.replicate`); its ``out_axes`` is a plain ``0``, never a
list, so it also runs across processes, where ``jax.pmap`` rejects list
``out_axes`` (the bug that stops ``eqx.filter_pmap`` there). The jit form keeps
each buffer on its group's sharding (replicated leaves only: a leaf sharded
along an axis cannot be flattened into a shared 1-D buffer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np

from ..errors import bad_value


@dataclass(frozen=True)
class Group:
    """One buffer: its dtype, its length, and the sharding its leaves shared (None: uncommitted)."""

    dtype: np.dtype
    size: int
    sharding: jax.sharding.Sharding | None


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

    def repack(self, tree: Any, *, constrain: bool = False) -> tuple[jax.Array, ...]:
        """Buffers of this layout from ``tree`` (inside a compiled step). Raises ValueError
        when the tree does not fit the layout (structure, a non-array leaf, shape or dtype)."""
        leaves, treedef = jtu.tree_flatten(tree)
        if treedef != self.treedef:
            raise bad_value("new state", treedef, f"the packed structure {self.treedef}")
        parts: list[list[jax.Array]] = [[] for _ in self.groups]
        for slot in self.slots:
            leaf, group = leaves[slot.leaf], self.groups[slot.group]
            if not _is_array(leaf) or tuple(leaf.shape) != slot.shape or leaf.dtype != group.dtype:
                raise bad_value(
                    f"new state leaf {slot.leaf}",
                    getattr(leaf, "aval", leaf),
                    f"an array of shape {slot.shape} and dtype {group.dtype}, as packed",
                )
            parts[slot.group].append(jnp.ravel(leaf))
        for i, (leaf, static) in enumerate(zip(leaves, self.statics)):
            if not _is_array(leaf) and leaf is not static and leaf != static:
                raise bad_value(f"new state leaf {i}", leaf, f"the packed non-array leaf {static!r}")
        buffers = tuple(jnp.concatenate(p) if len(p) > 1 else p[0] for p in parts)
        if constrain:
            buffers = tuple(
                b if g.sharding is None else jax.lax.with_sharding_constraint(b, g.sharding)
                for b, g in zip(buffers, self.groups)
            )
        return buffers


def _is_array(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _group_key(leaf: Any, index: int) -> tuple[np.dtype, jax.sharding.Sharding | None]:
    sharding = getattr(leaf, "sharding", None) if getattr(leaf, "committed", False) else None
    if sharding is not None and not sharding.is_fully_replicated:
        raise bad_value(
            f"leaf {index}'s sharding", sharding, "a fully replicated sharding (packing flattens each leaf)"
        )
    return np.dtype(leaf.dtype), sharding


class PackedState:
    """Buffers plus their :class:`Layout`; a pytree whose leaves are the buffers only."""

    __slots__ = ("buffers", "layout")

    def __init__(self, buffers: tuple[jax.Array, ...], layout: Layout):
        self.buffers = tuple(buffers)
        self.layout = layout

    @classmethod
    def pack(cls, tree: Any) -> PackedState:
        """Flatten ``tree`` once into one buffer per (dtype, sharding). Leaves must be
        replicated or uncommitted; non-array leaves are kept in the layout."""
        leaves, treedef = jtu.tree_flatten(tree)
        keys: dict[tuple, int] = {}
        sizes: list[int] = []
        slots, statics, arrays = [], [], []
        for i, leaf in enumerate(leaves):
            if not _is_array(leaf):
                statics.append(leaf)
                continue
            statics.append(None)
            group = keys.setdefault(_group_key(leaf, i), len(keys))
            if group == len(sizes):
                sizes.append(0)
            slots.append(Slot(i, group, sizes[group], tuple(leaf.shape)))
            sizes[group] += slots[-1].size
            arrays.append(leaf)
        groups = tuple(Group(dtype, size, sharding) for (dtype, sharding), size in zip(keys, sizes))
        layout = Layout(treedef, tuple(statics), tuple(slots), groups)
        buffers = jax.jit(lambda *xs: layout.repack(jtu.tree_unflatten(treedef, _merge(statics, xs))))(
            *arrays
        )
        buffers = tuple(
            b if g.sharding is None else jax.device_put(b, g.sharding) for b, g in zip(buffers, groups)
        )
        return cls(buffers, layout)

    def unpack(self) -> Any:
        """The pytree (with a leading device axis on every array for a replicated state)."""
        return self.layout.unpack(self.buffers)

    def replicate(self, devices: Sequence[jax.Device]) -> PackedState:
        """The pmap form: every buffer stacked over ``devices`` and placed as jax.pmap wants it."""
        n = len(devices)
        stacked = [jnp.broadcast_to(b, (n, *b.shape)) for b in self.buffers]
        return PackedState(tuple(jax.pmap(lambda t: t, devices=devices)(stacked)), self.layout)

    def abstract(self, *, replicas: int | None = None, sharding: Any = None) -> PackedState:
        """This layout with ``jax.ShapeDtypeStruct`` buffers, to lower and compile a packed step
        ahead of time (e.g. for a TPU topology described on a CPU): ``replicas`` adds the pmap
        form's leading device axis, ``sharding`` places each buffer for the jit form."""
        lead = () if replicas is None else (replicas,)
        buffers = tuple(
            jax.ShapeDtypeStruct((*lead, g.size), g.dtype, sharding=sharding) for g in self.layout.groups
        )
        return PackedState(buffers, self.layout)  # type: ignore[arg-type]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{b.dtype}{list(b.shape)}" for b in self.buffers)
        return f"PackedState({len(self.layout.slots)} leaves in {len(self.buffers)} buffers: {shapes})"


def _merge(statics: list[Any], arrays: Sequence[Any]) -> list[Any]:
    """Leaves from statics and arrays: flattening never yields None, so None marks an array's slot."""
    it = iter(arrays)
    return [next(it) if s is None else s for s in statics]


jtu.register_pytree_node(
    PackedState,
    lambda s: (s.buffers, s.layout),
    lambda layout, buffers: PackedState(tuple(buffers), layout),
)

StateFun = Callable[..., tuple[Any, Any]]


def _stepper(fun: StateFun, constrain: bool) -> Callable[..., tuple[Any, PackedState]]:
    def packed_step(state: PackedState, *args: Any) -> tuple[Any, PackedState]:
        aux, new_tree = fun(state.unpack(), *args)
        return aux, PackedState(state.layout.repack(new_tree, constrain=constrain), state.layout)

    packed_step.__name__ = f"packed_{getattr(fun, '__name__', 'step')}"
    return packed_step


def packed_pmap(
    fun: StateFun,
    *,
    axis_name: Any = None,
    devices: Sequence[jax.Device] | None = None,
    donate: bool = True,
    **pmap_kwargs: Any,
) -> Callable[..., tuple[Any, PackedState]]:
    """``jax.pmap`` of ``fun(tree, *args) -> (aux, new_tree)`` over a replicated
    :class:`PackedState` (see :meth:`PackedState.replicate`): returns ``(aux,
    new_state)``, every argument mapped over axis 0, the state donated unless
    ``donate=False``. ``new_tree`` must have the packed structure, shapes and dtypes."""
    return jax.pmap(
        _stepper(fun, constrain=False),
        axis_name=axis_name,
        devices=devices,
        out_axes=0,
        donate_argnums=(0,) if donate else (),
        **pmap_kwargs,
    )


def packed_jit(
    fun: StateFun, *, donate: bool = True, **jit_kwargs: Any
) -> Callable[..., tuple[Any, PackedState]]:
    """``jax.jit`` of ``fun(tree, *args) -> (aux, new_tree)`` over a :class:`PackedState`
    whose buffers keep their sharding (e.g. replicated over a mesh, with the
    batch in ``args`` sharded): returns ``(aux, new_state)``, the state donated
    unless ``donate=False``."""
    return jax.jit(_stepper(fun, constrain=True), donate_argnums=(0,) if donate else (), **jit_kwargs)


def state_step(step: Callable[[Any, Any, Any], tuple[Any, Any, Any]]) -> StateFun:
    """Adapt a study step ``step(model, x, opt_state) -> (loss, model, opt_state)`` to the
    packed form ``fun((model, opt_state), x) -> (loss, (model, opt_state))``."""

    def fun(tree: tuple[Any, Any], x: Any) -> tuple[Any, tuple[Any, Any]]:
        loss, model, opt = step(tree[0], x, tree[1])
        return loss, (model, opt)

    fun.__name__ = getattr(step, "__name__", "step")
    return fun
