"""``cached_filter_pmap``: a drop-in for ``eqx.filter_pmap`` that partitions once.

``eqx.filter_pmap`` redoes, on every call, work whose answer only changes when
the *structure* of the inputs changes: resolving ``in_axes`` against the
arguments, partitioning ``(fun, args)`` into arrays and the rest, building a
ShapeDtypeStruct per array leaf, hashing all of that to find its compiled
function, and combining the outputs (equinox issue #192). This wrapper keys a
cache on what that work depends on and, on a hit, does one C++ flatten, one
dictionary lookup and one ``jax.pmap`` call.

The key holds everything that makes JAX retrace: the input treedef, the
non-array leaves (with their types: ``1``, ``1.0`` and ``True`` are equal in
Python but trace differently), each array's shape, dtype and weak type, and
JAX's trace context (the x64 flag, default device, matmul precision, ...). The
non-array outputs recorded when a trace runs therefore always belong to the
compiled function the key selects.

Same signature, results and errors as ``eqx.filter_pmap``: plain functions,
decorators with and without arguments, methods and ``__call__`` of an
``eqx.Module`` (bound through the instance, as Equinox binds), ``in_axes`` as a
prefix of the arguments or a dict by parameter name, any ``out_axes`` pytree,
``axis_name``, ``axis_size``, ``donate`` and ``.lower(...).compile()``. It
hands a call to an ``eqx.filter_pmap`` built with the same options only where
Equinox's own behaviour is the answer: keyword arguments and inputs Equinox
rejects (so its errors stay its own), unhashable non-array leaves, and nothing
mapped. Each hand-over is counted, per wrapper (``stats``, ``fallback_reasons``)
and in total (:func:`fallback_counts`).
"""

from __future__ import annotations

import collections
import functools
import inspect
import warnings
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np

from .. import private_api
from ._pmap_entry import ARRAY, Entry, Lowered, build_entry, resolve_axes

