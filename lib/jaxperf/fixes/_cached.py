"""``cached_filter_jit`` and ``cached_filter_pmap``: drop-ins for ``eqx.filter_jit`` and
``eqx.filter_pmap`` that partition their inputs once per input structure (equinox#192), and
the machinery they share.

A call's key holds everything a traced function can observe of its inputs: the input
treedef; the non-array leaves with their types (``1``, ``1.0`` and ``True`` are equal in
Python but trace differently) and, for floats, their sign (``-0.0 == 0.0``); each array's
type as tracing sees it, which is its aval (``jax.typeof``: shape, dtype, weak type,
sharding with its mesh axis types, memory space, varying manual axes, layout, whatever a JAX
version adds); and JAX's trace context (x64, default device, abstract mesh, ...).

What a trace records (the output structure and its non-array leaves) is a :class:`Record`
that travels in the compiled function's own output tree: whenever JAX traces (for this key
or any other reason), the record comes back with the compiled code it belongs to, so an
output is never rebuilt from another trace's record.

One :class:`JitPaths` or :class:`PmapPaths` (the compiled paths of one function and options)
is shared by every equal wrapper (:func:`shared`); it holds the wrapped function weakly (a
Python function) or only its non-array part (any other callable), never its arrays nor any
output. Equinox answers a call itself (counted) only where its answer is the point.
"""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import logging
import operator
import os
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np

from .. import private_api

# ---------------------------------------- the cache key, the record of a trace's outputs, the shared paths

ARRAY_TYPES = private_api.equinox_array_types()
# .lower() also takes abstract arrays, as jax.jit(...).lower does: compile for a topology
# (e.g. a TPU v3-8 described on a CPU) without any array of it.
LOWER_TYPES = (*ARRAY_TYPES, jax.ShapeDtypeStruct)
#: marks an array leaf's slot in a list of static leaves
ARRAY = object()
_trace_context = private_api.jax_trace_context()
# Frames of these modules stay out of JAX's filtered tracebacks and out of the stack
# that eqx.error_if records, as Equinox's own frames do.
private_api.jax_traceback_exclusion(__file__)


class Fallback(Exception):
    """Raised while resolving a call that Equinox must handle; carries the reason."""


def _unstaged_type(leaf: Any) -> Hashable:
    """The type of an array leaf without an ``aval`` attribute (a NumPy array or scalar, or a
    ``jax.ShapeDtypeStruct`` given to ``.lower``), as far as a trace can observe it."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype)  # jax.jit gives a NumPy input a strong, unsharded aval
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return (jax.ShapeDtypeStruct, leaf.shape, leaf.dtype, leaf.weak_type, leaf.sharding)
    return jax.typeof(leaf)  # a JAX array of a kind (or version) without .aval: the slow, public way


# per set of array kinds: leaf type -> whether it is an array (learnt on first sight)
_IS_ARRAY: dict[tuple[type, ...], dict[type, bool]] = {}
_aval = operator.attrgetter("aval")


def _array_flags(types: tuple[type, ...], kinds: tuple[type, ...]) -> list[bool]:
    known = _IS_ARRAY.get(kinds)
    if known is None:
        known = _IS_ARRAY.setdefault(kinds, {})
    try:
        return list(map(known.__getitem__, types))  # one C-level pass on a hit
    except KeyError:
        for kind in types:
            if kind not in known:
                known[kind] = issubclass(kind, kinds)
        return list(map(known.__getitem__, types))


def split(tree: Any, kinds: tuple[type, ...] = ARRAY_TYPES) -> tuple[tuple, list, tuple, Any]:
    """(cache key, array leaves, (leaves, array flags), treedef) of ``tree``; ``kinds``: what
    counts as an array (abstract ones too when lowering); :func:`marked` turns the third into
    the static leaves with ARRAY marks. The key is ``(treedef, leaf types, non-array leaves,
    array avals, trace context)``; every pass over the leaves runs in C (``map``,
    ``compress``), so a call pays per leaf little beyond the flatten."""
    leaves, treedef = jtu.tree_flatten(tree)
    types = tuple(map(type, leaves))
    flags = _array_flags(types, kinds)
    dynamic = list(itertools.compress(leaves, flags))
    rest = tuple(itertools.compress(leaves, map(operator.not_, flags)))
    if float in types or complex in types:  # -0.0 == 0.0: a float's repr tells them apart
        rest = tuple((type(x), repr(x)) if type(x) in (float, complex) else x for x in rest)
    try:
        # The aval is what a trace sees, all of it; JAX interns it (jax >= 0.7: an identity
        # hash), so this is also the cheapest key per leaf.
        avals = tuple(map(_aval, dynamic))
    except AttributeError:
        avals = tuple(x.aval if hasattr(x, "aval") else _unstaged_type(x) for x in dynamic)
    return (treedef, types, rest, avals, _trace_context()), dynamic, (leaves, flags), treedef


def marked(parts: tuple) -> list[Any]:
    """The static leaves of a :func:`split`, with ARRAY in each array leaf's slot."""
    leaves, flags = parts
    return [ARRAY if f else x for x, f in zip(leaves, flags)]


