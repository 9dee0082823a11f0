"""One compiled path of :class:`~jaxperf.fixes.cached_pmap.CachedFilterPmap`: the
``jax.pmap`` for one input structure, how to rebuild its outputs, and its
ahead-of-time forms (``Lowered``, ``Compiled``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.tree_util as jtu

from .. import private_api

if TYPE_CHECKING:
    from .cached_pmap import CachedFilterPmap

_ARRAY_TYPES = private_api.equinox_array_types()
_broadcast_prefix = private_api.jax_broadcast_prefix()
#: marks an array leaf's slot in a list of static leaves
ARRAY = object()


class Entry:
    """The ``jax.pmap`` for one cache key, and how to rebuild its outputs. The output
    structure and non-array outputs are recorded when JAX traces; the cache key holds
    everything that makes JAX retrace, so they always belong to the compiled function."""

    __slots__ = ("pmapped", "out_treedef", "out_static", "calls")

    def __init__(self) -> None:
        self.pmapped: Any = None
        self.out_treedef: Any = None
        self.out_static: list[Any] = []
        self.calls = 0

    def rebuild(self, out_dynamic: tuple) -> Any:
        it = iter(out_dynamic)
        return self.out_treedef.unflatten([next(it) if s is ARRAY else s for s in self.out_static])


def _is_axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int) or callable(x)


def resolve_axes(spec: Any, tree: Any, array_types: tuple[type, ...] = _ARRAY_TYPES) -> list[Any]:
    """One axis per leaf of ``tree`` from a prefix ``spec`` of None / ints / callables
    (called on each leaf), as Equinox resolves ``in_axes`` and ``out_axes``; an
    ``eqx.if_array(k)`` gives ``k`` for any leaf of ``array_types``."""
    per_leaf = _broadcast_prefix(spec, tree, is_leaf=_is_axis_leaf)
    leaves = jtu.tree_leaves(tree)
    return [
        (s.axis if isinstance(leaf, array_types) else None)
        if isinstance(s, eqx.if_array)
        else (s(leaf) if callable(s) else s)
        for s, leaf in zip(per_leaf, leaves)
    ]


def _one_or_tuple(axes: list[Any]) -> Any:
    """A single int when every leaf shares it (jax.pmap then broadcasts nothing per call);
    else a tuple (never a list: multi-process jax.pmap rejects list axes)."""
    return axes[0] if axes and len(set(axes)) == 1 else tuple(axes)


def build_entry(wrapper: CachedFilterPmap, treedef: Any, static: list, axes: list, dynamic: list) -> Entry:
    """The ``jax.pmap`` for one input structure (``treedef`` with ``static`` leaves, ``axes``
    one per array leaf in ``dynamic``)."""
    entry = Entry()
    fun, fun_in_tree = wrapper._fun, wrapper._flattens_fun

    def call(dynamic_leaves: tuple) -> Any:
        it = iter(dynamic_leaves)
        tree = treedef.unflatten([next(it) if s is ARRAY else s for s in static])
        f, args = (tree[0], tree[1]) if fun_in_tree else (fun, tree)
        return f(*args)

    def record(out: Any) -> tuple:
        leaves, entry.out_treedef = jtu.tree_flatten(out)
        entry.out_static = [ARRAY if isinstance(x, _ARRAY_TYPES) else x for x in leaves]
        return tuple(x for x in leaves if isinstance(x, _ARRAY_TYPES))

    in_axes = _one_or_tuple(axes)
    if isinstance(wrapper._out_axes, eqx.if_array):
        out_axes = wrapper._out_axes.axis
    else:  # resolve the out_axes pytree against the output, traced once under vmap (as Equinox does)
        resolved: list[Any] = []

        def probe(dynamic_leaves: tuple) -> tuple:
            out = call(dynamic_leaves)
            leaves = jtu.tree_leaves(out)
            per_leaf = resolve_axes(wrapper._out_axes, out)
            resolved[:] = [a for a, x in zip(per_leaf, leaves) if isinstance(x, _ARRAY_TYPES)]
            return record(out)

        structs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in dynamic)
        vmapped = jax.vmap(
            probe, in_axes=(in_axes,), axis_name=wrapper._axis_name, axis_size=wrapper._axis_size
        )
        jax.eval_shape(vmapped, structs)
        out_axes = _one_or_tuple(resolved) if resolved else 0

    def inner(dynamic_leaves: tuple) -> tuple:
        return record(call(dynamic_leaves))

    inner.__name__ = getattr(fun, "__name__", type(fun).__name__)
    inner.__qualname__ = getattr(fun, "__qualname__", inner.__name__)
    entry.pmapped = jax.pmap(
        inner,
        in_axes=(in_axes,),
        out_axes=out_axes,
        axis_name=wrapper._axis_name,
        axis_size=wrapper._axis_size,
        donate_argnums=(0,) if wrapper._donate != "none" else (),
        **wrapper._pmapkwargs,
    )
    return entry


class Compiled:
    """``Lowered.compile()``: call it with arguments of the structure it was lowered for."""

    def __init__(self, compiled: Any, entry: Entry, key: Hashable, key_of: Callable) -> None:
        self.compiled, self._entry, self._key, self._key_of = compiled, entry, key, key_of

    def __call__(self, *args: Any) -> Any:
        key, dynamic = self._key_of(args)
        if key != self._key:
            raise TypeError(
                "arguments of another structure, shape, dtype or static value than those it was "
                "lowered for: lower(...) again with these arguments."
            )
        return self._entry.rebuild(self.compiled(tuple(dynamic)))

    def as_text(self) -> str:
        return self.compiled.as_text()


class Lowered:
    """``cached_filter_pmap(f).lower(*args)``: ``as_text()`` and ``compile()``, as Equinox's."""

    def __init__(self, lowered: Any, entry: Entry, key: Hashable, key_of: Callable) -> None:
        self.lowered, self._entry, self._key, self._key_of = lowered, entry, key, key_of

    def as_text(self) -> str:
        return self.lowered.as_text()

    def compile(self, compiler_options: dict[str, str | bool] | None = None) -> Compiled:
        compiled = self.lowered.compile(compiler_options=compiler_options)
        return Compiled(compiled, self._entry, self._key, self._key_of)
