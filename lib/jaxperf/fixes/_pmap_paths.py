"""The compiled paths of :func:`~jaxperf.fixes.cached_pmap.cached_filter_pmap`: the key and
axes of a call, one ``jax.pmap`` per key (:mod:`._pmap_entry`), and when Equinox takes over.
One :class:`PmapPaths` is shared by every equal wrapper (see :func:`._partition.shared`); it
holds the wrapped function weakly (a Python function) or not at all (any other callable,
which comes with each call as a pytree: its arrays are never kept here).
"""

from __future__ import annotations

import collections
import inspect
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np

from ._partition import ARRAY, ARRAY_TYPES, LOWER_TYPES, Fallback, Lowered, Paths, split
from ._pmap_entry import Entry, build_entry, resolve_axes, run_compiled, tracing

#: calls every cached_filter_pmap in this process handed to eqx.filter_pmap, by reason
FALLBACKS: collections.Counter[str] = collections.Counter()


def _axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int) or callable(x)


class PmapPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(self, fun: Callable, options: dict[str, Any], unhashable: bool) -> None:
        super().__init__(FALLBACKS, unhashable)
        self.equinox_options = options  # as given, for a hand-over to eqx.filter_pmap
        self.in_axes, self.out_axes = options["in_axes"], options["out_axes"]
        self.axis_name, self.axis_size = options["axis_name"], options["axis_size"]
        self.donate = "all" if options["donate"] == "arrays" else options["donate"]
        self.pmapkwargs = {k: v for k, v in options.items() if k not in _OWN}
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self.qualname = getattr(fun, "__qualname__", self.name)
        self.is_function = type(fun) is types.FunctionType
        self.fun_ref: Callable[[], Any] = weakref.ref(fun) if self.is_function else (lambda: None)
        # parameter names, for in_axes given by name (as Equinox reads them, then)
        self.params = list(inspect.signature(fun).parameters) if isinstance(self.in_axes, dict) else []
        self.dummy = None if self.axis_size is None else np.broadcast_to(0, self.axis_size)  # JAX #9252
        specs = jtu.tree_leaves(self.in_axes, is_leaf=_axis_leaf)
        # a callable other than eqx.if_array may read leaf values: resolve it on every call
        self.value_axes = any(callable(a) and not isinstance(a, eqx.if_array) for a in specs)

    # ------------------------------------------------------------ the call

    def guarded(self, fun: Any, args: tuple, kwargs: dict, lower: bool) -> Any:
        """This call's outputs (or its Lowered); :class:`Fallback` when Equinox must answer:
        keyword arguments, inputs it rejects before tracing (so its errors stay its own).
        Once the function has been traced here an error is the function's, raised once."""
        if kwargs:
            raise Fallback("keyword arguments")
        if self.is_function and fun is not self.fun_ref():
            raise Fallback("the wrapped function was replaced in the wrapper's pytree")
        entry: Entry | None = None
        outer, tracing.traced = getattr(tracing, "traced", False), False
        try:
            key, entry, dynamic, tree = self._lookup(fun, args, LOWER_TYPES if lower else ARRAY_TYPES)
            return self._lowered(key, entry, dynamic, tree) if lower else self._run(entry, dynamic)
        except Fallback:
            raise
        except Exception as err:
            with self.lock:
                traced_before = entry is not None and entry.traced
            if tracing.traced or traced_before:
                raise
            raise Fallback("error before tracing") from err
        finally:
            tracing.traced = outer or tracing.traced

    def _tree(self, fun: Any, args: tuple) -> tuple:
        return (None if self.is_function else fun, args, self.dummy)

    def _lookup(self, fun: Any, args: tuple, kinds: tuple[type, ...]) -> tuple:
        """(key, entry, array leaves, tree) of one call; builds the entry on a miss."""
        tree = self._tree(fun, args)
        key, dynamic, static, treedef = split(tree, kinds)
        value_axes = self._arg_axes(args, kinds) if self.value_axes else None
        if value_axes is not None:
            key = (key, tuple(value_axes))
        entry = self.get(key)
        if entry is None:
            axes = self._dynamic_axes(args, static, dynamic, kinds, value_axes)
            entry = self.put(key, build_entry(self, treedef, static, axes, dynamic))
        return key, entry, dynamic, tree

    def _run(self, entry: Entry, dynamic: list) -> Any:
        if self.donate == "all":
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                out, rec = entry.pmapped(tuple(dynamic))
        else:
            out, rec = entry.pmapped(tuple(dynamic))
        return rec.rebuild(out)

    def _lowered(self, key: Any, entry: Entry, dynamic: list, tree: tuple) -> Lowered:
        fun, args = (self.fun_ref() if tree[0] is None else tree[0]), tree[1]
        abstract = any(isinstance(x, jax.ShapeDtypeStruct) for x in dynamic)
        return Lowered(
            entry.pmapped.lower(tuple(dynamic)),
            key,
            dynamic,
            lambda a, k: self._key_of(fun, a, k),
            run_compiled,
            (lambda: self.lower_static(fun, args)) if abstract else None,
            self._key_of(fun, args, {})[0] if abstract else None,
        )

    def lower_static(self, fun: Any, args: tuple) -> Lowered:
        """``.lower`` with any ``jax.ShapeDtypeStruct`` argument static, as Equinox reads it."""
        key, entry, dynamic, tree = self._lookup(fun, args, ARRAY_TYPES)
        key_of = lambda a, k: self._key_of(fun, a, k)  # noqa: E731
        return Lowered(entry.pmapped.lower(tuple(dynamic)), key, dynamic, key_of, run_compiled)

    def _key_of(self, fun: Any, args: tuple, kwargs: dict) -> tuple[Any, list]:
        if kwargs:
            raise RuntimeError("keyword arguments cannot be used with functions wrapped with `filter_pmap`")
        key, dynamic, _, _ = split(self._tree(fun, args))
        if self.value_axes:
            key = (key, tuple(self._arg_axes(args, ARRAY_TYPES)))
        return key, dynamic

    # ------------------------------------------------------------ axes

    def _prefix(self, args: tuple) -> Any:
        """``in_axes`` as a prefix of ``args``: a dict names parameters (others ``if_array(0)``)."""
        if not isinstance(self.in_axes, dict):
            return self.in_axes
        names = [name for _, name in zip(args, self.params)]
        if set(self.in_axes) - set(names):
            raise Fallback("in_axes names no argument")  # Equinox's ValueError
        return tuple(self.in_axes.get(name, eqx.if_array(0)) for name in names)

    def _arg_axes(self, args: tuple, kinds: tuple[type, ...]) -> list[Any]:
        try:
            return resolve_axes(self._prefix(args), args, kinds)
        except (ValueError, TypeError) as err:
            raise Fallback("in_axes does not fit the arguments") from err

    def _dynamic_axes(
        self, args: tuple, static: list, dynamic: list, kinds: tuple[type, ...], arg_axes: list | None
    ) -> list[int | None]:
        """One resolved axis (int or None) per array leaf of the flattened call, in order:
        fun's arrays broadcast (None), then the arguments', then the axis_size dummy (0)."""
        if arg_axes is None:
            arg_axes = self._arg_axes(args, kinds)
        n_fun = len(static) - len(arg_axes) - (self.dummy is not None)
        axes = [None] * n_fun + arg_axes + ([0] if self.dummy is not None else [])
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
        if len(sizes) > 1 or (self.axis_size is not None and sizes != {self.axis_size}):
            raise Fallback("mapped axes of different sizes")  # Equinox's (vmap's) error
        return dynamic_axes


#: the options PmapPaths passes to jax.pmap itself (the rest are jax.pmap's keywords)
_OWN = ("in_axes", "out_axes", "axis_name", "axis_size", "donate")