def same_structure(key: tuple, other: tuple) -> bool:
    """Whether two keys agree on all but their arrays' types (which ``.lower``'s abstract
    arrays state less fully than concrete ones: JAX's compiled call checks those)."""
    return (
        key[0] == other[0]
        and key[2] == other[2]
        and tuple(map(type, key[2])) == tuple(map(type, other[2]))
        and key[4] == other[4]
    )


def array_types(leaves: Sequence[Any]) -> list[tuple]:
    """(shape, dtype) of each array leaf, abstract or concrete."""
    return [(tuple(x.shape), x.dtype) for x in leaves]


def merge(treedef: Any, static: Sequence[Any], dynamic: Sequence[Any]) -> Any:
    """The tree ``split`` took apart, with ``dynamic`` in the ARRAY slots of ``static``."""
    it = iter(dynamic)
    return treedef.unflatten([next(it) if s is ARRAY else s for s in static])


class Record:
    """One trace's output structure and non-array outputs. A pytree node without leaves:
    a compiled function returns ``(array outputs, record)``, so JAX keeps each trace's
    record with that trace's compiled code. ``rebuild`` interleaves in C: the leaves are
    ``(non-array outputs + array outputs)`` picked by a precomputed index."""

    __slots__ = ("treedef", "statics", "index")

    def __init__(self, treedef: Any, static: list[Any]) -> None:
        self.treedef = treedef
        self.statics = tuple(x for x in static if x is not ARRAY)
        n, arrays = len(self.statics), 0
        index, statics = [], 0
        for x in static:
            if x is ARRAY:
                index.append(n + arrays)
                arrays += 1
            else:
                index.append(statics)
                statics += 1
        self.index = tuple(index)

    def rebuild(self, dynamic: Sequence[Any]) -> Any:
        return self.treedef.unflatten(map((self.statics + tuple(dynamic)).__getitem__, self.index))


jtu.register_pytree_node(Record, lambda r: ((), r), lambda r, _: r)


def record(out: Any, dynamic: Sequence[bool] | None = None) -> tuple[tuple, Record]:
    """(the output leaves that leave the compiled function, the record of the rest):
    ``dynamic[i]`` says which (default: the arrays, as Equinox partitions with ``eqx.is_array``)."""
    leaves, treedef = jtu.tree_flatten(out)
    if dynamic is None:
        dynamic = [isinstance(x, ARRAY_TYPES) for x in leaves]
    static = [ARRAY if d else x for d, x in zip(dynamic, leaves)]
    return tuple(x for d, x in zip(dynamic, leaves) if d), Record(treedef, static)


_TOTALS_LOCK = threading.Lock()


