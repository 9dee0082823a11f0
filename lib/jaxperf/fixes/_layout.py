"""The static half of a :class:`~jaxperf.fixes.packed.PackedState`: where each leaf lives,
and the checks a step's new state must pass to be packed back.

A leaf packed as an array must come back as an array of its shape and dtype (a Python
scalar is taken as ``jax.jit`` returns it: a weakly typed array). A weakly typed leaf (a
Python-scalar hyperparameter such as a learning rate) gets a buffer of its own, so that
it stays weakly typed inside the step, as it is under ``jax.jit``, and may come back
either way; a strongly typed leaf shares its buffer and must come back strongly typed. A
non-array leaf (a function, a string, a Python scalar) is static: it must come back as
the same value of the same type (a step cannot change it; pack it as an array to carry it).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Sequence
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
    """One buffer: its dtype, its length, the sharding its leaves shared (None: uncommitted)
    and whether it holds one weakly typed leaf."""

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

    def check_buffers(self, state: Any, what: str) -> None:
        """Raise a clear ValueError when the buffers of ``state`` (as a step sees them) do not fit."""
        if [tuple(b.shape) for b in state.buffers] != [(g.size,) for g in self.groups]:
            raise bad_value("state", state, what)

    def repack(self, tree: Any, *, constrain: bool = False) -> tuple[jax.Array, ...]:
        """Buffers of this layout from ``tree`` (inside a compiled step). Raises ValueError
        naming the leaf when the tree does not fit the layout (see the module docstring)."""
        leaves, treedef = jtu.tree_flatten(tree)
        if treedef != self.treedef:
            raise bad_value("new state", treedef, f"the packed structure {self.treedef}")
        parts: list[list[jax.Array]] = [[] for _ in self.groups]
        for slot in self.slots:
            leaf, group = leaves[slot.leaf], self.groups[slot.group]
            if isinstance(leaf, _SCALARS):
                leaf = jnp.asarray(leaf)  # as jax.jit returns a Python scalar
            if not is_array(leaf) or tuple(leaf.shape) != slot.shape or leaf.dtype != group.dtype:
                raise _leaf_error(
                    tree,
                    slot.leaf,
                    leaf,
                    f"an array of shape {slot.shape} and dtype {group.dtype}, as packed",
                )
            if getattr(leaf, "weak_type", False) and not group.weak_type:
                raise _leaf_error(
                    tree,
                    slot.leaf,
                    leaf,
                    f"a strongly typed {group.dtype} array, as packed (its buffer is shared, so it "
                    f"cannot turn weakly typed): return x.astype(jnp.{group.dtype})",
                )
            parts[slot.group].append(jnp.ravel(leaf))
        for i, (leaf, static) in enumerate(zip(leaves, self.statics)):
            if static is None:
                continue
            if is_array(leaf) or not _same_static(leaf, static):
                raise _leaf_error(
                    tree,
                    i,
                    leaf,
                    f"the packed non-array leaf {static!r} of type {type(static).__name__} unchanged (it is "
                    "static; to update it in the step, pack it as an array, e.g. jnp.asarray(...))",
                )
        buffers = tuple(jnp.concatenate(p) if len(p) > 1 else p[0] for p in parts)
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
    """The one Layout of this structure (the first packed), so that packing the same
    structure again hits every compile cache keyed on it; a layout with an unhashable
    non-array leaf is its own."""
    key = (layout.treedef, tuple(map(_static_key, layout.statics)), layout.slots, layout.groups)
    try:
        hash(key)
    except TypeError:
        return layout
    with _LAYOUTS_LOCK:
        return _LAYOUTS.setdefault(key, layout)
