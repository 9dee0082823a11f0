"""``cached_nnx_jit``: a drop-in for ``flax.nnx.jit`` (graph mode) that walks the graph once.

``nnx.jit`` in graph mode splits every graph node argument (a walk of the object graph in
Python), calls its ``jax.jit``, then merges the result back (a second walk) on every call.
This wrapper walks the graph once per graph structure (:class:`Graph`); a later call checks
that structure (one list comparison of what each node's, PytreeState's and Variable's probe
reads with the record's copies, and the trace), reads the Variables' values, calls one
``jax.jit`` (:class:`Entry`) and writes back only the values the function changed (and every
donated one): the same results and updates as ``nnx.jit``, with its static, donated and other
``jax.jit`` options, methods, shared Variables, RNG streams and ``nnx.Optimizer`` updates. A
function that changes the graph's structure or returns graph nodes returns the whole graph
split, merged as ``nnx.jit`` merges it.

Refused with a ValueError naming the option (:func:`nnx_refusal_counts`): tree mode
(``graph=False``, ``graph_updates=False``), where there is no walk to cache, and
``in_shardings`` / ``out_shardings``. Handed to ``nnx.jit`` (``stats['fallbacks']``, with a
reason): calls inside another trace or through ``nnx.cached_partial``, graphs it cannot
record exactly (:class:`Uncacheable`), and an entry whose outputs differ between traces
(:class:`Abort`). ``lower``, ``trace`` and ``eval_shape`` are ``nnx.jit``'s.

Where it differs on purpose: containers inside a module keep their identity on a call that
keeps the structure, and a Variable the function leaves unchanged keeps its array object.
A record holds the call's arguments weakly and is dropped when one dies.
"""

from __future__ import annotations

import collections
import functools
import inspect
import operator
import threading
import weakref
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import jax
import jax.tree_util as jtu
import numpy as np

from .. import private_api
from ..errors import bad_value

_FLAX: SimpleNamespace | None = None


def flax() -> SimpleNamespace:
    """Flax's NNX modules, imported on first use (the core package does not require Flax)."""
    global _FLAX
    if _FLAX is None:
        try:
            import flax.nnx as nnx
            from flax.nnx import graphlib, pytreelib, statelib, tracers, variablelib
            from flax.nnx.transforms import compilation
        except ImportError as err:
            raise ImportError(
                "jaxperf.cached_nnx_jit needs Flax (flax.nnx), which is not installed: "
                "pip install flax (or the study extra: pip install 'jaxperf[study]')."
            ) from err
        _FLAX = SimpleNamespace(
            nnx=nnx,
            graphlib=graphlib,
            Variable=variablelib.Variable,
            is_array_ref=variablelib.is_array_ref,
            PytreeState=pytreelib.PytreeState,
            Pytree=pytreelib.Pytree,
            State=statelib.State,
            trace=tracers.current_jax_trace,
            # the original, kept before anything (Flax's tests with the drop-in) replaces nnx.jit
            jit=compilation.jit,
        )
    return _FLAX


class Uncacheable(Exception):
    """A graph this module cannot record exactly; carries the reason."""


class _Like:
    """Stands in a snapshot for an array (equal to its type) or a root (equal to it, held weakly)."""

    __slots__ = ("test",)
    __array_ufunc__ = None  # NumPy defers ``ndarray == self`` to ``self.__eq__``
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, test: Callable[[Any], bool]) -> None:
        self.test = test

    def __eq__(self, other: object) -> bool:
        return self.test(other)


_PYTREE_FLAGS = operator.attrgetter("_initializing", "_is_setup")
_METADATA = operator.attrgetter("_var_metadata")
_RAW = operator.attrgetter("_raw_value")


_deref = operator.call  # a weak reference's referent, in C: map(_deref, refs)
#: ``.trace``: the current JAX trace (Flax's ``current_jax_trace`` wraps its weak reference)
_TRACING = private_api.jax_tracing_context()


