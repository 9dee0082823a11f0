"""``cached_filter_pmap``: a drop-in for ``eqx.filter_pmap`` that partitions its inputs once per
input structure (equinox#192): one ``jax.pmap`` per input structure, with ``out_axes`` resolved
as Equinox resolves them. The key, the record and the shared paths are :mod:`._cached`'s.
"""

from __future__ import annotations

import collections
import functools
import inspect
import threading
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np

from .. import private_api
from ._cached import (
    ARRAY,
    ARRAY_TYPES,
    LOWER_TYPES,
    Entry,
    Fallback,
    Lowered,
    Paths,
    Wrapper,
    _sentinel,
    fun_partition,
    marked,
    merge,
    quick,
    record,
    shared,
    split,
    totals,
)

# out of JAX's filtered tracebacks and eqx.error_if's recorded stack (see ._cached)
private_api.jax_traceback_exclusion(__file__)

_broadcast_prefix = private_api.jax_broadcast_prefix()
#: what ``eqx.filter_pmap`` sizes ``out_axes`` by: arrays and Python scalars
_ARRAY_LIKE = (*ARRAY_TYPES, bool, int, float, complex)
# Equinox's messages, word for word (equinox/_vmap_pmap.py)
_SPEC_ERROR = "`in_axes` and `out_axes` must consist of None, ints, and callables only."
_RANGE_ERROR = "integers in filter_pmap(..., out_axes=...) must correspond to a dimension of the output array"
_KIND_ERROR = "filter_pmap(..., out_axes=...) must contain only integers and Nones"


#: set per thread once a trace reaches the function: from then on an error is raised, never handed over
tracing = threading.local()
#: what :meth:`PmapPaths.hit` returns when the call is not a hit
MISS = object()
_field = object.__getattribute__


def _is_axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int) or callable(x)


def resolve_axes(spec: Any, tree: Any, array_types: tuple[type, ...] = ARRAY_TYPES) -> list[Any]:
    """One axis per leaf of ``tree`` from a prefix ``spec`` of None / ints / callables, as Equinox
    resolves ``in_axes`` (``eqx.if_array(k)``: ``k`` for a leaf of ``array_types``)."""
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
    """One value when every leaf shares it, else a tuple (multi-process pmap rejects lists)."""
    return axes[0] if axes and len(set(axes)) == 1 else tuple(axes)


def build_entry(paths: PmapPaths, treedef: Any, static: list, axes: list, dynamic: list) -> Entry:
    """The ``jax.pmap`` of one input structure: ``treedef`` over ``(fun or None, args, dummy)``
    with ``static`` leaves, ``axes`` one per array leaf (a Python function: ``paths.fun_ref``)."""
    entry = Entry(quiet=paths.donate == "all")
    # The entry may outlive every wrapper: its closures hold the options, never a wrapper or the function.
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
    out_axes: Any
    if isinstance(spec, eqx.if_array):
        out_axes = spec.axis
    elif spec is None or isinstance(spec, int):
        out_axes = None if spec is None else int(spec)
    else:  # resolve the out_axes pytree against the output, traced once under vmap (as Equinox does)
        resolved: list[Any] = []

        def probe(*dynamic_leaves: Any) -> tuple:
            leaves, per_leaf, mapped = classify(call(dynamic_leaves))
            resolved[:] = [a for a, m in zip(per_leaf, mapped) if m]
            return tuple(x for x in leaves if isinstance(x, _ARRAY_LIKE))

        structs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in dynamic)
        vmapped = jax.vmap(probe, in_axes=in_axes, axis_name=axis_name, axis_size=axis_size)
        jax.eval_shape(vmapped, *structs)
        out_axes = _one_or_tuple(resolved) if resolved else 0

    def inner(*dynamic_leaves: Any) -> tuple:
        out = call(dynamic_leaves)
        result = record(out, classify(out)[2])
        with lock:
            entry.traced = True
        return result

    inner.__name__, inner.__qualname__ = paths.name, paths.qualname
    entry.fn = jax.pmap(
        inner,
        in_axes=in_axes,
        out_axes=(out_axes, 0),  # the record has no leaves: any axis
        axis_name=axis_name,
        axis_size=axis_size,
        donate_argnums=tuple(range(len(dynamic))) if paths.donate != "none" else (),
        **paths.pmapkwargs,
    )
    return entry


#: calls every cached_filter_pmap in this process handed to eqx.filter_pmap, by reason
PMAP_FALLBACKS: collections.Counter[str] = collections.Counter()


class PmapPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(self, fun: Callable, options: dict[str, Any], unhashable: bool) -> None:
        super().__init__(fun, PMAP_FALLBACKS, unhashable)
        self.equinox_options = options  # as given, for a hand-over to eqx.filter_pmap
        self.in_axes, self.out_axes = options["in_axes"], options["out_axes"]
        self.axis_name, self.axis_size = options["axis_name"], options["axis_size"]
        self.donate = "all" if options["donate"] == "arrays" else options["donate"]
        self.pmapkwargs = {k: v for k, v in options.items() if k not in _OWN}
        # parameter names, for in_axes given by name (as Equinox reads them, then)
        self.params = list(inspect.signature(fun).parameters) if isinstance(self.in_axes, dict) else []
        self.dummy = None if self.axis_size is None else np.broadcast_to(0, self.axis_size)  # JAX #9252
        specs = jtu.tree_leaves(self.in_axes, is_leaf=_is_axis_leaf)
        # a callable other than eqx.if_array may read leaf values: resolve it on every call
        self.value_axes = any(callable(a) and not isinstance(a, eqx.if_array) for a in specs)

    def hit(self, fun: Any, args: tuple) -> Any:
        """The outputs of a cached, traced call (one flatten, one lookup), or :data:`MISS`."""
        if self.unhashable or self.value_axes or (self.is_function and fun is not self.fun_ref()):
            return MISS
        tree = self._tree(fun, args)
        fast, dynamic = quick((tree[0], *args, tree[2]))
        entry = self.entries.get(fast) if fast else None  # a dict's get and set need no lock
        if entry is None:
            key, dynamic, _ = split(tree, at=1)
            try:
                entry = self.entries.get(key)
            except TypeError:  # an unhashable leaf: guarded hands it to Equinox
                return MISS
            if fast and entry is not None:
                self.entries[fast] = entry
        if entry is None or not entry.traced:
            return MISS
        next(self.hits)
        return entry.run(dynamic)

    def guarded(self, fun: Any, args: tuple, kwargs: dict, lower: bool) -> Any:
        """This call's outputs (or Lowered); :class:`Fallback` where Equinox must answer (keywords,
        inputs it rejects before tracing); once traced here, an error is the function's."""
        if kwargs:
            raise Fallback("keyword arguments")
        if self.is_function and fun is not self.fun_ref():
            raise Fallback("the wrapped function was replaced in the wrapper's pytree")
        entry: Entry | None = None
        outer, tracing.traced = getattr(tracing, "traced", False), False
        try:
            key, entry, dynamic, tree = self._lookup(fun, args, LOWER_TYPES if lower else ARRAY_TYPES)
            return self._lowered(key, entry, dynamic, tree) if lower else entry.run(dynamic)
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
        key, dynamic, parts = split(tree, kinds, at=1)
        value_axes = self._arg_axes(args, kinds) if self.value_axes else None
        if value_axes is not None:
            key = (key, tuple(value_axes))
        entry = self.get(key)
        if entry is None:
            static = marked(parts)
            axes = self._dynamic_axes(args, static, dynamic, kinds, value_axes)
            entry = self.put(key, build_entry(self, jtu.tree_structure(tree), static, axes, dynamic))
        if value_axes is None and kinds is ARRAY_TYPES and (fast := quick((tree[0], *args, tree[2]))[0]):
            self.entries[fast] = entry
        return key, entry, dynamic, tree

    def _lowered(self, key: Any, entry: Entry, dynamic: list, tree: tuple) -> Lowered:
        fun, args = (self.fun_ref() if tree[0] is None else tree[0]), tree[1]
        abstract = any(isinstance(x, jax.ShapeDtypeStruct) for x in dynamic)
        relower = (lambda: self._lowered(*self._lookup(fun, args, ARRAY_TYPES))) if abstract else None
        return Lowered(
            entry.fn.lower(*dynamic), key, dynamic, lambda a, k: self._key_of(fun, a, k), relower, (args, {})
        )

    def _key_of(self, fun: Any, args: tuple, kwargs: dict) -> tuple[Any, list]:
        if kwargs:
            raise RuntimeError("keyword arguments cannot be used with functions wrapped with `filter_pmap`")
        key, dynamic, _ = split(self._tree(fun, args), at=1)
        if self.value_axes:
            key = (key, tuple(self._arg_axes(args, ARRAY_TYPES)))
        return key, dynamic

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


# Equinox's own, bound at import (a program may patch eqx.filter_pmap = cached_filter_pmap)
_EQX_FILTER_PMAP: Any = eqx.filter_pmap