_ARRAY_TYPES = private_api.equinox_array_types()
# .lower() also takes abstract arrays, as jax.jit(...).lower does: compile for a topology
# (e.g. a TPU v3-8 described on a CPU) without any array of it.
_LOWER_TYPES = (*_ARRAY_TYPES, jax.ShapeDtypeStruct)
_trace_context = private_api.jax_trace_context()
_sentinel = object()
_FALLBACKS: collections.Counter[str] = collections.Counter()


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_pmap`` in this process handed to ``eqx.filter_pmap``, by reason."""
    return dict(_FALLBACKS)


class _Fallback(Exception):
    """Raised while resolving a call that Equinox must handle; carries the reason."""


class CachedFilterPmap:
    """The wrapper ``cached_filter_pmap`` returns. ``stats`` counts hits, misses and fallbacks."""

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
        # Equinox validates the options (same errors), and is the fallback.
        filter_pmap: Any = eqx.filter_pmap  # donate is checked there, as a str
        self._fallback = filter_pmap(
            fun,
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            axis_size=axis_size,
            donate=donate,
            **pmapkwargs,
        )
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        self._in_axes = in_axes
        self._out_axes = out_axes
        self._axis_name = axis_name
        self._axis_size = axis_size
        self._donate = "all" if donate == "arrays" else donate
        self._pmapkwargs = pmapkwargs
        # A function (or a Module without arrays) is constant: only its arrays need passing.
        self._fun_arrays = any(isinstance(leaf, _ARRAY_TYPES) for leaf in jtu.tree_leaves(fun))
        self._dummy = (
            None if axis_size is None else np.broadcast_to(0, axis_size)
        )  # JAX issue #9252, as Equinox
        self._flattens_fun = self._fun_arrays or self._dummy is not None  # flatten (fun, args, dummy)
        self._named: dict[int, tuple] = {}
        self._cache: dict[Hashable, Entry] = {}
        self.stats = {"hits": 0, "misses": 0, "fallbacks": 0}
        self.fallback_reasons: collections.Counter[str] = collections.Counter()

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        if instance is None:
            return self
        return eqx.Partial(self, instance)

    # ------------------------------------------------------------ the call

    def _fall_back(self, reason: str, args: tuple, kwargs: dict, lower: bool = False) -> Any:
        self.stats["fallbacks"] += 1
        self.fallback_reasons[reason] += 1
        _FALLBACKS[reason] += 1
        return (self._fallback.lower if lower else self._fallback)(*args, **kwargs)

    def _key(self, args: tuple, types: tuple[type, ...] = _ARRAY_TYPES) -> tuple[Hashable, list, list, Any]:
        """(cache key, array leaves, static leaves with ARRAY marks, treedef) of one call;
        ``types``: what counts as an array (abstract ones too when lowering)."""
        tree = (self._fun, args, self._dummy) if self._flattens_fun else args
        leaves, treedef = jtu.tree_flatten(tree)
        dynamic: list[Any] = []
        static: list[Any] = []
        signature: list[Any] = []
        leaf: Any
        for leaf in leaves:
            if isinstance(leaf, types):
                dynamic.append(leaf)
                static.append(ARRAY)
                array: Any = leaf
                signature.append((array.shape, array.dtype, getattr(array, "weak_type", False)))
            else:
                static.append(leaf)
                signature.append(type(leaf))
        key = (treedef, tuple(static), tuple(signature), _trace_context())
        hash(key)  # TypeError for an unhashable non-array leaf
        return key, dynamic, static, treedef

    def _lookup(self, args: tuple, types: tuple[type, ...] = _ARRAY_TYPES) -> tuple[Hashable, Entry, list]:
        """(key, entry, array leaves) of one call; builds the entry on a miss."""
        try:
            key, dynamic, static, treedef = self._key(args, types)
        except TypeError as err:
            raise _Fallback("unhashable non-array leaf") from err
        entry = self._cache.get(key)
        if entry is not None:
            self.stats["hits"] += 1
            return key, entry, dynamic
        entry = build_entry(self, treedef, static, self._dynamic_axes(args, static, types), dynamic)
        self._cache[key] = entry
        self.stats["misses"] += 1
        return key, entry, dynamic

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return self._fall_back("keyword arguments", args, kwargs)
        try:
            _, entry, dynamic = self._lookup(args)
            if entry.calls == 0:  # a new compile: errors in it are Equinox's to raise
                out = self._run(entry, dynamic)
                entry.calls += 1
                return out
        except _Fallback as reason:
            return self._fall_back(str(reason), args, kwargs)
        except Exception:  # noqa: BLE001 -- re-raised by Equinox, with Equinox's own message
            self._cache = {k: e for k, e in self._cache.items() if e.calls}
            return self._fall_back("error on first call", args, kwargs)
        return self._run(entry, dynamic)

    def _run(self, entry: Entry, dynamic: list) -> Any:
        if self._donate == "all":
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                out = entry.pmapped(tuple(dynamic))
        else:
            out = entry.pmapped(tuple(dynamic))
        return entry.rebuild(out)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """Ahead-of-time: ``.lower(*args)`` then ``.compile()``, as ``eqx.filter_pmap(...).lower``;
        array arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""
        if kwargs:
            return self._fall_back("keyword arguments", args, kwargs, lower=True)
        try:
            key, entry, dynamic = self._lookup(args, _LOWER_TYPES)
            return Lowered(entry.pmapped.lower(tuple(dynamic)), entry, key, self._key_of)
        except _Fallback as reason:
            return self._fall_back(str(reason), args, kwargs, lower=True)
        except Exception:  # noqa: BLE001 -- re-raised by Equinox
            return self._fall_back("error on first call", args, kwargs, lower=True)

    def _key_of(self, args: tuple) -> tuple[Hashable, list]:
        key, dynamic, _, _ = self._key(args)
        return key, dynamic

    # ------------------------------------------------------------ axes

    def _prefix(self, args: tuple) -> Any:
        """``in_axes`` as a prefix of ``args``: a dict names parameters (others ``if_array(0)``)."""
        if not isinstance(self._in_axes, dict):
            return self._in_axes
        named = self._named.get(len(args))
        if named is None:
            params = inspect.signature(self._fun).parameters
            names = [name for _, name in zip(args, params)]
            if set(self._in_axes) - set(names):
                raise _Fallback("in_axes names no argument")  # Equinox's ValueError
            named = tuple(self._in_axes.get(name, eqx.if_array(0)) for name in names)
            self._named[len(args)] = named
        return named

    def _dynamic_axes(self, args: tuple, static: list, types: tuple[type, ...]) -> list[int | None]:
        """One resolved axis (int or None) per array leaf of the flattened call, in order:
        fun's arrays broadcast (None), then the arguments', then the axis_size dummy (0)."""
        try:
            arg_axes = resolve_axes(self._prefix(args), args, types)
        except (ValueError, TypeError) as err:
            raise _Fallback("in_axes does not fit the arguments") from err
        n_fun = len(static) - len(arg_axes) - (self._dummy is not None)
        axes = [None] * n_fun + arg_axes + ([0] if self._dummy is not None else [])
        for axis, slot in zip(axes, static):
            if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
                raise _Fallback("in_axes resolves to neither an int nor None")
            if axis is not None and slot is not ARRAY:
                raise _Fallback("a non-array argument is mapped")
        dynamic_axes = [axis for axis, slot in zip(axes, static) if slot is ARRAY]
        if all(axis is None for axis in dynamic_axes):
            raise _Fallback("nothing mapped")
        return dynamic_axes


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
    """Drop-in for ``eqx.filter_pmap`` (same signature, results and errors) that caches the
    partition of its inputs per input structure. Usable as a decorator with or without
    arguments, on functions and on methods of an ``eqx.Module``."""
    options = dict(
        in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size, donate=donate
    )
    if fun is _sentinel:
        return functools.partial(cached_filter_pmap, **options, **pmapkwargs)
    return CachedFilterPmap(fun, **options, **pmapkwargs)