class Graph:
    """One walk's record of a call's roots (Flax's ``graphlib.flatten``, one reference map over
    every root, as ``nnx.jit`` splits them), and a second walk's copies of what a later call
    must find again (every node's ``__dict__`` and container, an array as its type and a root
    by weak reference (:class:`_Like`), ``PytreeState`` flags, Variables' metadata).
    ``targets``: per leaf, its Variable or, for an array attribute, ``(parent, key, root)``
    (``root`` -1: parent held here); ``by_index``: the indexed objects, a root as ``("root", position)``.
    """

    def __init__(self, roots: list[Any], fx: SimpleNamespace) -> None:
        graphlib = fx.graphlib
        self.trace = _TRACING.trace._weakref
        root_ids = {id(r): k for k, r in enumerate(roots)}
        # a Variable argument has no weak reference: held for this call only (its record is not kept)
        self.root_refs = [(lambda r=r: r) if isinstance(r, fx.Variable) else weakref.ref(r) for r in roots]
        ref_index = graphlib.RefMap()
        graphdefs: list[Any] = []
        leaves: list[Any] = []
        paths: list[tuple] = []
        owners: list[int] = []
        for k, root in enumerate(roots):
            gd, flat = graphlib.flatten(root, ref_index=ref_index, with_paths=True, graph=True)
            graphdefs.append(gd)
            leaves += flat.leaves
            paths += [(k, p) for p in flat.paths]
            owners += [k] * len(flat.leaves)
        self.graphdefs = tuple(graphdefs)
        self.n_leaves, self.owners = len(leaves), owners
        self.by_index = [("root", root_ids[id(o)]) if id(o) in root_ids else o for o in ref_index]  # ordered
        self.variables, self.targets = [], []
        for leaf, (k, path) in zip(leaves, paths):
            if isinstance(leaf, fx.Variable):
                meta = leaf._var_metadata
                if meta.get("hijax") or meta.get("ref") or fx.is_array_ref(leaf._raw_value):
                    raise Uncacheable("hijax or ref Variable")
                if leaf._trace_state._jax_trace != fx.trace():
                    raise Uncacheable("Variable of another trace")
                if type(leaf).set_raw_value is not fx.Variable.set_raw_value:
                    raise Uncacheable("a Variable type with its own set_raw_value")
                self.variables.append(leaf)
                self.targets.append(leaf)
            else:
                self.targets.append(self._slot(roots, k, path, root_ids))
        self.leaf_slots = len(self.targets) > len(self.variables)
        self._snapshot(roots, root_ids, fx)

    @staticmethod
    def _slot(roots: list, k: int, path: tuple, root_ids: dict) -> tuple:
        parent: Any = roots[k]
        for key in path[:-1]:
            parent = vars(parent)[str(key)] if hasattr(parent, "__dict__") else parent[key]
        if isinstance(parent, tuple):
            raise Uncacheable("array leaf inside a tuple")
        key = str(path[-1]) if hasattr(parent, "__dict__") else path[-1]
        root = root_ids.get(id(parent), -1)
        return (None if root >= 0 else parent), key, root

    def _snapshot(self, roots: list, root_ids: dict, fx: SimpleNamespace) -> None:
        """Copies of every node's and mutable container's contents, by walking the graph."""
        graphlib = fx.graphlib
        seen: set[int] = set()
        # roots are the call's arguments (not held); (a probe, an object held here) and a copy of what
        # the probe returned: Variables' metadata, other nodes' attributes, PytreeState flags
        root_snaps: dict[int, dict] = {}
        self.probes: list[tuple] = [(_METADATA, v) for v in self.variables]
        self.snaps: list[Any] = [dict(v._var_metadata) for v in self.variables]
        self.containers: list[Any] = []  # lists, dicts and State mappings, held here
        self.container_snaps: list[Any] = []

        def entry(value: Any, weak: bool = False) -> Any:
            if id(value) in root_ids:
                if not weak:  # a strongly held node would keep the argument alive
                    raise Uncacheable("a node inside the graph references an argument")
                ref = weakref.ref(value)
                return _Like(lambda other: ref() is other)
            impl = graphlib.get_node_impl(value)
            if impl is None and not isinstance(value, fx.Variable):
                if isinstance(value, (np.ndarray, jax.Array)):
                    kind = type(value)
                    return _Like(lambda other: type(other) is kind)
            return value

        def walk(node: Any) -> None:
            if node is None or id(node) in seen or isinstance(node, fx.Variable):
                return
            seen.add(id(node))
            impl = graphlib.get_node_impl(node)
            if impl is None:
                return
            if isinstance(node, fx.PytreeState):
                self.probes.append((_PYTREE_FLAGS, node))
                self.snaps.append(_PYTREE_FLAGS(node))
                return
            values, _ = impl.flatten(node)
            elems = (graphlib.DataElem, graphlib.StaticElem)
            static = {str(k) for k, v in values if isinstance(v, graphlib.StaticElem)}
            children = [v.value if isinstance(v, elems) else v for k, v in values if str(k) not in static]
            if isinstance(node, fx.Pytree):
                is_root = id(node) in root_ids
                snap = {k: (v if k in static else entry(v, is_root)) for k, v in vars(node).items()}
                if is_root:
                    root_snaps[id(node)] = snap
                else:
                    self.probes.append((vars, node))
                    self.snaps.append(snap)
            elif type(node) is list:
                self.containers.append(node)
                self.container_snaps.append([entry(v) for v in node])
            elif type(node) is dict:
                self.containers.append(node)
                self.container_snaps.append({k: entry(v) for k, v in node.items()})
            elif isinstance(node, fx.State):  # a mapping over a dict: both checked
                self.probes.append((vars, node))
                self.snaps.append(dict(vars(node)))
                self.containers.append(node._mapping)
                self.container_snaps.append({k: entry(v) for k, v in node._mapping.items()})
            elif isinstance(node, tuple):
                for child in children:
                    entry(child)  # no argument inside
            else:
                raise Uncacheable(f"container of type {type(node).__name__}")
            for child in children:
                walk(child)

        for root in roots:
            walk(root)
        self.root_snaps = [root_snaps.get(id(r)) for r in roots]  # a Variable root's None: never a hit

    def unchanged(self, roots: Sequence[Any]) -> bool:
        """Whether ``roots`` are the recorded objects and their graph the one recorded (and the
        trace the same)."""
        try:
            return (
                all(map(operator.is_, map(_deref, self.root_refs), roots))
                and self.root_snaps == [vars(root) for root in roots]
                and self.snaps == [probe(obj) for probe, obj in self.probes]
                and self.container_snaps == self.containers
                and _TRACING.trace._weakref is self.trace
            )
        except Exception:  # a static attribute whose == raises
            return False

    def values(self, roots: Sequence[Any]) -> tuple:
        """The graph's leaves now, in Flax's order: Variables' raw values and array attributes."""
        if not self.leaf_slots:
            return tuple(map(_RAW, self.variables))
        return tuple(
            t._raw_value if type(t) is not tuple else self._holder(roots, t)[t[1]] for t in self.targets
        )

    @staticmethod
    def _holder(roots: Sequence[Any], slot: tuple) -> Any:
        """What holds an array attribute: its parent's ``__dict__``, or the container itself."""
        holder = roots[slot[2]] if slot[0] is None else slot[0]
        return vars(holder) if hasattr(holder, "__dict__") else holder

    def write(self, roots: Sequence[Any], positions: tuple, new: tuple) -> None:
        """Write the call's updated leaves back into the caller's Variables and attributes."""
        for i, value in zip(positions, new):
            target = self.targets[i]
            if type(target) is not tuple:
                object.__setattr__(target, "_raw_value", value)
            else:  # an attribute: set in the parent's __dict__ (as object.__setattr__ does), or an item
                self._holder(roots, target)[target[1]] = value


