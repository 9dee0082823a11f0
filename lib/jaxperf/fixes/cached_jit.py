"""``cached_filter_jit``: a drop-in for ``eqx.filter_jit`` that never waits for its call.

Since Equinox 0.11.8, ``eqx.filter_jit`` returns a marker array from every compiled call
and blocks on it before returning, so that a failed ``eqx.error_if`` raises inside the
call: every call then waits for its computation, and the host never runs ahead of the
device. This wrapper launches the computation and returns at once, as ``jax.jit`` does,
and partitions its inputs once per input structure (the key in :mod:`._partition`,
shared with ``cached_filter_pmap``).

Same signature, results and errors as ``eqx.filter_jit``: ``donate`` (``"all"``,
``"all-except-first"``, ``"warn"``, ``"warn-except-first"``, ``"none"``, with Equinox's
meaning and warning filters), ``**jitkwargs`` passed to ``jax.jit``, arguments bound to
the function's signature (keyword arguments included), arrays traced and everything else
static, non-array outputs returned as they are, methods bound through the instance, and
``.lower(...).compile()`` (array arguments may also be ``jax.ShapeDtypeStruct``). Compiled
paths are shared by every wrapper of the same function and options, as Equinox shares
them, so re-wrapping a function does not trace it again.

Where it differs on purpose: non-array arguments equal in Python but of other types (``1``,
``1.0``, ``True``) get their own trace, as ``jax.jit``'s static arguments do; Equinox
reuses the first one's trace and returns its outputs (``f(x, True)`` after ``f(x, 1)``
returns what ``f(x, 1)`` returned).

When a failed ``eqx.error_if`` raises ``EquinoxRuntimeError`` (Equinox's message, word for
word): at the call itself whenever the runtime reports the failure before the call returns,
which on XLA:CPU is always (XLA:CPU runs a program that holds a host callback, as every
``error_if`` does, before its call returns); otherwise (an asynchronous backend) at the
first later call of this wrapper that finds a failed computation finished (checked without
waiting), or at :meth:`CachedFilterJit.wait`. Reading an output on the host first raises
JAX's ``JaxRuntimeError``, whose message carries the check's message.
"""

from __future__ import annotations

import collections
import functools
import inspect
import logging
import os
import types
import warnings
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu

from .. import private_api
from ._partition import (
    ARRAY,
    ARRAY_TYPES,
    LOWER_TYPES,
    Counted,
    Fallback,
    Lowered,
    Outputs,
    lookup,
    merge,
    split,
)

private_api.jax_traceback_exclusion(__file__)
# the Equinox hooks a failed eqx.error_if reads: refused here, by name, if missing
private_api.check_core_hook(private_api.EQUINOX_JIT_ERROR)
_sentinel = object()
_FALLBACKS: collections.Counter[str] = collections.Counter()
_JaxRuntimeError = jax.errors.JaxRuntimeError
_callback_logger = logging.getLogger("jax._src.callback")
# compiled paths by function (weakly, as Equinox's compile cache), then by (options, call key)
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, _Entry]] = weakref.WeakKeyDictionary()


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_jit`` in this process handed to ``eqx.filter_jit``, by reason."""
    return dict(_FALLBACKS)


class _Entry:
    """The ``jax.jit`` for one cache key: called ``(kept, donated)``, the first ``kept`` array
    leaves not donated; returns the array outputs."""

    __slots__ = ("jitted", "outputs", "kept")

    def __init__(self) -> None:
        self.jitted: Any = None
        self.outputs = Outputs()
        self.kept = 0


def _equinox_error(err: Exception, jit_id: bytes) -> Exception | None:
    """Equinox's ``EquinoxRuntimeError`` for a runtime error that a failed ``eqx.error_if`` caused."""
    if "_EquinoxRuntimeError: " not in str(err):
        return None
    message = private_api.equinox_jit_error_message(jit_id)
    return None if message is None else eqx.EquinoxRuntimeError(message)


def _weak_fun(fun: Callable) -> Callable[[list], Any]:
    ref = weakref.ref(fun)
    return lambda leaves: ref()


