"""``cached_filter_jit``: a drop-in for ``eqx.filter_jit`` that partitions once per input
structure and never waits for its call. The contract is in :func:`cached_filter_jit`'s
docstring (``help(jaxperf.cached_filter_jit)``); the compiled paths behind it are in
:mod:`._jit_paths`, the cache key in :mod:`._partition`."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax.tree_util as jtu

from .. import private_api
from ._jit_paths import FALLBACKS, JitPaths, fun_combine, fun_partition
from ._partition import Fallback, shared, totals

private_api.jax_traceback_exclusion(__file__)
_sentinel = object()
# Equinox's own, bound at import: a program that patches eqx.filter_jit = cached_filter_jit
# still falls back to Equinox's, not to itself.
_EQX_FILTER_JIT: Any = eqx.filter_jit


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_jit`` in this process handed to ``eqx.filter_jit``, by reason."""
    return totals(FALLBACKS)


def _names(fun: Any) -> str:
    """The qualified name Equinox shows in a wrapper's repr (through partials and wrappers)."""
    while True:
        if hasattr(fun, "__wrapped__"):
            fun = fun.__wrapped__
        elif isinstance(fun, functools.partial):
            fun = fun.func
        else:
            break
    return getattr(fun, "__qualname__", type(fun).__qualname__)


class CachedFilterJit(eqx.Module):
    """What :func:`cached_filter_jit` returns: a Module with the fields of Equinox's
    ``_JitWrapper`` (the function's arrays are its leaves; the rest, and the compiled paths
    shared by every equal wrapper, are static)."""

    fn: str  # for the repr, as Equinox's
    _signature: inspect.Signature = eqx.field(static=True, repr=False)
    _dynamic_fun: Any = eqx.field(repr=False)
    _static_fun: Any = eqx.field(static=True, repr=False)
    _cached: JitPaths = eqx.field(static=True, repr=False)
    filter_warning: bool = eqx.field(static=True)
    donate_first: bool = eqx.field(static=True)
    donate_rest: bool = eqx.field(static=True)

    @property
    def __wrapped__(self) -> Any:
        return fun_combine(self._dynamic_fun, self._static_fun)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        __equinox_jit_id__ = os.urandom(16)  # eqx.error_if cuts the stack it records at this frame
        paths = self._cached
        try:
            if paths.unhashable:
                raise Fallback("unhashable non-array leaf in the function")
            return paths.call(self._dynamic_fun, args, kwargs, __equinox_jit_id__)
        except eqx.EquinoxRuntimeError as err:
            err.__traceback__ = None  # as Equinox: no frames of the wrapper in the report
            raise
        except Fallback as reason:
            paths.count_fallback(str(reason))
            return self._equinox()(*args, **kwargs)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """``.lower(*args)`` then ``.compile()``, as ``eqx.filter_jit(...).lower``; array
        arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""
        paths = self._cached
        try:
            if paths.unhashable:
                raise Fallback("unhashable non-array leaf in the function")
            return paths.lower(self._dynamic_fun, args, kwargs)
        except Fallback as reason:
            paths.count_fallback(str(reason))
            return self._equinox().lower(*args, **kwargs)

    def wait(self) -> None:
        """Block until every computation launched by this wrapper (and equal ones) whose first
        output is still alive has finished; a failed ``eqx.error_if`` among them raises
        ``EquinoxRuntimeError`` with Equinox's message."""
        self._cached.wait()

    @property
    def stats(self) -> dict[str, int]:
        """Hits, misses and hand-overs to Equinox of the compiled paths this wrapper shares."""
        return self._cached.stats()

    @property
    def fallback_reasons(self) -> dict[str, int]:
        return dict(self._cached.fallback_reasons())

    def _equinox(self) -> Any:
        paths = self._cached
        return _EQX_FILTER_JIT(self.__wrapped__, donate=paths.donate, **paths.jitkwargs)

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        if instance is None:
            return self
        return eqx.Partial(self, instance)


def _paths(fun: Callable, rest: tuple, donate: str, jitkwargs: dict[str, Any]) -> JitPaths:
    leaves, treedef = jtu.tree_flatten(jitkwargs)
    options = ("jit", donate, tuple(leaves), treedef)
    return shared(fun, options, rest, lambda unhashable: JitPaths(fun, rest, donate, jitkwargs, unhashable))


