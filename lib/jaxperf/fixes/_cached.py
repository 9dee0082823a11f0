"""What ``cached_filter_jit`` (:mod:`._jit`) and ``cached_filter_pmap`` (:mod:`._pmap`) share.

A call's key holds all a trace can observe of its inputs (:func:`split`); a trace's output structure
and non-array outputs travel as a :class:`Record` in the compiled function's outputs. A part of an
output made only of Modules, tuples, None and lists keeps its leaves beside it (weakly), so passed
back in unchanged, as a training loop passes its state, it is not flattened again. Equal wrappers
share their paths (:func:`shared`), which hold a Python function weakly, never an array or output.
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.tree_util as jtu
import numpy as np

from .. import private_api

ARRAY_TYPES = private_api.equinox_array_types()
# .lower() also takes abstract arrays, as jax.jit's: compile for a topology without its arrays.
LOWER_TYPES = (*ARRAY_TYPES, jax.ShapeDtypeStruct)
#: marks an array leaf's slot in a list of static leaves
ARRAY = object()
_trace_context = private_api.jax_trace_context()
# These frames stay out of JAX's filtered tracebacks and eqx.error_if's stack, as Equinox's do.
private_api.jax_traceback_exclusion(__file__)


class Fallback(Exception):
    """Raised while resolving a call that Equinox must handle; carries the reason."""


def _unstaged_type(leaf: Any) -> Hashable:
    """What a trace sees of an array leaf without ``aval`` (NumPy, or a ``ShapeDtypeStruct``)."""
    if isinstance(leaf, (np.ndarray, np.generic)):
        return (leaf.shape, leaf.dtype)  # jax.jit gives a NumPy input a strong, unsharded aval
    if isinstance(leaf, jax.ShapeDtypeStruct):
        return (jax.ShapeDtypeStruct, leaf.shape, leaf.dtype, leaf.weak_type, leaf.sharding)
    return jax.typeof(leaf)  # a JAX array of a kind (or version) without .aval: the slow, public way


# (array kinds, leaf types) -> (array flags, non-array flags, float or complex among them)
_PLANS: dict[tuple, tuple[tuple[bool, ...], tuple[bool, ...], bool]] = {}
_aval = operator.attrgetter("aval")
_flatten: Callable[[Any], tuple[list[Any], Any]] = jtu.default_registry.flatten


def split(tree: tuple, kinds: tuple = ARRAY_TYPES, at: int = 0, shapes: Any = None) -> tuple:
    """(cache key, array leaves, (leaves, array flags)) of ``tree``, whose item ``at`` holds the
    call's arguments (``kinds``: what counts as an array). The key is ``(treedefs, leaf types,
    non-array leaves, array avals, trace context)``: all a trace can observe, ``1``, ``1.0``
    and ``True`` apart, a float's sign too. An argument a drop-in returned is not flattened again,
    nor one of an output's structure (``shapes``: its (treedef, lists)) passed in again."""
    leaves: list[Any] = []
    treedefs = []
    for part in (*tree[:at], *tree[at], *tree[at + 1 :]):
        if (known := _kept(part)) is not None:
            leaves += list(map((known[5] + known[4]).__getitem__, known[6])) if known[5] else known[4]
            treedefs.append(known[1])
        else:
            part_leaves, treedef = _flatten(part)  # jax.tree_util.tree_flatten without its frame
            leaves += part_leaves
            treedefs.append(treedef)
            nodes = shapes and treedef.num_nodes > 1  # a leaf or an empty container: not worth it
            lists = next((h for d, h in shapes if d == treedef), None) if nodes else None
            if lists is not None:  # its own key is its token: equal inputs share one
                arrays = tuple(x for x in part_leaves if isinstance(x, ARRAY_TYPES))
                token = split(((part,),))[0]
                _remember(part, treedef, lists, token, arrays, tuple(part_leaves), range(len(part_leaves)))
    types = tuple(map(type, leaves))
    if (plan := _PLANS.get((kinds, types))) is None:
        if len(_PLANS) > 4096:  # bounded: one entry per input structure seen
            _PLANS.clear()
        flags = tuple(issubclass(kind, kinds) for kind in types)
        plan = _PLANS[kinds, types] = (flags, tuple(not f for f in flags), float in types or complex in types)
    flags, others, floats = plan
    dynamic = list(itertools.compress(leaves, flags))
    rest = tuple(itertools.compress(leaves, others))
    if floats:  # -0.0 == 0.0: a float's repr tells them apart
        rest = tuple((type(x), repr(x)) if type(x) in (float, complex) else x for x in rest)
    try:
        avals = tuple(map(_aval, dynamic))  # all a trace sees, interned by JAX: the cheapest key per leaf
    except AttributeError:
        avals = tuple(x.aval if hasattr(x, "aval") else _unstaged_type(x) for x in dynamic)
    return (tuple(treedefs), types, rest, avals, _trace_context()), dynamic, (leaves, flags)


