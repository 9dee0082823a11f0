"""``cached_filter_pmap``: a drop-in for ``eqx.filter_pmap`` that partitions once per input
structure (equinox#192). The contract is in :func:`cached_filter_pmap`'s docstring
(``help(jaxperf.cached_filter_pmap)``); the compiled paths behind it are in
:mod:`._pmap_paths` and :mod:`._pmap_entry`, the cache key in :mod:`._partition`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax.tree_util as jtu

from ._jit_paths import fun_partition
from ._partition import Fallback, shared, totals
from ._pmap_paths import FALLBACKS, PmapPaths

_sentinel = object()
# Equinox's own, bound at import: a program that patches eqx.filter_pmap = cached_filter_pmap
# still falls back to Equinox's, not to itself.
_EQX_FILTER_PMAP: Any = eqx.filter_pmap


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_pmap`` in this process handed to ``eqx.filter_pmap``, by reason."""
    return totals(FALLBACKS)


class CachedFilterPmap(eqx.Module):
    """What :func:`cached_filter_pmap` returns: a Module with the fields of Equinox's
    ``_PmapWrapper`` (the function and the options are its fields, as there), and the
    compiled paths shared by every equal wrapper, static."""

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
        paths = self._cached
        try:
            if paths.unhashable:
                raise Fallback("unhashable non-array leaf in the function")
            return paths.guarded(self._fun, args, kwargs, lower)
        except Fallback as reason:
            paths.count_fallback(str(reason))
            fallback = _EQX_FILTER_PMAP(self._fun, **paths.equinox_options)
            return (fallback.lower if lower else fallback)(*args, **kwargs)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self._call(False, args, kwargs)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """Ahead-of-time: ``.lower(*args)`` then ``.compile()``, as ``eqx.filter_pmap(...).lower``;
        array arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""
        return self._call(True, args, kwargs)

    @property
    def stats(self) -> dict[str, int]:
        """Hits, misses and hand-overs to Equinox of the compiled paths this wrapper shares."""
        return self._cached.stats()

    @property
    def fallback_reasons(self) -> dict[str, int]:
        return dict(self._cached.fallback_reasons())

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        if instance is None:
            return self
        return eqx.Partial(self, instance)


def _paths(fun: Callable, options: dict[str, Any]) -> PmapPaths:
    leaves, treedef = jtu.tree_flatten(options)
    rest = fun_partition(fun)[1]  # another callable's non-array part: which paths it shares
    return shared(fun, ("pmap", tuple(leaves), treedef), rest, lambda u: PmapPaths(fun, options, u))


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

    When it helps: ``eqx.filter_pmap`` redoes, on every call, work whose answer only changes
    with the structure of the inputs: resolving ``in_axes``, partitioning the function and
    arguments into arrays and the rest, a ``ShapeDtypeStruct`` per array leaf, hashing all of
    it to find its compiled function, and combining the outputs. That costs host CPU in
    proportion to the array leaves (model and optimiser state together), on every call. This
    wrapper keys a cache on what that work depends on (:mod:`jaxperf.fixes._partition`) and,
    on a hit, costs one flatten, one lookup and one ``jax.pmap`` call, about ``jax.pmap`` on
    the arrays. It matters when that per-call host time (notebook 01 measures it per leaf on
    your machine) exceeds a step's device time: then it, not the device, sets the it/s.

    Same as Equinox: ``in_axes`` as a prefix of the arguments or a dict by parameter name,
    any ``out_axes`` pytree (outputs classified by the axis it resolves to, as Equinox does),
    ``axis_name``, ``axis_size``, ``donate``, ``**pmapkwargs`` for ``jax.pmap``,
    ``.lower(...).compile()``, Equinox's errors, and the wrapper itself: an ``eqx.Module``
    with the fields of Equinox's ``_PmapWrapper``, so a wrapped Module's arrays are its leaves
    (``eqx.filter_grad``, ``jax.tree.map``, ``copy.deepcopy`` see them) and equal wrappers
    compare and hash equal. Equal wrappers share their compiled paths; a Python function's
    die with it, and a wrapped Module's arrays are never kept.

    Where it differs, on purpose:

    - It traces once per input structure (Equinox traces twice: an ``eval_shape`` probe, then
      ``jax.pmap``); an ``out_axes`` pytree other than a single axis costs one probe, as there.
    - Non-array arguments that are equal in Python but differ in type (``1``, ``1.0``,
      ``True``) or sign (``0.0``, ``-0.0``) get a trace each; Equinox reuses the first one's.
    - ``.lower`` also takes ``jax.ShapeDtypeStruct`` as abstract arrays (as ``jax.jit`` does).
    - Equinox itself answers (counted in ``stats``, ``fallback_reasons`` and
      :func:`fallback_counts`) where its answer is the point: keyword arguments, inputs it
      rejects before tracing, unhashable non-array leaves, nothing mapped.

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
        _cached=_paths(fun, {**options, **pmapkwargs}),
    )
    return eqx.module_update_wrapper(wrapper)