class Abort(Exception):
    """Raised inside a trace whose call ``nnx.jit`` must make instead; carries the reason."""


def _same(value: Any, before: tuple[list, Any]) -> bool:
    """Whether a leaf left the trace as it entered (``before``: its leaves and treedef then)."""
    leaves, treedef = jtu.tree_flatten(value)
    return treedef == before[1] and all(x is y for x, y in zip(leaves, before[0]))


class Entry:
    """One ``jax.jit`` per graph structure, static arguments and argument treedef. ``record``: what
    its first trace found, ``("values", changed leaves, output treedef)`` or ``("graph",
    graphdefs, output treedef, which outputs are graph nodes)``; a later trace that finds
    another aborts, and the entry goes to ``nnx.jit``."""

    def __init__(
        self, owner: CachedNnxJit, graph: Graph, treedef: Any, node_pos: tuple, statics: tuple, donated: list
    ) -> None:
        self.record: Any = None
        self.fallback = ""
        self._lock = threading.Lock()
        self.n_graph = graph.n_leaves
        self.donated = tuple(i for i, d in enumerate(donated) if d)
        self.kept = tuple(
            i for i in range(self.n_graph + treedef.num_leaves - len(node_pos)) if i not in self.donated
        )
        n_donated_graph = {i for i in self.donated if i < self.n_graph}
        fx, fun, graphdefs = flax(), owner.fun, graph.graphdefs
        graphlib, is_node = fx.graphlib, owner._is_node

        def inner(kept: tuple, donated: tuple) -> tuple:
            values: list[Any] = [None] * (len(kept) + len(donated))
            for i, v in zip(self.kept + self.donated, kept + donated):
                values[i] = v
            graph_in, rest = values[: self.n_graph], iter(values[self.n_graph :])
            index_ref, roots, start = graphlib.IndexMap(), [], 0
            for gd in graphdefs:
                roots.append(
                    graphlib.unflatten(gd, graph_in[start : start + gd.num_leaves], index_ref=index_ref)
                )
                start += gd.num_leaves
            root_at = dict(zip(node_pos, roots))
            leaves = [root_at[i] if i in root_at else next(rest) for i in range(treedef.num_leaves)]
            call_args, call_kwargs = owner._with_statics(treedef.unflatten(leaves), statics)
            before = [jtu.tree_flatten(v) for v in graph_in]
            out = fun(*call_args, **call_kwargs)
            ref_index, after, gds = graphlib.RefMap(), [], []
            for root in roots:
                gd, flat = graphlib.flatten(root, ref_index=ref_index, with_paths=False, graph=True)
                gds.append(gd)
                after += flat
            out_leaves, out_def = jtu.tree_flatten(out, is_leaf=is_node)
            same = tuple(gds) == graphdefs and all(ref_index.get(obj) == i for i, obj in index_ref.items())
            if same and not any(map(is_node, out_leaves)):
                changed = tuple(
                    i for i in range(self.n_graph) if i in n_donated_graph or not _same(after[i], before[i])
                )
                self._settle(("values", changed, out_def))
                return tuple(after[i] for i in changed), out
            # The graph changed, or graph nodes are returned: split the arguments and outputs again,
            # one reference map over all, as nnx.jit's inner split does; the caller merges them.
            to_outer = graphlib.RefMap((obj, i) for i, obj in index_ref.items())
            refs, split = graphlib.RefMap(), []
            for node in [*roots, *filter(is_node, out_leaves)]:
                split.append(
                    graphlib.flatten(
                        node, ref_index=refs, ref_outer_index=to_outer, with_paths=False, graph=True
                    )
                )
            kinds = tuple(is_node(leaf) for leaf in out_leaves)
            self._settle(("graph", tuple(gd for gd, _ in split), out_def, kinds))
            return [leaves for _, leaves in split], [leaf for leaf in out_leaves if not is_node(leaf)]

        inner.__name__ = getattr(fun, "__name__", "fun")
        inner.__qualname__ = getattr(fun, "__qualname__", inner.__name__)
        self.jitted = jax.jit(inner, donate_argnums=(1,) if self.donated else (), **owner._jit_options)

    def _settle(self, record: tuple) -> None:
        with self._lock:
            if self.record is None:
                self.record = record
            elif self.record != record:
                self.fallback = "outputs differ between traces"
                raise Abort(self.fallback)