# id(an output) -> (weak reference to it, its treedef, (each list in it, its items), its token
# for quick(), its arrays, its other leaves, the index of each leaf in those two)
_KNOWN: dict[int, tuple] = {}
_ARRAY_IMPL: dict[str, type] = {}  # jax's concrete array type, found at the first call: no array at import
QUICK = object()  # first item of a quick() key: never equal to a split() key
_NODES: dict[type, bool] = {tuple: True, list: True, dict: True}  # a type -> whether quick() reads into it


def quick(parts: tuple) -> tuple[tuple | None, list]:
    """(key, array leaves) of a call, without a flatten, when each of its ``parts`` (as :func:`split`
    reads them) is a JAX array, None, a kept output (its token stands for its whole structure) or a
    tuple, namedtuple, list or dict of those; else key None. Never a split() key (a cache keeps both)."""
    key: list[Any] = [QUICK]
    dynamic: list[Any] = []
    if (array := _ARRAY_IMPL.get("")) is None:  # outside any trace: inside one, jnp.zeros is a tracer
        with jax.ensure_compile_time_eval():
            array = _ARRAY_IMPL.setdefault("", type(jax.numpy.zeros(())))
    todo = list(reversed(parts))
    while todo:
        part = todo.pop()
        kind = type(part)
        if kind is array:
            key.append(part.aval)
            dynamic.append(part)
        elif part is None:
            key.append(None)
        elif len(key) < 1 << 16 and (node := _children(part)) is not None:  # else a list in itself
            key.append((kind, node[1], len(node[0])))  # then its children: the key reads one way only
            todo += reversed(node[0])
        elif (known := _kept(part)) is not None:  # never a container: none has a weak reference
            key.append(known[3])
            dynamic += known[4]
        else:
            return None, dynamic
    key.append(_trace_context())
    return tuple(key), dynamic


def _kept(part: Any) -> tuple | None:
    """What :data:`_KNOWN` holds of ``part`` (a drop-in's output, its lists unchanged), or None."""
    if (known := _KNOWN.get(id(part))) is None or known[0]() is not part:
        return None
    return None if known[2] and _changed(known[2]) else known


def _children(part: Any) -> tuple | None:
    """(children, node data: a dict's keys, else its type) of a tuple, list, dict or namedtuple (a
    registered tuple type's node data is what its own flatten gives), as JAX flattens it; else None."""
    if (flag := _NODES.get(kind := type(part))) is None:
        flag = hasattr(kind, "_fields") and isinstance(part, tuple)
        flag = _NODES[kind] = flag and jtu.default_registry.flatten_one_level(part)[1] is kind
    if not flag:
        return None
    return jtu.default_registry.flatten_one_level(part) if kind is dict else (part, kind)


def _parts(node: Any, path: tuple = ()) -> list[tuple[tuple, Any]]:
    """(path of keys, part) of each child of ``node``'s containers (:func:`_children`), in flatten order."""
    if (found := _children(node)) is None:
        return [(path, node)]
    names = found[1] if type(node) is dict else range(len(found[0]))
    return [part for name, child in zip(names, found[0]) for part in _parts(child, (*path, name))]


