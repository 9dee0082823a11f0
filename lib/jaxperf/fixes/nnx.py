"""``cached_nnx_jit``: a drop-in for ``flax.nnx.jit`` (graph mode) that walks the graph once.

``nnx.jit`` in graph mode splits every graph node argument (a full walk of the object graph
in Python), calls its ``jax.jit``, then merges the result back (a second walk) on every call;
Flax's performance guide documents the cost. This wrapper walks the graph once per graph
structure (:mod:`._nnx_graph`), and on a later call checks that structure with one C-level
comparison per node, Variable and container (no ``nnx.split``), reads the Variables' values,
calls one ``jax.jit`` on them, and writes back only the values the function changed (and
every donated one): the same results and updates as ``nnx.jit``.

Same signature, results and errors as ``nnx.jit``: static arguments (``static_argnums`` /
``static_argnames``, hashed into the cache key), ``donate_argnums`` / ``donate_argnames`` (a
shared Variable belongs to the argument where it is first found, as in ``nnx.jit``),
``keep_unused``, ``device``, ``backend``, ``inline``; methods (``__get__``); updated
Variables written into the caller's modules (shared references stay shared: the caller's
Variable objects are updated in place); RNG streams advance; ``nnx.Optimizer`` updates apply.
A structural change (a Variable added or removed, a submodule swapped, a static attribute
changed, another object passed) makes a new record, and a new trace when its graph definition
is new; an array's shape, dtype, sharding or memory kind is ``jax.jit``'s own cache key.

A function that changes the graph's structure inside (adds, removes or swaps attributes,
Variables or submodules) or returns graph nodes is traced once, as ``nnx.jit`` traces it: its
compiled function returns the whole graph, split as ``nnx.jit``'s inner split does, and the
call merges it into the caller's objects with Flax's ``graphlib.unflatten``, as ``nnx.jit``
does (no saving on such calls, nor on the next one, whose structure is new).

Handed to ``nnx.jit`` itself (counted in ``stats['fallbacks']`` with a reason): tree mode or
``graph_updates=False``, ``in_shardings`` / ``out_shardings``, calls inside another trace or
through ``nnx.cached_partial``, a Variable passed as an argument itself (a record holds its
arguments weakly, and Variables have no weak references), graphs :mod:`._nnx_graph` cannot
record, and an entry whose
outputs differ between two traces (a shape-dependent output structure; the second trace is
dropped and ``nnx.jit`` traces again). ``lower``, ``trace`` and ``eval_shape`` are ``nnx.jit``'s.

Where it differs on purpose: containers inside a module (lists, dicts) keep their identity
on a call that keeps the structure (``nnx.jit`` rebuilds them on every call), and a Variable
the function leaves unchanged keeps its array object (``nnx.jit`` writes back a new one).
"""

from __future__ import annotations

import collections
import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.tree_util as jtu
import numpy as np

from ._nnx_graph import Graph, Uncacheable, flax
from ._nnx_trace import Abort, Entry

_MISSING: Any = object()
#: positional arguments of these types keep a call on the fast path (no pytree flatten)
_LEAF_TYPES = (jax.Array, np.ndarray, np.generic, int, float, complex, bool)
_FALLBACKS: collections.Counter[str] = collections.Counter()


def fallback_counts() -> dict[str, int]:
    """Calls every ``cached_nnx_jit`` in this process handed to ``nnx.jit``, by reason."""
    return dict(_FALLBACKS)


def _resolve(fun: Callable, nums: Any, names: Any) -> tuple[frozenset[int], frozenset[str]]:
    """``(positions, names)``, each inferred from the other through the signature when only
    one is given, as ``jax.jit`` resolves ``static_arg*`` and ``donate_arg*``."""
    nums_set = frozenset((nums,) if isinstance(nums, int) else nums or ())
    names_set = frozenset((names,) if isinstance(names, str) else names or ())
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums_set, names_set
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if nums is None and names is not None:
        nums_set = frozenset(i for i, n in enumerate(positional) if n in names_set)
    elif names is None and nums is not None:
        names_set = frozenset(positional[i] for i in nums_set if 0 <= i < len(positional))
    return nums_set, names_set


class _Record:
    """A call's graph record and entry, and (``fast``) the positional fast path's checks."""

    __slots__ = ("graph", "entry", "fast", "__weakref__")

    def __init__(self, graph: Graph, entry: Entry, fast: tuple | None) -> None:
        self.graph, self.entry, self.fast = graph, entry, fast


def _forget(owner_ref: weakref.ref, key: Any) -> None:
    owner = owner_ref()
    if owner is not None:
        record = owner._records.pop(key, None)
        if record is not None and owner._last is record:
            owner._last = None