class Paths:
    """The compiled paths of one function and options, shared by every equal wrapper (as
    Equinox's wrappers share their compiled function): entries by call key, hits, misses and
    hand-overs to Equinox. Every read or write of it holds its lock; JAX's tracing and
    compiling never run under it. Copied, it is itself (a wrapper's copy shares its paths)."""

    def __init__(self, totals: collections.Counter[str], unhashable: bool) -> None:
        self.unhashable = unhashable
        self.lock = threading.Lock()
        self.entries: dict[Hashable, Any] = {}
        self.counts = {"hits": 0, "misses": 0, "fallbacks": 0}
        self.reasons: collections.Counter[str] = collections.Counter()
        self._totals = totals

    def __copy__(self) -> Paths:
        return self

    def __deepcopy__(self, memo: dict) -> Paths:
        return self

    def get(self, key: Hashable) -> Any:
        """The entry for ``key`` (a hit), or None; :class:`Fallback` for an unhashable
        non-array leaf (Equinox's error)."""
        with self.lock:
            try:
                entry = self.entries.get(key)
            except TypeError as err:
                raise Fallback("unhashable non-array leaf") from err
            if entry is not None:
                self.counts["hits"] += 1
        return entry

    def put(self, key: Hashable, entry: Any) -> Any:
        """``entry`` under ``key`` (a miss), or the one another thread put there first (a hit:
        the entry built here is dropped before it traced anything)."""
        with self.lock:
            kept = self.entries.setdefault(key, entry)
            self.counts["misses" if kept is entry else "hits"] += 1
        return kept

    def count_fallback(self, reason: str) -> None:
        with self.lock:
            self.counts["fallbacks"] += 1
            self.reasons[reason] += 1
        with _TOTALS_LOCK:
            self._totals[reason] += 1

    def stats(self) -> dict[str, int]:
        with self.lock:
            return dict(self.counts)

    def fallback_reasons(self) -> collections.Counter[str]:
        with self.lock:
            return collections.Counter(self.reasons)


def totals(counter: collections.Counter[str]) -> dict[str, int]:
    with _TOTALS_LOCK:
        return dict(counter)


# the compiled paths of every wrapped callable: a function's by the function itself (weakly,
# as Equinox's compile cache), another callable's by its type, then by options and its
# non-array part (which the paths keep, as Equinox's compile cache keeps it)
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared(fun: Any, options: Hashable, rest: Hashable, make: Callable[[bool], Any]) -> Any:
    """The paths every wrapper of ``fun`` with ``options`` shares (``rest``: its non-array
    part), built by ``make(unhashable=False)`` the first time; a private one from
    ``make(unhashable=True)`` when the key cannot be hashed (Equinox then refuses each call)."""
    owner: Any
    key: Hashable
    if type(fun) is types.FunctionType:
        owner, key = fun, options
    else:
        owner, key = type(fun), (options, rest)
    try:
        hash(key)
    except TypeError:
        return make(True)
    with _SHARED_LOCK:
        by_key = _SHARED.setdefault(owner, {})
        paths = by_key.get(key)
        if paths is None:
            paths = by_key[key] = make(False)
    return paths


class Compiled:
    """``Lowered.compile()``: call it with arguments of the structure it was lowered for."""

    def __init__(self, compiled: Any, lowered: Lowered, compiler_options: Any) -> None:
        self.compiled, self._lowered, self._options = compiled, lowered, compiler_options
        self._lock = threading.Lock()
        self._static_form: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        lowered = self._lowered
        key, dynamic = lowered.key_of(args, kwargs)
        if same_structure(key, lowered.key):
            if array_types(dynamic) != lowered.types:
                raise TypeError(
                    f"arrays of shapes and dtypes {array_types(dynamic)} where this was lowered for "
                    f"{lowered.types}: lower(...) again with these arguments."
                )
            return lowered.run(self.compiled, dynamic)
        static_key = lowered.static_key
        if lowered.relower is not None and static_key is not None and same_structure(key, static_key):
            # The ShapeDtypeStructs it was lowered with are passed again: they were static
            # arguments (Equinox's reading), not abstract arrays.
            with self._lock:
                if self._static_form is None:
                    self._static_form = lowered.relower().compile(self._options)
            return self._static_form(*args, **kwargs)
        raise TypeError(
            "arguments of another structure, shape, dtype or static value than those it was "
            "lowered for: lower(...) again with these arguments."
        )

    def as_text(self) -> str:
        return self.compiled.as_text()


