"""The compiled paths of :func:`~jaxperf.fixes.cached_jit.cached_filter_jit`: one ``jax.jit``
per call key, the calls whose computations may still fail (checked without waiting), and
the ahead-of-time forms. One :class:`JitPaths` is shared by every equal wrapper (see
:func:`._partition.shared`); it holds the wrapped function weakly (a Python function) or
only its non-array part (any other callable), never its arrays nor any output.
"""

from __future__ import annotations

import collections
import inspect
import logging
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu

from .. import private_api
from ._partition import ARRAY, ARRAY_TYPES, LOWER_TYPES, Lowered, Paths, merge, record, split

private_api.jax_traceback_exclusion(__file__)
# the Equinox hooks a failed eqx.error_if reads: refused here, by name, if missing
private_api.check_core_hook(private_api.EQUINOX_JIT_ERROR)
_JaxRuntimeError = jax.errors.JaxRuntimeError
_callback_logger = logging.getLogger("jax._src.callback")
#: calls every cached_filter_jit in this process handed to eqx.filter_jit, by reason
FALLBACKS: collections.Counter[str] = collections.Counter()


def fun_partition(fun: Any) -> tuple[tuple, tuple]:
    """(arrays, rest) of ``fun`` as ``eqx.filter_jit`` keeps them: a tuple with each array
    leaf (None elsewhere), and (a tuple with each other leaf (None elsewhere), treedef)."""
    leaves, treedef = jtu.tree_flatten(fun)
    arrays = tuple(x if isinstance(x, ARRAY_TYPES) else None for x in leaves)
    return arrays, (tuple(None if a is not None else x for a, x in zip(arrays, leaves)), treedef)


def fun_combine(arrays: tuple, rest: tuple) -> Any:
    leaves, treedef = rest
    return treedef.unflatten([a if s is None else s for a, s in zip(arrays, leaves)])


def _equinox_error(err: Exception, jit_id: bytes) -> Exception | None:
    """Equinox's ``EquinoxRuntimeError`` for a runtime error that a failed ``eqx.error_if`` caused."""
    if "_EquinoxRuntimeError: " not in str(err):
        return None
    message = private_api.equinox_jit_error_message(jit_id)
    return None if message is None else eqx.EquinoxRuntimeError(message)


class Entry:
    """The ``jax.jit`` for one cache key: called ``(kept, donated)``, the first ``kept``
    array leaves not donated; returns ``(array outputs, Record)``."""

    __slots__ = ("jitted", "kept")

    def __init__(self, jitted: Any, kept: int) -> None:
        self.jitted, self.kept = jitted, kept


class JitPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(
        self, fun: Callable, rest: tuple, donate: str, jitkwargs: dict[str, Any], unhashable: bool
    ) -> None:
        super().__init__(FALLBACKS, unhashable)
        self.donate, self.jitkwargs = donate, jitkwargs
        self.donate_first = donate in ("all", "warn")
        self.donate_rest = donate != "none"
        self.filter_warning = donate in ("all", "all-except-first")
        self.signature = inspect.signature(fun)
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self.qualname = getattr(fun, "__qualname__", self.name)
        self.fun_of: Callable[[tuple], Any]
        if type(fun) is types.FunctionType:  # weakly: the shared paths die with the function
            ref = weakref.ref(fun)
            self.fun_of = lambda arrays: ref()
        else:  # its non-array part only: its arrays come with each call
            self.fun_of = lambda arrays: fun_combine(arrays, rest)
        # a weak reference to the first output of each call whose computation may still
        # fail: never an output itself, so nothing a caller dropped is kept alive
        self.pending: collections.deque[weakref.ref] = collections.deque()

    # ------------------------------------------------------------ the call

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if not kwargs:
            return args, kwargs  # binding positional arguments changes nothing (a bad call misses)
        bound = self.signature.bind(*args, **kwargs)
        return bound.args, bound.kwargs

    def lookup(self, arrays: tuple, args: tuple, kwargs: dict, kinds: tuple = ARRAY_TYPES) -> tuple:
        """(key, entry, array leaves) of a bound call (``kinds``: what counts as an array);
        builds the entry on a miss."""
        key, dynamic, static, treedef = split((args, kwargs, arrays), kinds)
        entry = self.get(key)
        if entry is None:
            self.signature.bind(*args, **kwargs)  # a bad call: Equinox's TypeError, from the same bind
            entry = self.put(key, self._build(args, treedef, static, len(dynamic)))
        return key, entry, dynamic

    def call(self, arrays: tuple, args: tuple, kwargs: dict, jit_id: bytes) -> Any:
        self._check_finished(jit_id)
        args, kwargs = self.bind(args, kwargs)
        _, entry, dynamic = self.lookup(arrays, args, kwargs)
        kept = entry.kept
        log_filter = private_api.equinox_callback_log_filter()  # one per call, as Equinox's
        _callback_logger.addFilter(log_filter)
        try:
            if self.filter_warning:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                    out, rec = entry.jitted(tuple(dynamic[:kept]), tuple(dynamic[kept:]))
            else:
                out, rec = entry.jitted(tuple(dynamic[:kept]), tuple(dynamic[kept:]))
        except (_JaxRuntimeError, ValueError) as err:
            translated = _equinox_error(err, jit_id)
            if translated is not None:
                raise translated from None
            raise
        finally:
            _callback_logger.removeFilter(log_filter)
        if out and not isinstance(out[0], jax.core.Tracer):
            # An execution's outputs are ready (or failed) together: one of them tells for all,
            # and no marker output costs the call anything (Equinox returns one and waits on it).
            first = weakref.ref(out[0])
            with self.lock:
                self.pending.append(first)
        return rec.rebuild(out)

    def _finished(self) -> list[Any]:
        """The outputs of earlier calls whose computations have finished (under the lock)."""
        done = []
        pending = self.pending
        while pending:
            out = pending[0]()
            if out is None or out.is_deleted():  # dropped or donated: its error went to what it fed
                pending.popleft()
            elif not out.is_ready():
                break
            else:
                done.append(pending.popleft()())
        return done

    def _check_finished(self, jit_id: bytes) -> None:
        """Raise the failure of an earlier call whose computation has finished; never waits."""
        with self.lock:
            done = self._finished() if self.pending else []
        for out in done:
            self._raise_failure(out, jit_id, earlier=True)

    def _raise_failure(self, out: Any, jit_id: bytes, earlier: bool) -> None:
        try:
            out.block_until_ready()  # finished (or asked to wait): returns, or raises its failure
        except (_JaxRuntimeError, ValueError) as err:
            with self.lock:
                self.pending.clear()
            translated = _equinox_error(err, jit_id)
            if translated is not None:
                raise translated from None
            if earlier:
                err.add_note(
                    f"(from an earlier call of {self.name}, whose computation failed after it returned)"
                )
            raise

    def wait(self) -> None:
        """Block until every computation still referenced has finished; raise a failure."""
        while True:
            with self.lock:
                if not self.pending:
                    return
                out = self.pending.popleft()()
            if out is not None and not out.is_deleted():
                self._raise_failure(out, b"", earlier=False)

    def _build(self, args: tuple, treedef: Any, static: list, n_dynamic: int) -> Entry:
        """The ``jax.jit`` for one bound call structure (``treedef`` with ``static`` leaves);
        it holds this object's options, never this object (nor the function)."""
        first = len(jtu.tree_leaves(args[0])) if args else 0
        n_first = sum(1 for s in static[:first] if s is ARRAY)
        kept = n_dynamic if not self.donate_rest else (0 if self.donate_first else n_first)
        fun_of = self.fun_of

        def inner(kept: tuple, donated: tuple) -> tuple:
            call_args, call_kwargs, arrays = merge(treedef, static, kept + donated)
            return record(fun_of(arrays)(*call_args, **call_kwargs))

        inner.__name__, inner.__qualname__ = self.name, self.qualname
        donate = (1,) if self.donate_rest else ()
        return Entry(jax.jit(inner, donate_argnums=donate, **self.jitkwargs), kept)

    # ------------------------------------------------------------ ahead of time

    def lower(self, arrays: tuple, args: tuple, kwargs: dict) -> Lowered:
        """``.lower(*args)``; a ``jax.ShapeDtypeStruct`` argument is an abstract array, unless
        that cannot trace (then it is static, as Equinox reads it) or the compiled form is
        called with it again (then that form is lowered with it static)."""
        args, kwargs = self.bind(args, kwargs)
        key, entry, dynamic = self.lookup(arrays, args, kwargs, LOWER_TYPES)
        abstract = any(isinstance(x, jax.ShapeDtypeStruct) for x in dynamic)
        if abstract:
            try:
                lowered = entry.jitted.lower(tuple(dynamic[: entry.kept]), tuple(dynamic[entry.kept :]))
            except Exception as err:  # noqa: BLE001 -- Equinox's reading, then its error
                try:
                    return self.lower_static(arrays, args, kwargs)
                except Exception as static_err:
                    raise static_err from err
        else:
            lowered = entry.jitted.lower(tuple(dynamic[: entry.kept]), tuple(dynamic[entry.kept :]))

        return Lowered(
            lowered,
            key,
            dynamic,
            lambda a, k: self._key_of(arrays, a, k),
            self._runner(entry.kept),
            (lambda: self.lower_static(arrays, args, kwargs)) if abstract else None,
            split((args, kwargs, arrays))[0] if abstract else None,
        )

    def lower_static(self, arrays: tuple, args: tuple, kwargs: dict) -> Lowered:
        key, entry, dynamic = self.lookup(arrays, args, kwargs)
        lowered = entry.jitted.lower(tuple(dynamic[: entry.kept]), tuple(dynamic[entry.kept :]))
        return Lowered(
            lowered, key, dynamic, lambda a, k: self._key_of(arrays, a, k), self._runner(entry.kept)
        )

    def _key_of(self, arrays: tuple, args: tuple, kwargs: dict) -> tuple[tuple, list]:
        args, kwargs = self.bind(args, kwargs)
        key, dynamic, _, _ = split((args, kwargs, arrays))
        return key, dynamic

    @staticmethod
    def _runner(kept: int) -> Callable[[Any, list], Any]:
        def run(compiled: Any, leaves: list) -> Any:
            out, rec = compiled(tuple(leaves[:kept]), tuple(leaves[kept:]))
            return rec.rebuild(out)

        return run