class CachedFilterJit(Counted):
    """The wrapper ``cached_filter_jit`` returns. ``stats`` counts hits, misses and fallbacks."""

    def __init__(self, fun: Callable, *, donate: str, **jitkwargs: Any):
        # Equinox validates the options (same errors), and is the fallback.
        filter_jit: Any = eqx.filter_jit
        self._fallback = filter_jit(fun, donate=donate, **jitkwargs)
        super().__init__(_FALLBACKS)
        functools.update_wrapper(self, fun, updated=())
        self._signature = inspect.signature(fun)
        self._donate_first = donate in ("all", "warn")
        self._donate_rest = donate != "none"
        self._filter_warning = donate in ("all", "all-except-first")
        self._jitkwargs = jitkwargs
        jit_leaves, jit_treedef = jtu.tree_flatten(jitkwargs)
        options = (donate, tuple(jit_leaves), jit_treedef)
        self._unhashable = False
        # the function's arrays are traced (and donated with the rest), as Equinox's
        fun_key, self._fun_dynamic, self._fun_static, self._fun_treedef = split(fun)
        fun_key = fun_key[:3]  # without the trace context: the call's key has it
        try:
            hash(fun_key)
        except TypeError:
            self._unhashable = True
        self._fun_key: Hashable
        if type(fun) is types.FunctionType:  # shared by function, weakly (the entries hold no strong ref)
            self._cache, self._fun_key = _SHARED.setdefault(fun, {}), options
            self._fun_ref: Callable[[list], Any] = _weak_fun(fun)
        else:  # shared by type, the function's static part in the key (as Equinox shares them)
            self._cache, self._fun_key = _SHARED.setdefault(type(fun), {}), (options, fun_key)
            treedef, static = self._fun_treedef, self._fun_static
            self._fun_ref = lambda leaves: merge(treedef, static, leaves)
        self._pending: collections.deque[Any] = collections.deque()  # an output per call in flight
        self._log_filter = private_api.equinox_callback_log_filter()

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        if instance is None:
            return self
        return eqx.Partial(self, instance)

    # ------------------------------------------------------------ the call

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        __equinox_jit_id__ = os.urandom(16)  # eqx.error_if cuts the stack it records at this frame
        try:
            if self._pending:
                self._check_pending(__equinox_jit_id__)
            return self._call(args, kwargs, __equinox_jit_id__)
        except eqx.EquinoxRuntimeError as err:
            err.__traceback__ = None  # as Equinox: no frames of the wrapper in the report
            raise

    def _lookup(self, args: tuple, kwargs: dict, types: tuple[type, ...]) -> tuple[Hashable, _Entry, list]:
        """(key, entry, array leaves incl. the function's) of a bound call; builds it on a miss."""
        call_key, dynamic, static, treedef = split((args, kwargs), types)
        key = (self._fun_key, call_key)
        entry = lookup(self._cache, key)
        if entry is None:
            self._signature.bind(*args, **kwargs)  # a bad call: Equinox's TypeError, from the same bind
            entry = self._cache[key] = self._build(args, treedef, static, len(dynamic))
            self.stats["misses"] += 1
        else:
            self.stats["hits"] += 1
        return key, entry, dynamic + self._fun_dynamic

    def _bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if not kwargs:
            return args, kwargs  # binding positional arguments changes nothing (a bad call misses)
        bound = self._signature.bind(*args, **kwargs)
        return bound.args, bound.kwargs

    def _call(self, args: tuple, kwargs: dict, jit_id: bytes) -> Any:
        args, kwargs = self._bind(args, kwargs)
        if self._unhashable:
            self.count_fallback("unhashable non-array leaf in the function")
            return self._fallback(*args, **kwargs)
        try:
            key, entry, dynamic = self._lookup(args, kwargs, ARRAY_TYPES)
        except Fallback as reason:
            self.count_fallback(str(reason))
            return self._fallback(*args, **kwargs)
        kept = entry.kept
        _callback_logger.addFilter(self._log_filter)
        try:
            if self._filter_warning:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                    out = entry.jitted(tuple(dynamic[:kept]), tuple(dynamic[kept:]))
            else:
                out = entry.jitted(tuple(dynamic[:kept]), tuple(dynamic[kept:]))
        except (_JaxRuntimeError, ValueError) as err:
            if entry.outputs.treedef is None:
                self._cache.pop(key, None)  # never traced to the end: build it again next time
            translated = _equinox_error(err, jit_id)
            if translated is not None:
                raise translated from None
            raise
        except BaseException:
            if entry.outputs.treedef is None:
                self._cache.pop(key, None)
            raise
        finally:
            _callback_logger.removeFilter(self._log_filter)
        if out and not isinstance(out[0], jax.core.Tracer):
            # An execution's outputs are ready (or failed) together: one of them tells for all,
            # and no marker output costs the call anything (Equinox returns one and waits on it).
            self._pending.append(out[0])
        return entry.outputs.rebuild(out)

    def _check_pending(self, jit_id: bytes) -> None:
        """Raise the failure of an earlier call whose computation has finished; never waits."""
        pending = self._pending
        try:
            while pending:
                if pending[0].is_deleted():  # donated by the caller: its error went to what it fed
                    pending.popleft()
                elif not pending[0].is_ready():
                    break
                else:
                    pending.popleft().block_until_ready()  # finished: returns at once, or raises
        except (_JaxRuntimeError, ValueError) as err:
            pending.clear()
            translated = _equinox_error(err, jit_id)
            if translated is not None:
                raise translated from None
            if hasattr(err, "add_note"):  # Python 3.11+
                name = self.__dict__.get("__name__", "the function")
                err.add_note(f"(from an earlier call of {name}, whose computation failed after it returned)")
            raise

    def wait(self) -> None:
        """Block until every computation this wrapper launched has finished; a failed
        ``eqx.error_if`` among them raises ``EquinoxRuntimeError`` with Equinox's message."""
        __equinox_jit_id__ = b""
        try:
            while self._pending:
                if not self._pending[0].is_deleted():
                    self._pending[0].block_until_ready()
                self._pending.popleft()
        except (_JaxRuntimeError, ValueError) as err:
            self._pending.clear()
            translated = _equinox_error(err, __equinox_jit_id__)
            if translated is not None:
                raise translated from None
            raise

    def _build(self, args: tuple, treedef: Any, static: list, n_call: int) -> _Entry:
        """The ``jax.jit`` for one bound call structure (``treedef`` with ``static`` leaves)."""
        entry = _Entry()
        first = len(jtu.tree_leaves(args[0])) if args else 0
        n_first = sum(1 for s in static[:first] if s is ARRAY)
        n_all = n_call + len(self._fun_dynamic)
        entry.kept = n_all if not self._donate_rest else (0 if self._donate_first else n_first)
        fun_ref = self._fun_ref

        def inner(kept: tuple, donated: tuple) -> tuple:
            leaves = kept + donated
            call_args, call_kwargs = merge(treedef, static, leaves[:n_call])
            out = fun_ref(list(leaves[n_call:]))(*call_args, **call_kwargs)
            return entry.outputs.record(out)

        name = self.__dict__.get("__name__", type(getattr(self, "__wrapped__", None)).__name__)
        inner.__name__ = name
        inner.__qualname__ = self.__dict__.get("__qualname__", name)
        donate = (1,) if self._donate_rest else ()
        entry.jitted = jax.jit(inner, donate_argnums=donate, **self._jitkwargs)
        return entry

    # ------------------------------------------------------------ ahead of time

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """``.lower(*args)`` then ``.compile()``, as ``eqx.filter_jit(...).lower``; array
        arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""
        args, kwargs = self._bind(args, kwargs)
        if self._unhashable:
            self.count_fallback("unhashable non-array leaf in the function")
            return self._fallback.lower(*args, **kwargs)
        try:
            key, entry, dynamic = self._lookup(args, kwargs, LOWER_TYPES)
        except Fallback as reason:
            self.count_fallback(str(reason))
            return self._fallback.lower(*args, **kwargs)
        kept = entry.kept
        lowered = entry.jitted.lower(tuple(dynamic[:kept]), tuple(dynamic[kept:]))

        def run(compiled: Any, leaves: list) -> Any:
            return entry.outputs.rebuild(compiled(tuple(leaves[:kept]), tuple(leaves[kept:])))

        return Lowered(lowered, key, self._key_of, run)

    def _key_of(self, args: tuple, kwargs: dict) -> tuple[Hashable, list]:
        args, kwargs = self._bind(args, kwargs)
        call_key, dynamic, _, _ = split((args, kwargs))
        return (self._fun_key, call_key), dynamic + self._fun_dynamic


def cached_filter_jit(
    fun: Callable = _sentinel,  # type: ignore[assignment]
    *,
    donate: str = "none",
    **jitkwargs: Any,
) -> Any:
    """Drop-in for ``eqx.filter_jit`` (same signature, results and errors) that caches the
    partition of its inputs per input structure and never blocks a call. Usable as a
    decorator with or without arguments, on functions and on methods of an ``eqx.Module``."""
    if fun is _sentinel:
        return functools.partial(cached_filter_jit, donate=donate, **jitkwargs)
    return CachedFilterJit(fun, donate=donate, **jitkwargs)
