"""One compiled path of :func:`~jaxperf.fixes.cached_pmap.cached_filter_pmap`: the
``jax.pmap`` for one input structure and how it resolves ``out_axes``, as Equinox does.

Equinox classifies each output leaf by the axis the caller's ``out_axes`` resolves to on
it, not by its type: a leaf with an integer axis leaves the pmap mapped (a Python scalar
comes back as an array with one entry per device, a string is JAX's TypeError), a leaf
with ``None`` leaves it unmapped if it is an array and is returned as it is otherwise.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.tree_util as jtu

from .. import private_api
from ._partition import ARRAY_TYPES, merge, record

if TYPE_CHECKING:
    from ._pmap_paths import PmapPaths

_broadcast_prefix = private_api.jax_broadcast_prefix()
#: what ``eqx.filter_pmap`` sizes ``out_axes`` by: arrays and Python scalars
_ARRAY_LIKE = (*ARRAY_TYPES, bool, int, float, complex)
# Equinox's messages, word for word (equinox/_vmap_pmap.py)
_SPEC_ERROR = "`in_axes` and `out_axes` must consist of None, ints, and callables only."
_RANGE_ERROR = "integers in filter_pmap(..., out_axes=...) must correspond to a dimension of the output array"
_KIND_ERROR = "filter_pmap(..., out_axes=...) must contain only integers and Nones"


#: ``tracing.traced`` is set when a trace reaches the wrapped function (per thread): from
#: then on an error is the function's, or its outputs', and is raised, never handed over
tracing = threading.local()


class Entry:
    """The ``jax.pmap`` for one cache key (it returns ``(array outputs, Record)``); ``traced``:
    whether a trace of it has reached the end (set under the paths' lock)."""

    __slots__ = ("pmapped", "traced")

    def __init__(self) -> None:
        self.pmapped: Any = None
        self.traced = False


def _is_axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int) or callable(x)


def resolve_axes(spec: Any, tree: Any, array_types: tuple[type, ...] = ARRAY_TYPES) -> list[Any]:
    """One axis per leaf of ``tree`` from a prefix ``spec`` of None / ints / callables
    (called on each leaf), as Equinox resolves ``in_axes``; an ``eqx.if_array(k)`` gives
    ``k`` for any leaf of ``array_types``."""
    per_leaf = _broadcast_prefix(spec, tree, is_leaf=_is_axis_leaf)
    leaves = jtu.tree_leaves(tree)
    return [
        (s.axis if isinstance(leaf, array_types) else None)
        if isinstance(s, eqx.if_array)
        else (s(leaf) if callable(s) else s)
        for s, leaf in zip(per_leaf, leaves)
    ]


def _resolve_one(spec: Any, subtree: Any) -> Any:
    if spec is None or isinstance(spec, int):
        return jtu.tree_map(lambda _: spec, subtree)
    if callable(spec):
        return jtu.tree_map(spec, subtree)
    raise ValueError(_SPEC_ERROR)


def out_axes_per_leaf(spec: Any, out: Any, leaves: list[Any]) -> list[Any]:
    """One resolved axis per leaf of ``out``, checked with Equinox's rules and messages."""
    resolved = jtu.tree_map(_resolve_one, spec, out, is_leaf=lambda x: x is None)
    treedef: Any = jtu.tree_structure(out)
    axes = treedef.flatten_up_to(resolved)
    ndims = [getattr(x, "ndim", 0) for x in leaves if isinstance(x, _ARRAY_LIKE)]
    max_out_size = 1 + max(ndims) if ndims else 0  # the mapped axis counts
    for axis in axes:
        if isinstance(axis, int):
            if axis < -max_out_size or axis >= max_out_size:
                raise ValueError(_RANGE_ERROR)
        elif axis is not None:
            raise ValueError(_KIND_ERROR)
    return [None if a is None else int(a) for a in axes]  # True is axis 1, as Equinox reads it


def _one_or_tuple(axes: list[Any]) -> Any:
    """A single value when every leaf shares it (jax.pmap then broadcasts nothing per call);
    else a tuple (never a list: multi-process jax.pmap rejects list axes)."""
    return axes[0] if axes and len(set(axes)) == 1 else tuple(axes)


def _known_out_axes(spec: Any) -> tuple[bool, Any]:
    """(known, pmap out_axes): the forms whose axes need no look at the outputs."""
    if isinstance(spec, eqx.if_array):
        return True, spec.axis
    if spec is None or isinstance(spec, int):
        return True, None if spec is None else int(spec)
    return False, None


def build_entry(paths: PmapPaths, treedef: Any, static: list, axes: list, dynamic: list) -> Entry:
    """The ``jax.pmap`` for one input structure (``treedef`` with ``static`` leaves, ``axes``
    one per array leaf in ``dynamic``): the tree is ``(fun or None, args, dummy or None)``,
    None for a Python function, which comes from ``paths.fun_ref`` (a weak reference)."""
    entry = Entry()
    # The entry may outlive every wrapper (equal wrappers share entries, as Equinox's share
    # compiled functions): its closures hold the options, never a wrapper nor the function.
    fun_ref, spec, lock = paths.fun_ref, paths.out_axes, paths.lock
    axis_name, axis_size = paths.axis_name, paths.axis_size

    def call(dynamic_leaves: tuple) -> Any:
        fun, args, _ = merge(treedef, static, dynamic_leaves)
        tracing.traced = True
        return (fun_ref() if fun is None else fun)(*args)

    def classify(out: Any) -> tuple[list[Any], list[Any], list[bool]]:
        leaves = jtu.tree_leaves(out)
        per_leaf = out_axes_per_leaf(spec, out, leaves)
        mapped = [a is not None or isinstance(x, ARRAY_TYPES) for a, x in zip(per_leaf, leaves)]
        return leaves, per_leaf, mapped

    in_axes = _one_or_tuple(axes)
    known, out_axes = _known_out_axes(spec)
    if not known:  # resolve the out_axes pytree against the output, traced once under vmap (as Equinox does)
        resolved: list[Any] = []

        def probe(dynamic_leaves: tuple) -> tuple:
            leaves, per_leaf, mapped = classify(call(dynamic_leaves))
            resolved[:] = [a for a, m in zip(per_leaf, mapped) if m]
            return tuple(x for x in leaves if isinstance(x, _ARRAY_LIKE))

        structs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in dynamic)
        vmapped = jax.vmap(probe, in_axes=(in_axes,), axis_name=axis_name, axis_size=axis_size)
        jax.eval_shape(vmapped, structs)
        out_axes = _one_or_tuple(resolved) if resolved else 0

    def inner(dynamic_leaves: tuple) -> tuple:
        out = call(dynamic_leaves)
        result = record(out, classify(out)[2])
        with lock:
            entry.traced = True
        return result

    inner.__name__, inner.__qualname__ = paths.name, paths.qualname
    entry.pmapped = jax.pmap(
        inner,
        in_axes=(in_axes,),
        out_axes=(out_axes, 0),  # the record has no leaves: any axis
        axis_name=axis_name,
        axis_size=axis_size,
        donate_argnums=(0,) if paths.donate != "none" else (),
        **paths.pmapkwargs,
    )
    return entry


def run_compiled(compiled: Any, dynamic: list) -> Any:
    """Call a compiled (ahead-of-time) form of an entry and rebuild its outputs."""
    out, rec = compiled(tuple(dynamic))
    return rec.rebuild(out)