def cached_filter_jit(
    fun: Callable = _sentinel,  # type: ignore[assignment]
    *,
    donate: str = "none",
    **jitkwargs: Any,
) -> Any:
    """``eqx.filter_jit``, with the same signature, results and errors, that partitions its
    inputs once per input structure and never waits for the computation it launches.

    Use it as ``eqx.filter_jit``: as a decorator with or without arguments, on functions and
    on methods of an ``eqx.Module``; arrays are traced and everything else is static::

        import equinox as eqx, jax, jaxperf

        model = eqx.nn.Linear(4, 1, key=jax.random.key(0))

        @jaxperf.cached_filter_jit(donate="all-except-first")  # the batch is not donated
        def step(x, model):
            return jax.vmap(model)(x).mean(), model

        value, model = step(jax.numpy.ones((8, 4)), model)

    When it helps: ``eqx.filter_jit`` spends host CPU on every call in proportion to the
    array leaves of its arguments (it partitions them and combines the outputs each time),
    then waits for the computation. This wrapper does that partition once per input
    structure (a hit then costs a flatten, a tuple of the arrays' types and one lookup beside
    ``jax.jit``'s own call) and returns without waiting, so the host can run ahead of the
    device. That matters when Equinox's per-call host time, which grows with the leaves
    (notebook 01 measures it per leaf on your machine), is a visible part of a step's device
    time: many leaves, short steps.

    Same as Equinox: the options (``donate`` with Equinox's meanings and warning filters,
    ``**jitkwargs`` for ``jax.jit``, Equinox's errors for bad ones), arguments bound to the
    function's signature, non-array outputs returned as they are, donated buffers,
    ``.lower(...).compile()``, and the wrapper itself: an ``eqx.Module`` with the fields of
    Equinox's ``_JitWrapper``, so a wrapped Module's arrays are its leaves (``eqx.filter_grad``,
    ``jax.tree.map``, ``copy.deepcopy`` see them) and wrappers of one function with equal
    arrays compare and hash equal (a freshly wrapped function passed as a static argument does
    not retrace). Equal wrappers share their compiled paths, as Equinox's share theirs.

    Where it differs, on purpose:

    - Errors of an ``eqx.error_if`` that fails: ``EquinoxRuntimeError`` with Equinox's message
      at the call whenever the runtime reports the failure before the call returns (on XLA:CPU,
      always: a program holding a host callback, as every ``error_if`` does, runs before its call
      returns). On an asynchronous backend (GPU, TPU), at the next call of an equal wrapper that
      finds the failed computation finished (checked without waiting), or at ``.wait()``, as long
      as the failed call's first output is still alive (the wrapper keeps only a weak reference
      to it); reading any output on the host raises JAX's ``JaxRuntimeError`` with the check's
      message. Equinox waits for every call instead, so it raises at the call.
    - Non-array arguments that are equal in Python but differ in type (``1``, ``1.0``, ``True``)
      or sign (``0.0``, ``-0.0``) get a trace each, as a traced function can tell them apart;
      Equinox reuses the first one's trace and returns its outputs.
    - ``.lower`` also takes ``jax.ShapeDtypeStruct`` as abstract arrays (as ``jax.jit`` does);
      where the function cannot trace that way, or the compiled form is called with the same
      ``ShapeDtypeStruct`` again, it is a static argument, as in Equinox.
    - It traces no more often than Equinox and never calls Equinox unless Equinox's answer is
      the point (an unhashable non-array leaf: Equinox's error); ``stats`` and
      ``fallback_reasons`` count that, :func:`fallback_counts` in total.

    Checked on jax 0.6.0 to 0.12.0.1 and Equinox 0.13.3 to 0.13.8
    (``jaxperf.private_api.CHECKED``): it reads Equinox's ``error_if`` record to give Equinox's
    message, and refuses to import, naming the hook, on versions outside that range.
    """
    if fun is _sentinel:
        return functools.partial(cached_filter_jit, donate=donate, **jitkwargs)
    _EQX_FILTER_JIT(fun, donate=donate, **jitkwargs)  # Equinox validates the options: its errors
    arrays, rest = fun_partition(fun)
    wrapper = CachedFilterJit(
        fn=_names(fun),
        _signature=inspect.signature(fun),
        _dynamic_fun=arrays,
        _static_fun=rest,
        _cached=_paths(fun, rest, donate, jitkwargs),
        filter_warning=donate in ("all", "all-except-first"),
        donate_first=donate in ("all", "warn"),
        donate_rest=donate != "none",
    )
    return eqx.module_update_wrapper(wrapper)