_MISSING: Any = object()
#: positional arguments of these types keep a call on the fast path (no pytree flatten)
_LEAF_TYPES = (jax.Array, np.ndarray, np.generic, int, float, complex, bool)
_FALLBACKS: collections.Counter[str] = collections.Counter()
_REFUSALS: collections.Counter[str] = collections.Counter()


def nnx_refusal_counts() -> dict[str, int]:
    """``cached_nnx_jit`` wrappers this process refused to make (a ValueError), by option."""
    return dict(_REFUSALS)


def nnx_fallback_counts() -> dict[str, int]:
    """Calls every ``cached_nnx_jit`` in this process handed to ``nnx.jit``, by reason."""
    return dict(_FALLBACKS)


def _resolve(fun: Callable, nums: Any, names: Any) -> tuple[frozenset[int], frozenset[str]]:
    """``(positions, names)``, each inferred from the other as ``jax.jit`` resolves ``*_argnums``."""
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


#: a call's graph record and entry, and (``fast``) the positional fast path's checks
_Record = collections.namedtuple("_Record", ("graph", "entry", "fast"))


def _forget(owner_ref: weakref.ref, key: Any) -> None:
    owner = owner_ref()
    if owner is not None:
        record = owner._records.pop(key, None)
        if record is not None and owner._last is record:
            owner._last = None