class CachedNnxJit:
    """The wrapper ``cached_nnx_jit`` returns. ``stats``: hits, misses (a walk of the graph),
    traces and fallbacks; ``fallback_reasons`` counts the fallbacks by reason."""

    def __init__(self, fun: Callable, **options: Any) -> None:
        fx = flax()
        self._fallback = fx.jit(fun, **options)  # nnx.jit's checks and errors, and its fallback
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._active = isinstance(self._fallback, fx.nnx.transforms.compilation.JitWrapped) and (
            options.get("in_shardings") is None and options.get("out_shardings") is None
        )
        self._static = _resolve(fun, options.get("static_argnums"), options.get("static_argnames"))
        self._donate = _resolve(fun, options.get("donate_argnums"), options.get("donate_argnames"))
        keys = ("keep_unused", "device", "backend", "inline")
        self._jit_options = {k: options[k] for k in keys if options.get(k) not in (None, False)}
        self._graph_context = fx.graphlib.GRAPH_CONTEXT
        self._is_node = lambda x: fx.graphlib.is_graph_node(x) or isinstance(x, fx.Variable)
        self._records: dict[Any, _Record] = {}
        self._entries: dict[Any, Entry] = {}
        self._last: _Record | None = None
        self.stats = {"hits": 0, "misses": 0, "fallbacks": 0}
        self.fallback_reasons: collections.Counter[str] = collections.Counter()

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        return self._fallback.lower(*args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        return self._fallback.trace(*args, **kwargs)

    def eval_shape(self, *args: Any, **kwargs: Any) -> Any:
        return self._fallback.eval_shape(*args, **kwargs)

    # ------------------------------------------------------------ the call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        record = self._last
        if self._graph_context.tmp_static_cache is not None:  # inside nnx.cached_partial: nnx.jit's
            return self._fall_back("called through nnx.cached_partial", args, kwargs)
        if record is not None and not kwargs:
            types, node_at, pass_at, static_at, statics = record.fast  # type: ignore[misc]
            if types == tuple(map(type, args)):
                roots = [args[i] for i in node_at]
                graph = record.graph
                if (
                    all(r() is a for r, a in zip(graph.root_refs, roots))
                    and [args[i] for i in static_at] == statics
                    and graph.unchanged(roots)
                ):
                    self.stats["hits"] += 1
                    return self._run(record, roots, [args[i] for i in pass_at], args, kwargs)
        return self._call(args, kwargs)

    def _count_fallback(self, reason: str) -> None:
        self.stats["fallbacks"] += 1
        self.fallback_reasons[reason] += 1
        _FALLBACKS[reason] += 1

    def _fall_back(self, reason: str, args: tuple, kwargs: dict) -> Any:
        self._count_fallback(reason)
        return self._fallback(*args, **kwargs)

    def _split_static(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple, dict]:
        nums, names = self._static
        if not nums and not names:
            return (), args, kwargs
        statics = (
            tuple((i, a) for i, a in enumerate(args) if i in nums),
            tuple(sorted((k, v) for k, v in kwargs.items() if k in names)),
        )
        dyn_args = tuple(a for i, a in enumerate(args) if i not in nums)
        return statics, dyn_args, {k: v for k, v in kwargs.items() if k not in names}

    @staticmethod
    def _with_statics(dynamic: tuple, statics: tuple) -> tuple[list, dict]:
        args, kwargs = list(dynamic[0]), dict(dynamic[1])
        if statics:
            for i, value in statics[0]:
                args.insert(i, value)
            kwargs.update(statics[1])
        return args, kwargs

    def _call(self, args: tuple, kwargs: dict) -> Any:
        if not self._active:
            return self._fall_back("tree mode, graph_updates=False or shardings", args, kwargs)
        statics, dyn_args, dyn_kwargs = self._split_static(args, kwargs)
        leaves, treedef = jtu.tree_flatten((dyn_args, dyn_kwargs), is_leaf=self._is_node)
        node_pos = tuple(i for i, leaf in enumerate(leaves) if self._is_node(leaf))
        roots = [leaves[i] for i in node_pos]
        key = (treedef, node_pos, tuple(map(id, roots)), statics)
        try:
            record = self._records.get(key)
        except TypeError:  # an unhashable static argument: nnx.jit's (jax.jit's) error
            return self._fallback(*args, **kwargs)
        if record is None or not (
            all(r() is a for r, a in zip(record.graph.root_refs, roots)) and record.graph.unchanged(roots)
        ):
            try:
                record = self._record(key, args, kwargs, leaves, treedef, node_pos, statics)
            except Uncacheable as reason:
                return self._fall_back(str(reason), args, kwargs)
            except TypeError:  # weakref.ref of an argument: a Variable has no weak references
                return self._fall_back("an argument without weak references (a Variable)", args, kwargs)
            self.stats["misses"] += 1
        else:
            self.stats["hits"] += 1
        if record.fast is not None:
            self._last = record
        passthrough = [leaf for i, leaf in enumerate(leaves) if i not in node_pos]
        return self._run(record, roots, passthrough, args, kwargs)

    def _record(self, key, args, kwargs, leaves, treedef, node_pos, statics) -> _Record:
        fx = flax()
        roots = [leaves[i] for i in node_pos]
        if any(fx.is_array_ref(leaf) for leaf in leaves):
            raise Uncacheable("array reference argument")
        graph = Graph(roots, fx)
        # the position in args of each dynamic positional argument
        at = [i for i in range(len(args)) if i not in self._static[0]]
        entry_key = (treedef, node_pos, statics, graph.graphdefs)
        entry = self._entries.get(entry_key)
        if entry is None:
            donated = self._donated_leaves(graph, treedef, node_pos, at)
            entry = self._entries[entry_key] = Entry(self, graph, treedef, node_pos, statics, donated)
        fast = None
        plain = len(leaves) == len(at) and all(args[i] is leaf for i, leaf in zip(at, leaves))
        if plain and not kwargs:
            if all(isinstance(leaf, _LEAF_TYPES) for i, leaf in enumerate(leaves) if i not in node_pos):
                node_at = tuple(at[i] for i in node_pos)
                pass_at = tuple(at[i] for i in range(len(leaves)) if i not in node_pos)
                static_at = tuple(i for i in range(len(args)) if i in self._static[0])
                statics_now = [args[i] for i in static_at]
                fast = (tuple(map(type, args)), node_at, pass_at, static_at, statics_now)
        record = _Record(graph, entry, fast)
        if key not in self._records:
            for root in roots:
                weakref.finalize(root, _forget, weakref.ref(self), key)
        self._records[key] = record
        return record

    def _donated_leaves(self, graph: Graph, treedef: Any, node_pos: tuple, at: list) -> list[bool]:
        """Per leaf of a call (the graph's leaves, then the other leaves): donated or not;
        ``at``: the position in the call's arguments of each dynamic positional argument."""
        nums, names = self._donate
        if not nums and not names:
            return [False] * (graph.n_leaves + treedef.num_leaves - len(node_pos))
        dyn_args, dyn_kwargs = treedef.unflatten(list(range(treedef.num_leaves)))
        owner: dict[int, bool] = {}
        for i, arg in zip(at, dyn_args):
            for leaf in jtu.tree_leaves(arg):
                owner[leaf] = i in nums
        for name, arg in dyn_kwargs.items():
            for leaf in jtu.tree_leaves(arg):
                owner[leaf] = name in names
        graph_part = [owner[node_pos[k]] for k in graph.owners]
        return graph_part + [owner[i] for i in range(treedef.num_leaves) if i not in node_pos]

    def _run(self, record: _Record, roots: list, passthrough: list, args: tuple, kwargs: dict) -> Any:
        entry = record.entry
        if entry.fallback:
            return self._fall_back(entry.fallback, args, kwargs)
        values = record.graph.values(roots) + passthrough
        if entry.donated:
            kept = tuple(values[i] for i in entry.kept)
            donated = tuple(values[i] for i in entry.donated)
        else:
            kept, donated = tuple(values), ()
        try:
            updates, out = entry.jitted(kept, donated)
        except Abort as reason:
            entry.fallback = entry.fallback or str(reason)
            return self._fall_back(str(reason), args, kwargs)
        if entry.record[0] == "values":
            record.graph.write(roots, entry.record[1], updates)
            return out
        return self._merge(record, roots, updates, out)

    @staticmethod
    def _merge(record: _Record, roots: list, split: list, arrays: list) -> Any:
        """Merge a call that changed the graph (or returns graph nodes) into the caller's
        objects, as nnx.jit's outer merge does: nodes that entered are updated in place."""
        graphlib = flax().graphlib
        _, graphdefs, out_def, kinds = record.entry.record
        outer = graphlib.IndexMap(
            (i, roots[obj[1]] if isinstance(obj, tuple) else obj)
            for i, obj in enumerate(record.graph.by_index)
        )
        index_ref = graphlib.IndexMap()
        merged = [
            graphlib.unflatten(gd, leaves, index_ref=index_ref, outer_index_outer_ref=outer)
            for gd, leaves in zip(graphdefs, split)
        ]
        nodes, values = iter(merged[len(roots) :]), iter(arrays)
        return out_def.unflatten([next(nodes) if kind else next(values) for kind in kinds])


def cached_nnx_jit(fun: Callable = _MISSING, **options: Any) -> Any:
    """Drop-in for ``flax.nnx.jit`` (same keyword arguments, results and errors) that walks the
    object graph once per graph structure; usable as a decorator with or without arguments."""
    if fun is _MISSING:
        return functools.partial(cached_nnx_jit, **options)
    return CachedNnxJit(fun, **options)
