"""What ``cached_nnx_jit`` remembers of a call's object graph, and how it checks it is unchanged.

One walk of the graph (Flax's own ``graphlib.flatten``, with one reference map over every
graph node of the call, as ``nnx.jit`` splits them) gives the graph definitions that select
the compiled function. A second walk, here, records what a later call must find again for
that compiled function and this call's Variables to still be right:

- every graph node's ``__dict__``, compared with a copy as a whole (C's dict comparison: each
  attribute by identity, else ``==``, as ``nnx.jit``'s graph definition compares its static
  attributes); an array attribute compares by type only (:class:`_TypeOf`), as its value is
  the call's input, and a back-reference to a call's argument compares by weak reference
  (:class:`_Weak`), so that no record keeps an argument alive;
- every mutable container in the graph (``list``, ``dict``) likewise; tuples need nothing,
  their parent's identity check covers them; ``PytreeState``'s two flags;
- every Variable's metadata, against a copy (``set_metadata`` mutates it in place).

Graph nodes are held strongly except the call's arguments (the roots), which are held weakly,
and a record is dropped when a root dies: the record never keeps a model alive. A graph that
this cannot record exactly raises :class:`Uncacheable`, and the call goes to ``nnx.jit``: array
references, ``hijax``/``ref`` Variables, an array in a tuple, a container type it does not
know, a Variable of another trace, or of a type that overrides ``set_raw_value`` (which
nnx.jit's merge calls; a hit writes ``_raw_value``), a node inside the graph that references
an argument (a strongly held node would keep the argument alive).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import jax
import numpy as np

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


class _TypeOf:
    """Stands for an array attribute in a snapshot: equal to any value of the same type."""

    __slots__ = ("type",)
    __array_ufunc__ = None  # NumPy defers ``ndarray == self`` to ``self.__eq__``
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, kind: type) -> None:
        self.type = kind

    def __eq__(self, other: object) -> bool:
        return type(other) is self.type


class _Weak:
    """Stands for a call's argument referenced from inside its graph: equal to it alone."""

    __slots__ = ("ref",)
    __array_ufunc__ = None
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, obj: Any) -> None:
        self.ref = weakref.ref(obj)

    def __eq__(self, other: object) -> bool:
        return self.ref() is other


_PYTREE_FLAGS = operator.attrgetter("_initializing", "_is_setup")
_METADATA = operator.attrgetter("_var_metadata")
_RAW = operator.attrgetter("_raw_value")


def _deref(ref: weakref.ref) -> Any:
    return ref()


