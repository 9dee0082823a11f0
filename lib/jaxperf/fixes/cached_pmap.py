"""``cached_filter_pmap``: a drop-in for ``eqx.filter_pmap`` that partitions once.

``eqx.filter_pmap`` redoes, on every call, work whose answer only changes when
the *structure* of the inputs changes: resolving ``in_axes`` against the
arguments, partitioning ``(fun, args)`` into arrays and the rest, building a
ShapeDtypeStruct per array leaf, hashing all of that to find its compiled
function, and combining the outputs (equinox issue #192). This wrapper keys a
cache on what that work depends on and, on a hit, does one C++ flatten, one
dictionary lookup and one ``jax.pmap`` call.

The key (shared with ``cached_filter_jit``, in :mod:`._partition`) holds
everything that makes JAX retrace, so the outputs recorded when a trace runs
always belong to the compiled function the key selects. Outputs are classified
by the axis the caller's ``out_axes`` gives them, as Equinox does: with
``out_axes=0`` a Python scalar output comes back as an array with one entry per
device, with ``eqx.if_array(0)`` (the default) it comes back as it is.

Same signature, results and errors as ``eqx.filter_pmap``: plain functions,
decorators with and without arguments, methods and ``__call__`` of an
``eqx.Module`` (bound through the instance, as Equinox binds), ``in_axes`` as a
prefix of the arguments or a dict by parameter name, any ``out_axes`` pytree,
``axis_name``, ``axis_size``, ``donate`` and ``.lower(...).compile()``. It
hands a call to an ``eqx.filter_pmap`` built with the same options only where
Equinox's own behaviour is the answer: keyword arguments and inputs Equinox
rejects before tracing (so its errors stay its own), unhashable non-array
leaves, and nothing mapped. Once the function has been traced here, an error
(the function's own, or Equinox's check of ``out_axes``) is raised here, once:
the function is never traced again by Equinox. Each hand-over is counted, per
wrapper (``stats``, ``fallback_reasons``) and in total (:func:`fallback_counts`).
"""

from __future__ import annotations

import collections
import functools
import inspect
import types
import warnings
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax.tree_util as jtu
import numpy as np

from ._partition import ARRAY, ARRAY_TYPES, LOWER_TYPES, Counted, Fallback, Lowered, lookup, split
from ._pmap_entry import Entry, build_entry, resolve_axes, run_compiled, tracing