class Lowered:
    """``wrapper.lower(*args)``: ``as_text()`` and ``compile()``, as Equinox's. ``key_of``
    gives a call's (key, array leaves); ``run(compiled, leaves)`` calls the compiled form and
    rebuilds the outputs; ``relower()`` (when ``jax.ShapeDtypeStruct`` arguments were lowered
    as abstract arrays) lowers them as static arguments instead, ``static_key`` its key."""

    def __init__(
        self,
        lowered: Any,
        key: tuple,
        dynamic: Sequence[Any],
        key_of: Any,
        run: Any,
        relower: Any = None,
        static_key: tuple | None = None,
    ) -> None:
        self.lowered, self.key, self.types = lowered, key, array_types(dynamic)
        self.key_of, self.run, self.relower, self.static_key = key_of, run, relower, static_key

    def as_text(self) -> str:
        return self.lowered.as_text()

    def compile(self, compiler_options: dict[str, str | bool] | None = None) -> Compiled:
        return Compiled(self.lowered.compile(compiler_options=compiler_options), self, compiler_options)


# ---------------------------------------- one jax.pmap per input structure, and out_axes as Equinox resolves them

_broadcast_prefix = private_api.jax_broadcast_prefix()
#: what ``eqx.filter_pmap`` sizes ``out_axes`` by: arrays and Python scalars
_ARRAY_LIKE = (*ARRAY_TYPES, bool, int, float, complex)
# Equinox's messages, word for word (equinox/_vmap_pmap.py)
_SPEC_ERROR = "`in_axes` and `out_axes` must consist of None, ints, and callables only."
_RANGE_ERROR = "integers in filter_pmap(..., out_axes=...) must correspond to a dimension of the output array"
_KIND_ERROR = "filter_pmap(..., out_axes=...) must contain only integers and Nones"


#: ``tracing.traced`` is set when a trace reaches the wrapped function (per thread): from
#: then on an error is the function's, or its outputs', and is raised, never handed over
tracing = threading.local()


class PmapEntry:
    """The ``jax.pmap`` for one cache key (it returns ``(array outputs, Record)``); ``traced``:
    whether a trace of it has reached the end (set under the paths' lock)."""

    __slots__ = ("pmapped", "traced", "compiled")

    def __init__(self) -> None:
        self.pmapped: Any = None
        self.traced = False
        self.compiled = False  # whether a call has compiled it (JAX warns of donation only then)


def _is_axis_leaf(x: Any) -> bool:
    return x is None or isinstance(x, int) or callable(x)


def resolve_axes(spec: Any, tree: Any, array_types: tuple[type, ...] = ARRAY_TYPES) -> list[Any]:
    """One axis per leaf of ``tree`` from a prefix ``spec`` of None / ints / callables
    (called on each leaf), as Equinox resolves ``in_axes``; an ``eqx.if_array(k)`` gives
    ``k`` for any leaf of ``array_types``."""
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
    """A single value when every leaf shares it (jax.pmap then broadcasts nothing per call);
    else a tuple (never a list: multi-process jax.pmap rejects list axes)."""
    return axes[0] if axes and len(set(axes)) == 1 else tuple(axes)


def _known_out_axes(spec: Any) -> tuple[bool, Any]:
    """(known, pmap out_axes): the forms whose axes need no look at the outputs."""
    if isinstance(spec, eqx.if_array):
        return True, spec.axis
    if spec is None or isinstance(spec, int):
        return True, None if spec is None else int(spec)
    return False, None