def pmap_fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_pmap`` in this process handed to ``eqx.filter_pmap``, by reason."""
    return totals(PMAP_FALLBACKS)


class CachedFilterPmap(Wrapper):
    """What :func:`cached_filter_pmap` returns: a Module with the fields of Equinox's
    ``_PmapWrapper``, and the compiled paths shared by every equal wrapper, static."""

    _fun: Callable
    _in_axes: Any
    _out_axes: Any
    _axis_name: Hashable | None
    _axis_size: int | None
    _filter_warning: bool
    _pmapkwargs: dict[str, Any]
    _cached: PmapPaths = eqx.field(static=True, repr=False)

    @property
    def __wrapped__(self) -> Any:
        return self._fun

    def _call(self, lower: bool, args: tuple, kwargs: dict) -> Any:
        try:  # fields read past Module.__getattribute__, on the hot path
            return _field(self, "_cached").guarded(_field(self, "_fun"), args, kwargs, lower)
        except Fallback as reason:
            return self._fallback(reason, lower, args, kwargs)

    def _equinox(self) -> Any:
        return _EQX_FILTER_PMAP(self._fun, **self._cached.equinox_options)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            out = _field(self, "_cached").hit(_field(self, "_fun"), args)
            if out is not MISS:
                return out
        # through the class: a Module's bound method is a new Module on every access
        return CachedFilterPmap._call(self, False, args, kwargs)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """``.lower(*args).compile()``, as Equinox's; arrays may also be ``jax.ShapeDtypeStruct``."""
        return CachedFilterPmap._call(self, True, args, kwargs)


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
    """``eqx.filter_pmap``, with the same signature, results and errors, that partitions its
    inputs once per input structure instead of on every call (equinox#192).

    Use it as ``eqx.filter_pmap``: as a decorator with or without arguments, on functions and
    on methods of an ``eqx.Module``; arrays are mapped over ``in_axes`` (default: axis 0 of
    every array), everything else is broadcast and static::

        import equinox as eqx, jax, jaxperf

        model = eqx.nn.Linear(4, 1, key=jax.random.key(0))

        @jaxperf.cached_filter_pmap(in_axes=(None, 0), axis_name="devices")  # model broadcast
        def loss(model, x):
            return jax.lax.pmean(jax.vmap(model)(x).mean(), "devices")

        value = loss(model, jax.numpy.ones((jax.local_device_count(), 8, 4)))

    When it helps: ``eqx.filter_pmap`` redoes per call, in host CPU per array leaf, work that
    only changes with the input structure; this wrapper caches it (a hit: a flatten, a lookup,
    a ``jax.pmap`` call). It matters when that host time (notebook 01) exceeds the device's.

    Same as Equinox: every option, ``.lower(...).compile()``, Equinox's errors, and the
    wrapper: an ``eqx.Module`` with the fields of Equinox's ``_PmapWrapper`` (equal wrappers
    compare and hash equal and share their compiled paths).

    Where it differs, on purpose:

    - It traces once per input structure (Equinox traces twice: an ``eval_shape`` probe, then
      ``jax.pmap``); an ``out_axes`` pytree other than a single axis costs one probe, as there.
    - Non-array arguments that are equal in Python but differ in type (``1``, ``1.0``,
      ``True``) or sign get a trace each; Equinox reuses the first one's.
    - ``.lower`` also takes ``jax.ShapeDtypeStruct`` as abstract arrays (as ``jax.jit`` does).
    - Equinox answers (counted in ``stats``, ``fallback_reasons`` and
      :func:`pmap_fallback_counts`) keyword arguments, inputs it rejects before tracing,
      unhashable non-array leaves, nothing mapped.

    Checked on jax 0.6.0 to 0.12.0.1 and Equinox 0.13.3 to 0.13.8
    (``jaxperf.private_api.CHECKED``); it refuses to import, naming the private hook, on
    versions outside that range.
    """
    options = dict(
        in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size, donate=donate
    )
    if fun is _sentinel:
        return functools.partial(cached_filter_pmap, **options, **pmapkwargs)
    _EQX_FILTER_PMAP(fun, **options, **pmapkwargs)  # Equinox validates the options: its errors
    donating = donate != "none"
    wrapper = CachedFilterPmap(
        _fun=fun,
        _in_axes=in_axes,
        _out_axes=out_axes,
        _axis_name=axis_name,
        _axis_size=axis_size,
        _filter_warning=donate in ("all", "arrays"),  # Equinox's fields, as Equinox sets them
        _pmapkwargs={**pmapkwargs, "donate_argnums": (0,)} if donating else dict(pmapkwargs),
        _cached=shared(
            fun,
            {"kind": "pmap", **options, **pmapkwargs},
            fun_partition(fun)[1],  # another callable's non-array part: which paths it shares
            lambda unhashable: PmapPaths(fun, {**options, **pmapkwargs}, unhashable),
        ),
    )
    return eqx.module_update_wrapper(wrapper)