def _lists(node: Any, path: tuple = ()) -> list[tuple] | None:
    """The paths (getters, one per level) to the lists in a traced output whose other nodes are
    immutable (Modules, tuples, named tuples, None); None if it has another (mutable) node."""
    kind = type(node)
    if kind is not list and kind not in (tuple, type(None)) and not hasattr(kind, "_fields"):
        if not isinstance(node, eqx.Module):
            return [] if jtu.treedef_is_leaf(jtu.tree_structure(node)) else None
    found = [path] if kind is list else []
    for (key,), child in jtu.tree_flatten_with_path(node, is_leaf=lambda x: x is not node)[0]:
        if isinstance(key, jtu.GetAttrKey):  # a field, read past Module.__getattribute__
            get: Callable = functools.partial(_field_of, key.name)
        elif isinstance(key, jtu.SequenceKey):
            get = operator.itemgetter(key.idx)
        else:
            return None
        below = _lists(child, (*path, get))
        if below is None:
            return None
        found += below
    return found


def _field_of(name: str, node: Any) -> Any:
    return object.__getattribute__(node, name)


def _changed(lists: tuple) -> bool:
    """Whether a list holds other items now (a list can change in place; its parents cannot)."""
    return any(len(now) != len(held) or not all(map(operator.is_, now, held)) for now, held in lists)


class _Kept(weakref.ref):
    """A weak reference to a kept output, with its key in :data:`_KNOWN`."""

    __slots__ = ("key",)
    key: int


def _forget(ref: _Kept) -> None:
    if (known := _KNOWN.get(ref.key)) is not None and known[0] is ref:
        del _KNOWN[ref.key]


def marked(parts: tuple) -> list[Any]:
    """The static leaves of a :func:`split`, with ARRAY in each array leaf's slot."""
    leaves, flags = parts
    return [ARRAY if f else x for x, f in zip(leaves, flags)]


def same_structure(key: tuple, other: tuple) -> bool:
    """Whether two keys agree on all but their arrays' types (JAX's compiled call checks those)."""
    return key[0::2] == other[0::2] and tuple(map(type, key[2])) == tuple(map(type, other[2]))


def array_types(leaves: Sequence[Any]) -> list[tuple]:
    """(shape, dtype) of each array leaf, abstract or concrete."""
    return [(tuple(x.shape), x.dtype) for x in leaves]


def merge(treedef: Any, static: Sequence[Any], dynamic: Sequence[Any]) -> Any:
    """The tree ``split`` took apart, with ``dynamic`` in the ARRAY slots of ``static``."""
    it = iter(dynamic)
    return treedef.unflatten([next(it) if s is ARRAY else s for s in static])