def build_entry(paths: PmapPaths, treedef: Any, static: list, axes: list, dynamic: list) -> PmapEntry:
    """The ``jax.pmap`` for one input structure (``treedef`` with ``static`` leaves, ``axes``
    one per array leaf in ``dynamic``): the tree is ``(fun or None, args, dummy or None)``,
    None for a Python function, which comes from ``paths.fun_ref`` (a weak reference)."""
    entry = PmapEntry()
    # The entry may outlive every wrapper (equal wrappers share entries, as Equinox's share
    # compiled functions): its closures hold the options, never a wrapper nor the function.
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
    known, out_axes = _known_out_axes(spec)
    if not known:  # resolve the out_axes pytree against the output, traced once under vmap (as Equinox does)
        resolved: list[Any] = []

        def probe(dynamic_leaves: tuple) -> tuple:
            leaves, per_leaf, mapped = classify(call(dynamic_leaves))
            resolved[:] = [a for a, m in zip(per_leaf, mapped) if m]
            return tuple(x for x in leaves if isinstance(x, _ARRAY_LIKE))

        structs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in dynamic)
        vmapped = jax.vmap(probe, in_axes=(in_axes,), axis_name=axis_name, axis_size=axis_size)
        jax.eval_shape(vmapped, structs)
        out_axes = _one_or_tuple(resolved) if resolved else 0

    def inner(dynamic_leaves: tuple) -> tuple:
        out = call(dynamic_leaves)
        result = record(out, classify(out)[2])
        with lock:
            entry.traced = True
        return result

    inner.__name__, inner.__qualname__ = paths.name, paths.qualname
    entry.pmapped = jax.pmap(
        inner,
        in_axes=(in_axes,),
        out_axes=(out_axes, 0),  # the record has no leaves: any axis
        axis_name=axis_name,
        axis_size=axis_size,
        donate_argnums=(0,) if paths.donate != "none" else (),
        **paths.pmapkwargs,
    )
    return entry


def run_compiled(compiled: Any, dynamic: list) -> Any:
    """Call a compiled (ahead-of-time) form of an entry and rebuild its outputs."""
    out, rec = compiled(tuple(dynamic))
    return rec.rebuild(out)


# ---------------------------------------- the compiled paths of cached_filter_jit

# the Equinox hooks a failed eqx.error_if reads: refused here, by name, if missing
private_api.check_core_hook(private_api.EQUINOX_JIT_ERROR)
#: Equinox's filter of JAX's "jax.pmap callback failed" log record, resolved once
_LogFilter: Any = type(private_api.equinox_callback_log_filter())
_JaxRuntimeError = jax.errors.JaxRuntimeError
_callback_logger = logging.getLogger("jax._src.callback")
#: calls every cached_filter_jit in this process handed to eqx.filter_jit, by reason
JIT_FALLBACKS: collections.Counter[str] = collections.Counter()


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


class JitEntry:
    """The ``jax.jit`` for one cache key: called ``(kept, donated)``, the first ``kept``
    array leaves not donated; returns ``(array outputs, Record)``."""

    __slots__ = ("jitted", "kept", "compiled")

    def __init__(self, jitted: Any, kept: int) -> None:
        self.jitted, self.kept = jitted, kept
        self.compiled = False  # whether a call has compiled it (JAX warns of donation only then)


class JitPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(
        self, fun: Callable, rest: tuple, donate: str, jitkwargs: dict[str, Any], unhashable: bool
    ) -> None:
        super().__init__(JIT_FALLBACKS, unhashable)
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
        key, dynamic, parts, treedef = split((args, kwargs, arrays), kinds)
        entry = self.get(key)
        if entry is None:
            self.signature.bind(*args, **kwargs)  # a bad call: Equinox's TypeError, from the same bind
            entry = self.put(key, self._build(args, treedef, marked(parts), len(dynamic)))
        return key, entry, dynamic

    def call(self, arrays: tuple, args: tuple, kwargs: dict, jit_id: bytes) -> Any:
        self._check_finished(jit_id)
        args, kwargs = self.bind(args, kwargs)
        _, entry, dynamic = self.lookup(arrays, args, kwargs)
        kept = entry.kept
        log_filter = _LogFilter()  # one per call, as Equinox's
        _callback_logger.addFilter(log_filter)
        try:
            if self.filter_warning and not entry.compiled:
                # JAX's unusable-donation warning comes from compiling (this key's first call)
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                    out, rec = entry.jitted(tuple(dynamic[:kept]), tuple(dynamic[kept:]))
                entry.compiled = True
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

    def _build(self, args: tuple, treedef: Any, static: list, n_dynamic: int) -> JitEntry:
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
        return JitEntry(jax.jit(inner, donate_argnums=donate, **self.jitkwargs), kept)

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


