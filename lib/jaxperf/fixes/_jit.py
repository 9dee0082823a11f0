"""``cached_filter_jit``: a drop-in for ``eqx.filter_jit`` that partitions its inputs once per input
structure (equinox#192) and never waits for its call (Equinox blocks on every call since 0.11.8,
to raise a failed ``eqx.error_if``; this raises it at the next call or wait), on :mod:`._cached`.
"""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import logging
import weakref
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu

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
    fun_combine,
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

# the Equinox hooks a failed eqx.error_if reads: refused here, by name, if missing
private_api.check_core_hook(private_api.EQUINOX_JIT_ERROR)
_JaxRuntimeError = jax.errors.JaxRuntimeError
#: ids of the running calls: while any runs, Equinox's filter drops JAX's pure_callback failure log
_RUNNING: set[bytes] = set()
_EQUINOX_FILTER = private_api.equinox_callback_log_filter()


class _WhileRunning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _RUNNING or bool(_EQUINOX_FILTER.filter(record))


logging.getLogger("jax._src.callback").addFilter(_WhileRunning())
_Tracer = jax.core.Tracer
_IDS = itertools.count()  # each call's id, unique in the process (Equinox's: os.urandom(16))
_field = object.__getattribute__
#: calls every cached_filter_jit in this process handed to eqx.filter_jit, by reason
JIT_FALLBACKS: collections.Counter[str] = collections.Counter()


def _raise_equinox_error(err: Exception, jit_id: bytes) -> None:
    """Raise Equinox's ``EquinoxRuntimeError`` for a runtime error a failed ``eqx.error_if`` caused."""
    message = private_api.equinox_jit_error_message(jit_id) if "_EquinoxRuntimeError: " in str(err) else None
    if message is not None:
        raise eqx.EquinoxRuntimeError(message) from None


class JitPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(
        self, fun: Callable, rest: tuple, donate: str, jitkwargs: dict[str, Any], unhashable: bool
    ) -> None:
        super().__init__(fun, JIT_FALLBACKS, unhashable)
        self.donate, self.jitkwargs = donate, jitkwargs
        self.signature = inspect.signature(fun)
        self.fun_of: Callable[[tuple], Any]
        if self.is_function:
            fun_ref = self.fun_ref
            self.fun_of = lambda arrays: fun_ref()
        else:  # its non-array part only: its arrays come with each call
            self.fun_of = lambda arrays: fun_combine(arrays, rest)
        # weak references to first outputs whose computation may still fail (nothing kept alive)
        self.pending: collections.deque[weakref.ref] = collections.deque()
        self.last: Callable[[], Any] = lambda: None  # the last output on XLA:CPU, weakly
        self.shapes: list[tuple] = []  # (treedef, lists) of each output part split() can remember

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        bound = self.signature.bind(*args, **kwargs)
        return bound.args, bound.kwargs

    def lookup(self, arrays: tuple, args: tuple, kwargs: dict, kinds: tuple = ARRAY_TYPES) -> tuple:
        """(key, entry, array leaves) of a bound call (``kinds``: arrays); a miss builds the entry."""
        key, dynamic, parts = split((args, kwargs, arrays), kinds, shapes=self.shapes)
        entry = self.get(key)
        if entry is None:
            self.signature.bind(*args, **kwargs)  # a bad call: Equinox's TypeError, from the same bind
            treedef = jtu.tree_structure((args, kwargs, arrays))
            entry = self.put(key, self._build(args, treedef, marked(parts), len(dynamic)))
        return key, entry, dynamic

    def call(self, arrays: tuple, args: tuple, kwargs: dict, jit_id: bytes) -> Any:
        if self.pending:
            self._check_finished(jit_id)
        if kwargs:  # binding positional arguments changes nothing (a bad call misses)
            args, kwargs = self.bind(args, kwargs)
        fast, dynamic = quick((*args, kwargs, arrays))
        entry = self.entries.get(fast) if fast else None  # a dict's get and set need no lock
        if entry is None:
            _, entry, dynamic = self.lookup(arrays, args, kwargs)
            if fast:
                self.entries[fast] = entry
        else:
            next(self.hits)
        _RUNNING.add(jit_id)  # a set's add and discard need no lock
        try:
            out, rec = entry.fn(*dynamic) if entry.ready else entry.first(dynamic)
        except (_JaxRuntimeError, ValueError) as err:
            _raise_equinox_error(err, jit_id)
            raise
        finally:
            _RUNNING.discard(jit_id)
        if out and not isinstance(out[0], _Tracer):
            # An execution's outputs are ready (or failed) together: one tells for all. XLA:CPU fails a
            # check in the call, and a call without eqx.error_if none later: the last output tells wait().
            if entry.asynchronous is None:
                on_device = any(device.platform != "cpu" for device in out[0].devices())
                entry.asynchronous = on_device and private_api.equinox_error_checks(entry.fn, dynamic)
                self.shapes += [(k[5], k[6]) for k in rec.known if all(k[5] != d for d, _ in self.shapes)]
            if entry.asynchronous:
                self.pending.append(weakref.ref(out[0]))  # a deque's append needs no lock
            else:
                self.last = weakref.ref(out[0])
        return rec.rebuild(out)

    def _check_finished(self, jit_id: bytes) -> None:
        """Raise the failure of an earlier call whose computation has finished; never waits."""
        done = []
        with self.lock:
            while self.pending:
                out = self.pending[0]()
                if out is not None and not out.is_deleted():  # else dropped or donated: it failed what it fed
                    if not out.is_ready():
                        break
                    done.append(out)
                self.pending.popleft()
        for out in done:
            self._raise_failure(out, jit_id, earlier=True)

    def _raise_failure(self, out: Any, jit_id: bytes, earlier: bool) -> None:
        try:
            out.block_until_ready()  # finished (or asked to wait): returns, or raises its failure
        except (_JaxRuntimeError, ValueError) as err:
            with self.lock:
                self.pending.clear()
            _raise_equinox_error(err, jit_id)
            if earlier:
                err.add_note(
                    f"(from an earlier call of {self.name}, whose computation failed after it returned)"
                )
            raise

    def wait(self) -> None:
        """Block until every computation still referenced has finished; raise a failure."""
        last = self.last()
        if last is not None and not last.is_deleted():
            self._raise_failure(last, b"", earlier=False)
        while True:
            with self.lock:
                if not self.pending:
                    return
                out = self.pending.popleft()()
            if out is not None and not out.is_deleted():
                self._raise_failure(out, b"", earlier=False)

    def _build(self, args: tuple, treedef: Any, static: list, n_dynamic: int) -> Entry:
        """The ``jax.jit`` of one bound call structure; it holds the options, never this object or fun."""
        first = len(jtu.tree_leaves(args[0])) if args else 0
        n_first = sum(1 for s in static[:first] if s is ARRAY)
        kept = n_dynamic if self.donate == "none" else (0 if self.donate in ("all", "warn") else n_first)
        entry = Entry(kept, quiet=self.donate in ("all", "all-except-first"))
        fun_of = self.fun_of

        def inner(*leaves: Any) -> tuple:
            call_args, call_kwargs, arrays = merge(treedef, static, leaves)
            return record(fun_of(arrays)(*call_args, **call_kwargs))

        inner.__name__, inner.__qualname__ = self.name, self.qualname
        entry.fn = jax.jit(inner, donate_argnums=tuple(range(entry.kept, n_dynamic)), **self.jitkwargs)
        return entry

    def lower(self, arrays: tuple, args: tuple, kwargs: dict, static: bool = False) -> Lowered:
        """``.lower(*args).compile()``, as Equinox's; arrays may also be ``jax.ShapeDtypeStruct``."""
        args, kwargs = self.bind(args, kwargs)
        key, entry, dynamic = self.lookup(arrays, args, kwargs, ARRAY_TYPES if static else LOWER_TYPES)
        abstract = any(isinstance(x, jax.ShapeDtypeStruct) for x in dynamic)
        relower = (lambda: self.lower(arrays, args, kwargs, static=True)) if abstract else None
        try:
            lowered = entry.fn.lower(*dynamic)
        except Exception as err:
            if relower is None:
                raise
            try:  # Equinox's reading, then its error
                return relower()
            except Exception as static_err:
                raise static_err from err
        return Lowered(
            lowered, key, dynamic, lambda a, k: self._key_of(arrays, a, k), relower, (args, kwargs)
        )

    def _key_of(self, arrays: tuple, args: tuple, kwargs: dict) -> tuple[tuple, list]:
        args, kwargs = self.bind(args, kwargs)
        key, dynamic, _ = split((args, kwargs, arrays))
        return key, dynamic