class _Static:
    """A non-array output leaf, held in the treedef as a node without leaves (unflattened: itself)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


jtu.register_pytree_node(_Static, lambda s: ((), s), lambda s, _: s.value)


class Record:
    """One trace's output structure with its non-array outputs in it (:class:`_Static` nodes):
    a pytree node without leaves, so JAX keeps it with that trace's compiled code and
    ``rebuild`` is one unflatten in C. ``known``, per part of the outputs (:func:`_parts`) with no
    mutable node but lists: (its path, its arrays' range, non-array leaves, leaf order, treedef,
    lists, token: the part's whole structure, one per trace)."""

    __slots__ = ("treedef", "known")

    def __init__(self, treedef: Any, known: tuple = ()) -> None:
        self.treedef, self.known = treedef, known

    def rebuild(self, arrays: tuple) -> Any:
        """The outputs, each immutable part's leaves kept beside it for :func:`split`."""
        out = self.treedef.unflatten(arrays)
        for path, start, stop, statics, index, treedef, lists, token in self.known:
            part = functools.reduce(operator.getitem, path, out)
            _remember(part, treedef, lists, token, arrays[start:stop], statics, index)
        return out


def _remember(part: Any, treedef: Any, lists: tuple, *leaves: Any) -> None:
    """Keep ``part``'s leaves (token, arrays, others, index) beside it (weakly) for :func:`split`
    and :func:`quick`, with the items of its lists."""
    ref = _Kept(part, _forget)  # record() keeps only what a weak reference can point to (no list, dict)
    ref.key = id(part)
    if lists:
        nodes = (functools.reduce(lambda node, get: get(node), path, part) for path in lists)
        lists = tuple((node, tuple(node)) for node in nodes)
    _KNOWN[id(part)] = (ref, treedef, lists, *leaves)


jtu.register_pytree_node(Record, lambda r: ((), r), lambda r, _: r)


def record(out: Any, dynamic: Sequence[bool] | None = None) -> tuple[tuple, Record]:
    """(array outputs, :class:`Record` of the rest); ``dynamic[i]``: which leaves (default: arrays)."""
    leaves, treedef = jtu.tree_flatten(out)
    if dynamic is None:
        dynamic = [isinstance(x, ARRAY_TYPES) for x in leaves]
    held = jtu.tree_unflatten(treedef, [x if d else _Static(x) for d, x in zip(dynamic, leaves)])
    known, first, start = [], 0, 0
    for at, part in _parts(out):
        part_leaves, part_def = _flatten(part)
        flags = dynamic[first : first + len(part_leaves)]
        lists = _lists(part) if part_def.num_nodes > 1 and type(part).__weakrefoffset__ else None
        if lists is not None:
            statics = tuple(x for d, x in zip(flags, part_leaves) if not d)
            order = [i for i, d in enumerate(flags) if not d] + [i for i, d in enumerate(flags) if d]
            index = tuple(sorted(range(len(flags)), key=order.__getitem__))  # into statics + arrays
            known.append((at, start, start + sum(flags), statics, index, part_def, tuple(lists), object()))
        first, start = first + len(part_leaves), start + sum(flags)
    return tuple(x for d, x in zip(dynamic, leaves) if d), Record(jtu.tree_structure(held), tuple(known))


class Entry:
    """The compiled function for one cache key: ``fn(*array leaves) -> (array outputs, Record)``;
    ``kept``: how many leading leaves are not donated; ``traced``: whether a trace reached its
    end; ``ready``: whether ``fn`` can be called directly (else :meth:`first`)."""

    __slots__ = ("fn", "kept", "traced", "ready", "asynchronous")

    def __init__(self, kept: int = 0, quiet: bool = False) -> None:
        self.fn: Any = None
        self.kept, self.traced, self.ready = kept, False, not quiet
        self.asynchronous: bool | None = None  # whether its outputs live off XLA:CPU (known after a call)

    def first(self, dynamic: Sequence[Any]) -> Any:
        """The first call (the compile), without JAX's unusable-donation warning, as Equinox."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Some donated buffers were not usable*")
            out = self.fn(*dynamic)
        self.ready = True
        return out

    def run(self, dynamic: Sequence[Any]) -> Any:
        """The call's outputs, rebuilt."""
        out, rec = self.fn(*dynamic) if self.ready else self.first(dynamic)
        return rec.rebuild(out)


_TOTALS_LOCK = threading.Lock()


class Paths:
    """The compiled paths of one function and options, shared by every equal wrapper: entries
    by call key, hits, misses and hand-overs to Equinox, under its lock (JAX never traces
    under it). Copied, it is itself."""

    def __init__(self, fun: Any, totals: collections.Counter[str], unhashable: bool) -> None:
        self.unhashable = unhashable
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self.qualname = getattr(fun, "__qualname__", self.name)
        # a Python function weakly: the shared paths die with it (as Equinox's compile cache)
        self.is_function = type(fun) is types.FunctionType
        self.fun_ref: Callable[[], Any] = weakref.ref(fun) if self.is_function else (lambda: None)
        self.lock = threading.Lock()
        self.entries: dict[Hashable, Any] = {}
        self.counts = {"hits": 0, "misses": 0, "fallbacks": 0}
        self.hits = itertools.count()  # the hits counted without the lock (next() is atomic)
        self.reasons: collections.Counter[str] = collections.Counter()
        self._totals = totals

    def __deepcopy__(self, memo: dict | None = None) -> Paths:
        return self

    __copy__ = __deepcopy__

    def get(self, key: Hashable) -> Any:
        """The entry for ``key`` (a hit) or None; :class:`Fallback` for an unhashable non-array leaf."""
        if self.unhashable:
            raise Fallback("unhashable non-array leaf in the function")
        with self.lock:
            try:
                entry = self.entries.get(key)
            except TypeError as err:
                raise Fallback("unhashable non-array leaf") from err
            if entry is not None:
                self.counts["hits"] += 1
        return entry

    def put(self, key: Hashable, entry: Any) -> Any:
        """``entry`` under ``key`` (a miss), or the one another thread put there first (a hit)."""
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


def totals(counter: collections.Counter[str]) -> dict[str, int]:
    with _TOTALS_LOCK:
        return dict(counter)


# the paths of every wrapped callable: a function's by itself (weakly, as Equinox's compile
# cache), another callable's by its type, then by options and its non-array part
_SHARED: weakref.WeakKeyDictionary[Any, dict[Hashable, Any]] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def shared(fun: Any, options: dict[str, Any], rest: Hashable, make: Callable[[bool], Any]) -> Any:
    """The paths every wrapper of ``fun`` with ``options`` (and non-array part ``rest``) shares,
    built by ``make(False)`` the first time; a private ``make(True)`` for an unhashable key."""
    leaves, treedef = jtu.tree_flatten(options)
    key: Hashable = (tuple(leaves), treedef)
    function = type(fun) is types.FunctionType
    owner: Any = fun if function else type(fun)
    key = key if function else (key, rest)
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
            out, rec = self.compiled(*dynamic)
            return rec.rebuild(out)
        if lowered.relower is not None and same_structure(key, lowered.static_key):
            # passed again: the ShapeDtypeStructs were static arguments (Equinox's reading)
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
    """``wrapper.lower(*args)``: ``as_text()`` and ``compile()``, as Equinox's. ``key_of(args, kwargs)``
    gives a call's (key, array leaves); ``relower()`` lowers abstract arrays as static arguments
    instead, for a call of ``static_key`` (the key of ``call``, the lowered arguments)."""

    def __init__(
        self, lowered: Any, key: tuple, dynamic: list, key_of: Any, relower: Any = None, call: tuple = ()
    ) -> None:
        self.lowered, self.key, self.types = lowered, key, array_types(dynamic)
        self.key_of, self.relower = key_of, relower
        self.static_key: Any = key_of(*call)[0] if relower is not None else None

    def as_text(self) -> str:
        return self.lowered.as_text()

    def compile(self, compiler_options: dict[str, str | bool] | None = None) -> Compiled:
        return Compiled(self.lowered.compile(compiler_options=compiler_options), self, compiler_options)


class Wrapper(eqx.Module):
    """What both drop-in Modules add: the counts of their shared paths, and binding as a method."""

    if TYPE_CHECKING:
        _cached: Paths

        def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

        def _equinox(self) -> Any: ...

    @property
    def stats(self) -> dict[str, int]:
        """Hits, misses and hand-overs to Equinox of the compiled paths this wrapper shares."""
        with self._cached.lock:
            counts = dict(self._cached.counts)
        return {**counts, "hits": counts["hits"] + int(repr(self._cached.hits)[6:-1])}  # "count(N)"

    @property
    def fallback_reasons(self) -> dict[str, int]:
        with self._cached.lock:
            return dict(self._cached.reasons)

    def _fallback(self, reason: Fallback, lower: bool, args: tuple, kwargs: dict) -> Any:
        """Equinox's answer (``_equinox()``: its wrapper) to a call handed over, counted."""
        self._cached.count_fallback(str(reason))
        equinox = self._equinox()
        return (equinox.lower if lower else equinox)(*args, **kwargs)

    def __get__(self, instance: Any, owner: Any) -> Any:
        """Bound through an instance (a method of a Module), as Equinox binds its wrappers."""
        return self if instance is None else eqx.Partial(self, instance)


#: a default no caller passes (an argument left out)
_sentinel = object()


def fun_partition(fun: Any) -> tuple[tuple, tuple]:
    """(arrays, (other leaves, treedef)) of ``fun``, None in the other's slots, as ``eqx.filter_jit``."""
    leaves, treedef = jtu.tree_flatten(fun)
    arrays = tuple(x if isinstance(x, ARRAY_TYPES) else None for x in leaves)
    return arrays, (tuple(None if a is not None else x for a, x in zip(arrays, leaves)), treedef)


def fun_combine(arrays: tuple, rest: tuple) -> Any:
    leaves, treedef = rest
    return treedef.unflatten([a if s is None else s for a, s in zip(arrays, leaves)])