# ---------------------------------------- cached_filter_jit

_sentinel = object()
# Equinox's own, bound at import: a program that patches eqx.filter_jit = cached_filter_jit
# still falls back to Equinox's, not to itself.
_EQX_FILTER_JIT: Any = eqx.filter_jit


def jit_fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_jit`` in this process handed to ``eqx.filter_jit``, by reason."""
    return totals(JIT_FALLBACKS)


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


def _jit_paths_of(fun: Callable, rest: tuple, donate: str, jitkwargs: dict[str, Any]) -> JitPaths:
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
      ``fallback_reasons`` count that, :func:`jit_fallback_counts` in total.

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
        _cached=_jit_paths_of(fun, rest, donate, jitkwargs),
        filter_warning=donate in ("all", "all-except-first"),
        donate_first=donate in ("all", "warn"),
        donate_rest=donate != "none",
    )
    return eqx.module_update_wrapper(wrapper)


# ---------------------------------------- the compiled paths of cached_filter_pmap

#: calls every cached_filter_pmap in this process handed to eqx.filter_pmap, by reason
PMAP_FALLBACKS: collections.Counter[str] = collections.Counter()


class PmapPaths(Paths):
    """What every wrapper of one function with one set of options shares."""

    def __init__(self, fun: Callable, options: dict[str, Any], unhashable: bool) -> None:
        super().__init__(PMAP_FALLBACKS, unhashable)
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
        specs = jtu.tree_leaves(self.in_axes, is_leaf=_is_axis_leaf)
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
        entry: PmapEntry | None = None
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
        key, dynamic, parts, treedef = split(tree, kinds)
        value_axes = self._arg_axes(args, kinds) if self.value_axes else None
        if value_axes is not None:
            key = (key, tuple(value_axes))
        entry = self.get(key)
        if entry is None:
            static = marked(parts)
            axes = self._dynamic_axes(args, static, dynamic, kinds, value_axes)
            entry = self.put(key, build_entry(self, treedef, static, axes, dynamic))
        return key, entry, dynamic, tree

    def _run(self, entry: PmapEntry, dynamic: list) -> Any:
        if self.donate == "all" and not entry.compiled:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
                out, rec = entry.pmapped(tuple(dynamic))
            entry.compiled = True
        else:
            out, rec = entry.pmapped(tuple(dynamic))
        return rec.rebuild(out)

    def _lowered(self, key: Any, entry: PmapEntry, dynamic: list, tree: tuple) -> Lowered:
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


# ---------------------------------------- cached_filter_pmap

# Equinox's own, bound at import: a program that patches eqx.filter_pmap = cached_filter_pmap
# still falls back to Equinox's, not to itself.
_EQX_FILTER_PMAP: Any = eqx.filter_pmap


def pmap_fallback_counts() -> dict[str, int]:
    """Calls every ``cached_filter_pmap`` in this process handed to ``eqx.filter_pmap``, by reason."""
    return totals(PMAP_FALLBACKS)


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
        # through the class: a Module's bound method is a new Module on every access
        return CachedFilterPmap._call(self, False, args, kwargs)

    def lower(self, /, *args: Any, **kwargs: Any) -> Any:
        """Ahead-of-time: ``.lower(*args)`` then ``.compile()``, as ``eqx.filter_pmap(...).lower``;
        array arguments may also be ``jax.ShapeDtypeStruct`` (as for ``jax.jit(...).lower``)."""
        return CachedFilterPmap._call(self, True, args, kwargs)

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


def _pmap_paths_of(fun: Callable, options: dict[str, Any]) -> PmapPaths:
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
    wrapper keys a cache on what that work depends on (the key above) and,
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
      :func:`pmap_fallback_counts`) where its answer is the point: keyword arguments, inputs it
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
        _cached=_pmap_paths_of(fun, {**options, **pmapkwargs}),
    )
    return eqx.module_update_wrapper(wrapper)