class CachedNnxJit:
    """What ``cached_nnx_jit`` returns; ``stats`` (hits, misses, fallbacks), ``fallback_reasons``."""

    def __init__(self, fun: Callable, **options: Any) -> None:
        fx = flax()
        self._fallback = fx.jit(fun, **options)  # nnx.jit's checks and errors, and its fallback
        functools.update_wrapper(self, fun)
        self.fun = fun
        for name in ("in_shardings", "out_shardings"):
            if options.get(name) is not None:
                _REFUSALS[name] += 1
                raise bad_value(
                    name,
                    options[name],
                    "None: cached_nnx_jit makes no sharded calls; place the arrays with jax.device_put "
                    "(or nnx.with_sharding_constraint inside the step), or keep nnx.jit for this call",
                )
        if not isinstance(self._fallback, fx.nnx.transforms.compilation.JitWrapped):
            name = "graph_updates" if options.get("graph_updates") is False else "graph"
            _REFUSALS["tree mode"] += 1
            raise bad_value(
                name,
                options.get(name),
                "graph mode with graph updates (graph=True, graph_updates=True, or Flax's default when "
                "it is graph mode): cached_nnx_jit caches nnx.jit's walk of the object graph, which "
                "tree mode does not make; keep nnx.jit for a tree-mode step",
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
        self._hits = self._misses = self._fallbacks = 0
        self.fallback_reasons: collections.Counter[str] = collections.Counter()

    @property
    def stats(self) -> dict[str, int]:
        return {"hits": self._hits, "misses": self._misses, "fallbacks": self._fallbacks}

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __getattr__(self, name: str) -> Any:
        if name in ("lower", "trace", "eval_shape"):  # nnx.jit's own
            return getattr(self._fallback, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        record = self._last
        if record is not None and not kwargs and self._graph_context.tmp_static_cache is None:
            graph, entry, (types, node_at, pass_at, static_at, statics) = record
            if (
                types == tuple(map(type, args))
                and (not static_at or [args[i] for i in static_at] == statics)
                and graph.unchanged(roots := [args[i] for i in node_at])
            ):
                self._hits += 1
                done = entry.record  # the common case inline: no array attributes, nothing donated
                if done and done[0] == "values" and not (entry.fallback or entry.donated or graph.leaf_slots):
                    try:
                        updates, out = entry.jitted(
                            (*map(_RAW, graph.variables), *[args[i] for i in pass_at]), ()
                        )
                    except Abort as reason:
                        entry.fallback = entry.fallback or str(reason)
                        return self._fall_back(str(reason), args, kwargs)
                    if updates:  # the values the function changed
                        graph.write(roots, done[1], updates)
                    return out
                return self._run(record, roots, tuple([args[i] for i in pass_at]), args, kwargs)
        return self._call(args, kwargs)

    def _fall_back(self, reason: str, args: tuple, kwargs: dict) -> Any:
        self._fallbacks += 1
        self.fallback_reasons[reason] += 1
        _FALLBACKS[reason] += 1
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
        if self._graph_context.tmp_static_cache is not None:  # inside nnx.cached_partial: nnx.jit's
            return self._fall_back("called through nnx.cached_partial", args, kwargs)
        statics, dyn_args, dyn_kwargs = self._split_static(args, kwargs)
        leaves, treedef = jtu.tree_flatten((dyn_args, dyn_kwargs), is_leaf=self._is_node)
        node_pos = tuple(i for i, leaf in enumerate(leaves) if self._is_node(leaf))
        roots = [leaves[i] for i in node_pos]
        key = (treedef, node_pos, tuple(map(id, roots)), statics)
        try:
            record = self._records.get(key)
        except TypeError:  # an unhashable static argument: nnx.jit's (jax.jit's) error
            return self._fallback(*args, **kwargs)
        if record is None or not record.graph.unchanged(roots):
            try:
                record = self._record(key, args, kwargs, leaves, treedef, node_pos, statics)
            except Uncacheable as reason:
                return self._fall_back(str(reason), args, kwargs)
            self._misses += 1
        else:
            self._hits += 1
        if record.fast is not None:
            self._last = record
        passthrough = tuple([leaf for i, leaf in enumerate(leaves) if i not in node_pos])
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
        if any(isinstance(root, fx.Variable) for root in roots):  # held strongly: this call's alone
            return _Record(graph, entry, None)
        fast = None
        plain = not kwargs and len(leaves) == len(at) and all(args[i] is leaf for i, leaf in zip(at, leaves))
        if plain and all(isinstance(leaf, _LEAF_TYPES) for i, leaf in enumerate(leaves) if i not in node_pos):
            node_at = tuple(at[i] for i in node_pos)
            pass_at = tuple(at[i] for i in range(len(at)) if i not in node_pos)
            static_at = tuple(i for i in range(len(args)) if i in self._static[0])
            fast = (tuple(map(type, args)), node_at, pass_at, static_at, [args[i] for i in static_at])
        record = _Record(graph, entry, fast)
        if key not in self._records:
            for root in roots:
                weakref.finalize(root, _forget, weakref.ref(self), key)
        self._records[key] = record
        return record

    def _donated_leaves(self, graph: Graph, treedef: Any, node_pos: tuple, at: list) -> list[bool]:
        """Per leaf of a call (the graph's, then the others): donated or not."""
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

    def _run(self, record: _Record, roots: list, passthrough: tuple, args: tuple, kwargs: dict) -> Any:
        entry, graph = record.entry, record.graph
        if entry.fallback:
            return self._fall_back(entry.fallback, args, kwargs)
        values = graph.values(roots) + passthrough
        try:
            if entry.donated:
                kept, donated = (tuple([values[i] for i in at]) for at in (entry.kept, entry.donated))
                updates, out = entry.jitted(kept, donated)
            else:
                updates, out = entry.jitted(values, ())
        except Abort as reason:
            entry.fallback = entry.fallback or str(reason)
            return self._fall_back(str(reason), args, kwargs)
        if entry.record[0] == "graph":
            return self._merge(record, roots, updates, out)
        if updates:  # the values the function changed (and the donated ones)
            graph.write(roots, entry.record[1], updates)
        return out

    @staticmethod
    def _merge(record: _Record, roots: list, split: list, arrays: list) -> Any:
        """Merge a call that changed the graph into the caller's objects, as nnx.jit's outer merge does."""
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
