"""``cached_filter_pmap``: a drop-in for ``eqx.filter_pmap`` that partitions once.

``eqx.filter_pmap`` redoes, on every call, work whose answer only changes
when the *structure* of the inputs changes: resolving ``in_axes`` against the
arguments, partitioning ``(fun, args)`` into arrays and the rest, building a
ShapeDtypeStruct per array leaf, hashing all of that to find its compiled
function, and combining the outputs (equinox issue #192). This wrapper keys a
cache on what that work depends on -- the input treedef, the non-array leaves,
and the shape and dtype of each array leaf -- and on a hit does one C++
flatten, one dictionary lookup and one ``jax.pmap`` call.

Same signature and results as ``eqx.filter_pmap``. The fast path covers
``in_axes`` given as a pytree prefix of ``eqx.if_array(k)`` / int / None,
``out_axes=eqx.if_array(k)``, ``axis_name``, ``donate='none'`` and a ``fun``
without array leaves. Anything else -- keyword arguments (which filter_pmap
rejects), ``in_axes`` by name (a dict), other ``out_axes``, ``axis_size``,
donation, unhashable non-array leaves, or no mapped array at all -- is handed
to an ``eqx.filter_pmap`` built with the same options, so behaviour and errors
stay Equinox's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np
from jax._src.tree_util import broadcast_prefix  # what jax.pmap itself uses to expand in_axes

try:  # what eqx.is_array tests for, checked inline on the hot path
    from equinox._filters import _ARRAY_TYPES
except ImportError:  # pragma: no cover - older/newer Equinox layouts
    _ARRAY_TYPES = (np.ndarray, np.generic, jax.Array)

_sentinel = object()
_ARRAY = object()  # marks an array leaf's slot in a static-leaf list


class _Entry:
    """One compiled path: the jax.pmap to call and how to rebuild its output."""

    __slots__ = ("pmapped", "out_treedef", "out_static")

    def __init__(self) -> None:
        self.pmapped: Callable | None = None
        self.out_treedef = None
        self.out_static: list[Any] | None = None


def _is_axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, (int, eqx.if_array))


class CachedFilterPmap:
    """The wrapper ``cached_filter_pmap`` returns. ``stats`` counts hits and misses."""

    def __init__(
        self,
        fun: Callable,
        *,
        in_axes: Any,
        out_axes: Any,
        axis_name: Hashable,
        axis_size: int | None,
        donate: str,
        **pmapkwargs: Any,
    ):
        self.__wrapped__ = fun
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        self._in_axes = in_axes
        self._axis_name = axis_name
        self._fallback = eqx.filter_pmap(
            fun,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            donate=donate,
            **pmapkwargs,
        )
        self._cache: dict[Hashable, _Entry] = {}
        self.stats = {"hits": 0, "misses": 0, "fallbacks": 0}
        fast = (
            isinstance(out_axes, eqx.if_array)
            and axis_size is None
            and donate == "none"
            and not pmapkwargs
            and not isinstance(in_axes, dict)
            and all(_is_axis_leaf(a) for a in jtu.tree_leaves(in_axes, is_leaf=_is_axis_leaf))
            and not any(eqx.is_array(leaf) for leaf in jtu.tree_leaves(fun))
        )
        self._out_axis = out_axes.axis if fast else None
        self._fast = fast

    def clear_cache(self) -> None:
        self._cache.clear()

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        if not self._fast or kwargs:
            self.stats["fallbacks"] += 1
            return self._fallback(*args, **kwargs)
        leaves, treedef = jtu.tree_flatten(args)
        dynamic = []
        static = []
        signature = []
        for leaf in leaves:
            if isinstance(leaf, _ARRAY_TYPES):
                dynamic.append(leaf)
                static.append(_ARRAY)
                signature.append((leaf.shape, leaf.dtype))
            else:
                static.append(leaf)
                # The type too: 1, 1.0 and True are equal and hash alike, but trace differently.
                signature.append(type(leaf))
        try:
            key = (treedef, tuple(static), tuple(signature))
            entry = self._cache.get(key)
        except TypeError:  # an unhashable non-array leaf: Equinox handles it its own way
            self.stats["fallbacks"] += 1
            return self._fallback(*args)
        if entry is None:
            entry = self._build(args, leaves, treedef, static)
            if entry is None:
                self.stats["fallbacks"] += 1
                return self._fallback(*args)
            self._cache[key] = entry
            self.stats["misses"] += 1
        else:
            self.stats["hits"] += 1
        out_dynamic = entry.pmapped(dynamic)
        it = iter(out_dynamic)
        out_leaves = [next(it) if s is _ARRAY else s for s in entry.out_static]
        return entry.out_treedef.unflatten(out_leaves)

    def _build(self, args: tuple, leaves: list, treedef: Any, static: list) -> _Entry | None:
        """On a cache miss: resolve the axes once and build the jax.pmap for this structure."""
        try:
            per_leaf = broadcast_prefix(self._in_axes, args, is_leaf=_is_axis_leaf)
        except (ValueError, TypeError):
            return None  # an in_axes that does not fit: let Equinox raise its own error
        axes = []
        for axis, leaf in zip(per_leaf, leaves):
            axis = axis(leaf) if isinstance(axis, eqx.if_array) else axis
            if eqx.is_array(leaf):
                axes.append(axis)
            elif axis is not None:
                return None  # a mapped non-array: Equinox's error, not ours
        if all(a is None for a in axes):
            return None  # nothing mapped: jax.pmap would need axis_size
        entry = _Entry()
        fun = self._fun

        def inner(dynamic_leaves):
            it = iter(dynamic_leaves)
            full = [next(it) if s is _ARRAY else s for s in static]
            out = fun(*treedef.unflatten(full))
            out_leaves, entry.out_treedef = jtu.tree_flatten(out)
            entry.out_static = [_ARRAY if eqx.is_array(x) else x for x in out_leaves]
            return [x for x in out_leaves if eqx.is_array(x)]

        inner.__name__ = getattr(fun, "__name__", "fun")
        # One int when every leaf shares it: a per-leaf list would make jax.pmap
        # broadcast it against the arguments again on every call.
        in_axes = axes[0] if len(set(axes)) == 1 else axes
        entry.pmapped = jax.pmap(
            inner, in_axes=(in_axes,), out_axes=self._out_axis, axis_name=self._axis_name
        )
        return entry


def cached_filter_pmap(
    fun: Callable = _sentinel,  # type: ignore[assignment]
    *,
    in_axes: Any = eqx.if_array(0),
    out_axes: Any = eqx.if_array(0),
    axis_name: Hashable = None,
    axis_size: int | None = None,
    donate: str = "none",
    **pmapkwargs: Any,
) -> Any:
    """Drop-in for ``eqx.filter_pmap`` (same call signature, same results),
    caching the partition per input structure. Usable as a decorator with or
    without arguments."""
    if fun is _sentinel:
        return functools.partial(
            cached_filter_pmap,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            donate=donate,
            **pmapkwargs,
        )
    return CachedFilterPmap(
        fun,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=axis_name,
        axis_size=axis_size,
        donate=donate,
        **pmapkwargs,
    )