# Equinox's own, bound at import (a program may patch eqx.filter_jit = cached_filter_jit)
_EQX_FILTER_JIT: Any = eqx.filter_jit


def jit_fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_jit`` in this process handed to ``eqx.filter_jit``, by reason."""
    return totals(JIT_FALLBACKS)


def _names(fun: Any) -> str:
    """The qualified name Equinox shows in a wrapper's repr (through partials and wrappers)."""
    while hasattr(fun, "__wrapped__") or isinstance(fun, functools.partial):
        fun = fun.__wrapped__ if hasattr(fun, "__wrapped__") else fun.func
    return getattr(fun, "__qualname__", type(fun).__qualname__)


class CachedFilterJit(Wrapper):
    """What :func:`cached_filter_jit` returns: a Module with the fields of Equinox's
    ``_JitWrapper`` (the function's arrays its leaves; the rest and the shared paths static)."""

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
        __equinox_jit_id__ = next(_IDS).to_bytes(16)  # eqx.error_if cuts the stack it records here
        paths = _field(self, "_cached")  # a field: no Module.__getattribute__ on the hot path
        try:
            return paths.call(_field(self, "_dynamic_fun"), args, kwargs, __equinox_jit_id__)
        except eqx.EquinoxRuntimeError as err:
            err.__traceback__ = None  # as Equinox: no frames of the wrapper in the report
            raise
        except Fallback as reason:
            return self._fallback(reason, False, args, kwargs)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """``.lower(*args).compile()``, as Equinox's; arrays may also be ``jax.ShapeDtypeStruct``."""
        paths = self._cached
        try:
            return paths.lower(self._dynamic_fun, args, kwargs)
        except Fallback as reason:
            return self._fallback(reason, True, args, kwargs)

    def wait(self) -> None:
        """Block until every computation of this wrapper (and equal ones) whose first output is
        alive has finished; a failed ``eqx.error_if`` raises Equinox's ``EquinoxRuntimeError``."""
        self._cached.wait()

    def _equinox(self) -> Any:
        paths = self._cached
        return _EQX_FILTER_JIT(self.__wrapped__, donate=paths.donate, **paths.jitkwargs)


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

    When it helps: ``eqx.filter_jit`` spends host CPU per array leaf on every call, then
    waits; this wrapper partitions once per input structure and returns without waiting, so
    the host runs ahead of the device (notebook 01 measures it for many leaves, short steps).

    Same as Equinox: the options, their errors, bound arguments, outputs, donation,
    ``.lower(...).compile()``, and the wrapper: an ``eqx.Module`` with the fields of Equinox's
    ``_JitWrapper`` (equal wrappers compare and hash equal and share their compiled paths).

    Where it differs, on purpose:

    - A failed ``eqx.error_if`` raises ``EquinoxRuntimeError`` with Equinox's message at the
      call on XLA:CPU; on GPU or TPU at the next call that finds it finished, or at ``.wait()``
      (while the call's first output is alive). Equinox waits for every call instead.
    - Non-array arguments that are equal in Python but differ in type (``1``, ``1.0``, ``True``)
      or sign (``0.0``, ``-0.0``) get a trace each; Equinox reuses the first one's.
    - ``.lower`` also takes ``jax.ShapeDtypeStruct`` as abstract arrays (as ``jax.jit`` does),
      else as static arguments, as in Equinox.
    - Equinox answers an unhashable non-array leaf (its error), counted in ``stats``,
      ``fallback_reasons`` and :func:`jit_fallback_counts`.

    Checked on jax 0.6.0 to 0.12.0.1 and Equinox 0.13.3 to 0.13.8
    (``jaxperf.private_api.CHECKED``): it reads Equinox's ``error_if`` record, and refuses to
    import, naming the hook, on versions outside that range.
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
        _cached=shared(
            fun,
            {"kind": "jit", "donate": donate, **jitkwargs},
            rest,
            lambda unhashable: JitPaths(fun, rest, donate, jitkwargs, unhashable),
        ),
        filter_warning=donate in ("all", "all-except-first"),
        donate_first=donate in ("all", "warn"),
        donate_rest=donate != "none",
    )
    return eqx.module_update_wrapper(wrapper)