_sentinel = object()
_FALLBACKS: collections.Counter[str] = collections.Counter()
# compiled paths by function (weakly, as Equinox's compile cache), then by (options, call key)
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, Entry]] = weakref.WeakKeyDictionary()


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_pmap`` in this process handed to ``eqx.filter_pmap``, by reason."""
    return dict(_FALLBACKS)


class CachedFilterPmap(Counted):
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
        super().__init__(_FALLBACKS)
        functools.update_wrapper(self, fun, updated=())
        self._fun = fun
        self._in_axes = in_axes
        self._out_axes = out_axes
        self._axis_name = axis_name
        self._axis_size = axis_size
        self._donate = "all" if donate == "arrays" else donate
        self._pmapkwargs = pmapkwargs
        # A function (or a Module without arrays) is constant: only its arrays need passing.
        self._fun_arrays = any(isinstance(leaf, ARRAY_TYPES) for leaf in jtu.tree_leaves(fun))
        self._dummy = (
            None if axis_size is None else np.broadcast_to(0, axis_size)
        )  # JAX issue #9252, as Equinox
        self._flattens_fun = self._fun_arrays or self._dummy is not None  # flatten (fun, args, dummy)
        self._named: dict[int, tuple] = {}
        self._cache, self._options, self._fun_ref = _shared_cache(
            fun, (in_axes, out_axes, axis_name, axis_size, self._donate, pmapkwargs)
        )

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        if instance is None:
            return self
        return eqx.Partial(self, instance)

    # ------------------------------------------------------------ the call

    def _fall_back(self, reason: str, args: tuple, kwargs: dict, lower: bool = False) -> Any:
        self.count_fallback(reason)
        return (self._fallback.lower if lower else self._fallback)(*args, **kwargs)

    def _split(self, args: tuple, types: tuple[type, ...] = ARRAY_TYPES) -> tuple[Hashable, list, list, Any]:
        tree = (self._fun, args, self._dummy) if self._flattens_fun else args
        return split(tree, types)

    def _lookup(self, args: tuple, types: tuple[type, ...] = ARRAY_TYPES) -> tuple[Hashable, Entry, list]:
        """(key, entry, array leaves) of one call; builds the entry on a miss."""
        call_key, dynamic, static, treedef = self._split(args, types)
        key = (self._options, call_key)
        entry = lookup(self._cache, key)
        if entry is not None:
            self.stats["hits"] += 1
            return key, entry, dynamic
        entry = build_entry(self, treedef, static, self._dynamic_axes(args, static, dynamic, types), dynamic)
        self._cache[key] = entry
        self.stats["misses"] += 1
        return key, entry, dynamic

    def _guarded(
        self, args: tuple, kwargs: dict, lower: bool, run: Callable[[Hashable, Entry, list], Any]
    ) -> Any:
        """``run(key, entry, arrays)`` of this call; Equinox takes over only when the call fails
        before the function was traced here (so it is traced once, and Equinox's errors stay its own)."""
        if kwargs:
            return self._fall_back("keyword arguments", args, kwargs, lower)
        key: Hashable = None
        entry: Entry | None = None
        outer, tracing.traced = getattr(tracing, "traced", False), False
        try:
            key, entry, dynamic = self._lookup(args, LOWER_TYPES if lower else ARRAY_TYPES)
            return run(key, entry, dynamic)
        except Fallback as reason:
            return self._fall_back(str(reason), args, kwargs, lower)
        except Exception:
            traced_before = entry is not None and entry.outputs.treedef is not None
            if entry is not None and not traced_before:
                self._cache.pop(key, None)  # never traced to the end: build it again next time
            if tracing.traced or traced_before:
                raise
            return self._fall_back("error before tracing", args, kwargs, lower)
        finally:
            tracing.traced = outer or tracing.traced

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self._guarded(args, kwargs, False, lambda key, entry, dynamic: self._run(entry, dynamic))

    def _run(self, entry: Entry, dynamic: list) -> Any:
        if self._donate == "all":
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                out = entry.pmapped(tuple(dynamic))
        else:
            out = entry.pmapped(tuple(dynamic))
        return entry.outputs.rebuild(out)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """Ahead-of-time: ``.lower(*args)`` then ``.compile()``, as ``eqx.filter_pmap(...).lower``;
        array arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""

        def lowered(key: Hashable, entry: Entry, dynamic: list) -> Lowered:
            return Lowered(entry.pmapped.lower(tuple(dynamic)), key, self._key_of, run_compiled(entry))

        return self._guarded(args, kwargs, True, lowered)

    def _key_of(self, args: tuple, kwargs: dict) -> tuple[Hashable, list]:
        if kwargs:
            raise RuntimeError("keyword arguments cannot be used with functions wrapped with `filter_pmap`")
        call_key, dynamic, _, _ = self._split(args)
        return (self._options, call_key), dynamic

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
                raise Fallback("in_axes names no argument")  # Equinox's ValueError
            named = tuple(self._in_axes.get(name, eqx.if_array(0)) for name in names)
            self._named[len(args)] = named
        return named

    def _dynamic_axes(
        self, args: tuple, static: list, dynamic: list, types: tuple[type, ...]
    ) -> list[int | None]:
        """One resolved axis (int or None) per array leaf of the flattened call, in order:
        fun's arrays broadcast (None), then the arguments', then the axis_size dummy (0)."""
        try:
            arg_axes = resolve_axes(self._prefix(args), args, types)
        except (ValueError, TypeError) as err:
            raise Fallback("in_axes does not fit the arguments") from err
        n_fun = len(static) - len(arg_axes) - (self._dummy is not None)
        axes = [None] * n_fun + arg_axes + ([0] if self._dummy is not None else [])
        for axis, slot in zip(axes, static):
            if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
                raise Fallback("in_axes resolves to neither an int nor None")
            if axis is not None and slot is not ARRAY:
                raise Fallback("a non-array argument is mapped")
        dynamic_axes = [axis for axis, slot in zip(axes, static) if slot is ARRAY]
        if all(axis is None for axis in dynamic_axes):
            raise Fallback("nothing mapped")
        sizes = set()
        for axis, leaf in zip(dynamic_axes, dynamic):
            if axis is not None:
                if not -len(leaf.shape) <= axis < len(leaf.shape):
                    raise Fallback("a mapped axis is out of range")  # Equinox's (vmap's) error
                sizes.add(leaf.shape[axis])
        if len(sizes) > 1 or (self._axis_size is not None and sizes != {self._axis_size}):
            raise Fallback("mapped axes of different sizes")  # Equinox's (vmap's) error
        return dynamic_axes


def _shared_cache(fun: Callable, options: Any) -> tuple[dict[Hashable, Entry], Hashable, Callable[[], Any]]:
    """(entries, options key, fun getter): entries shared by every wrapper of ``fun`` with these
    options (a function weakly, by itself; another callable by type and static part), so that
    wrapping a function again traces nothing again, as with Equinox; a wrapper of its own
    when an option or the function's static part is unhashable."""
    leaves, treedef = jtu.tree_flatten(options)
    key: Hashable = (tuple(leaves), treedef)
    ref: Callable[[], Any]
    if type(fun) is types.FunctionType:
        ref = weakref.ref(fun)
        owner: Any = fun
    else:
        key, ref, owner = (key, split(fun)[0][:3]), (lambda: fun), type(fun)
    try:
        hash(key)
    except TypeError:
        return {}, None, lambda: fun
    return _SHARED.setdefault(owner, {}), key, ref


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