class Graph:
    """One walk's record of the graph of a call's roots (see the module docstring).

    ``graphdefs``: one per root, in order, from one reference map; ``variables``: the
    Variables in Flax's leaf order; ``leaf_slots``: ``(position, parent, key, root)`` for each
    array attribute among the leaves (``root`` is the parent's root index, or -1 when the
    parent is held here); ``by_index``: the graph's indexed objects, a root as its position.
    """

    def __init__(self, roots: list[Any], fx: SimpleNamespace) -> None:
        graphlib = fx.graphlib
        self.trace = fx.trace()
        root_ids = {id(r): k for k, r in enumerate(roots)}
        self.root_refs = [weakref.ref(r) for r in roots]  # TypeError: not weakly referenceable
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
        self.by_index = [root_ids.get(id(obj), obj) for obj in ref_index]  # RefMap keeps order
        self.by_index = [("root", v) if isinstance(v, int) else v for v in self.by_index]
        self.variables, self.leaf_slots = [], []
        for position, (leaf, (k, path)) in enumerate(zip(leaves, paths)):
            if isinstance(leaf, fx.Variable):
                meta = leaf._var_metadata
                if meta.get("hijax") or meta.get("ref") or fx.is_array_ref(leaf._raw_value):
                    raise Uncacheable("hijax or ref Variable")
                if leaf._trace_state._jax_trace != self.trace:
                    raise Uncacheable("Variable of another trace")
                if type(leaf).set_raw_value is not fx.Variable.set_raw_value:
                    raise Uncacheable("a Variable type with its own set_raw_value")
                self.variables.append(leaf)
            else:
                self.leaf_slots.append(self._slot(position, roots, k, path, root_ids))
        self.var_positions = [p for p, leaf in enumerate(leaves) if isinstance(leaf, fx.Variable)]
        self.metadata = [dict(v._var_metadata) for v in self.variables]
        self._snapshot(roots, root_ids, fx)

    @staticmethod
    def _slot(position: int, roots: list, k: int, path: tuple, root_ids: dict) -> tuple:
        parent: Any = roots[k]
        for key in path[:-1]:
            parent = vars(parent)[str(key)] if hasattr(parent, "__dict__") else parent[key]
        key = path[-1]
        if isinstance(parent, tuple):
            raise Uncacheable("array leaf inside a tuple")
        if hasattr(parent, "__dict__"):
            key = str(key)
        root = root_ids.get(id(parent), -1)
        return position, (None if root >= 0 else parent), key, root

    def _snapshot(self, roots: list, root_ids: dict, fx: SimpleNamespace) -> None:
        """Copies of every node's and mutable container's contents, by walking the graph."""
        graphlib = fx.graphlib
        seen: set[int] = set()
        # roots, checked through a weak reference; other graph nodes, held strongly; lists,
        # dicts and State mappings, held strongly; PytreeStates and their flags
        self.node_refs: list[weakref.ref] = []
        self.node_snaps: list[dict] = []
        self.held: list[Any] = []
        self.held_snaps: list[dict] = []
        self.containers: list[Any] = []
        self.container_snaps: list[Any] = []
        self.states: list[Any] = []
        self.state_flags: list[tuple] = []

        def entry(value: Any, weak: bool = False) -> Any:
            if id(value) in root_ids:
                if not weak:  # a strongly held node would keep the argument alive
                    raise Uncacheable("a node inside the graph references an argument")
                return _Weak(value)
            impl = graphlib.get_node_impl(value)
            if impl is None and not isinstance(value, fx.Variable):
                if isinstance(value, (np.ndarray, jax.Array)):
                    return _TypeOf(type(value))
            return value

        def walk(node: Any) -> None:
            if node is None or id(node) in seen or isinstance(node, fx.Variable):
                return
            seen.add(id(node))
            impl = graphlib.get_node_impl(node)
            if impl is None:
                return
            if isinstance(node, fx.PytreeState):
                self.states.append(node)
                self.state_flags.append(_PYTREE_FLAGS(node))
                return
            values, _ = impl.flatten(node)
            elems = (graphlib.DataElem, graphlib.StaticElem)
            static = {str(k) for k, v in values if isinstance(v, graphlib.StaticElem)}
            children = [v.value if isinstance(v, elems) else v for k, v in values if str(k) not in static]
            if isinstance(node, fx.Pytree):
                is_root = id(node) in root_ids
                snap = {k: (v if k in static else entry(v, is_root)) for k, v in vars(node).items()}
                if is_root:
                    self.node_refs.append(weakref.ref(node))
                    self.node_snaps.append(snap)
                else:
                    self.held.append(node)
                    self.held_snaps.append(snap)
            elif type(node) is list:
                self.containers.append(node)
                self.container_snaps.append([entry(v) for v in node])
            elif type(node) is dict:
                self.containers.append(node)
                self.container_snaps.append({k: entry(v) for k, v in node.items()})
            elif isinstance(node, fx.State):  # a mapping over a dict: both checked
                self.held.append(node)
                self.held_snaps.append(dict(vars(node)))
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

    # ------------------------------------------------------------ per call

    def unchanged(self, roots: Sequence[Any]) -> bool:
        """Whether the graph of ``roots`` is still the one recorded (and the trace the same)."""
        try:
            return (
                fx_trace() == self.trace
                and self.node_snaps == [vars(n) for n in map(_deref, self.node_refs)]
                and self.held_snaps == list(map(vars, self.held))
                and self.container_snaps == self.containers
                and self.state_flags == list(map(_PYTREE_FLAGS, self.states))
                and self.metadata == list(map(_METADATA, self.variables))
            )
        except Exception:  # a dead root (vars(None)), a static attribute whose == raises
            return False

    def values(self, roots: Sequence[Any]) -> list:
        """The graph's leaves now, in Flax's order: Variables' raw values and array attributes."""
        raw = list(map(_RAW, self.variables))
        if not self.leaf_slots:
            return raw
        out: list[Any] = [None] * self.n_leaves
        for position, value in zip(self.var_positions, raw):
            out[position] = value
        for position, parent, key, root in self.leaf_slots:
            holder = roots[root] if parent is None else parent
            out[position] = vars(holder)[key] if hasattr(holder, "__dict__") else holder[key]
        return out

    def write(self, roots: Sequence[Any], positions: tuple, new: tuple) -> None:
        """Write the call's updated leaves back into the caller's Variables and attributes."""
        variables, slots = self.variables, self.leaf_slots
        if not slots:
            for i, value in zip(positions, new):
                object.__setattr__(variables[i], "_raw_value", value)
            return
        by_position = dict(zip(self.var_positions, variables))
        slot_of = {s[0]: s for s in slots}
        for i, value in zip(positions, new):
            if i in by_position:
                object.__setattr__(by_position[i], "_raw_value", value)
            else:
                _, parent, key, root = slot_of[i]
                holder = roots[root] if parent is None else parent
                if hasattr(holder, "__dict__"):
                    object.__setattr__(holder, key, value)
                else:
                    holder[key] = value


def fx_trace() -> Any:
    return flax().trace()
