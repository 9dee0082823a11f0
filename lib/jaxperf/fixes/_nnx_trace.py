"""The ``jax.jit`` behind ``cached_nnx_jit``: one per graph structure, static arguments and
argument structure. Its traced function rebuilds the graph from the leaves' values (Flax's
``graphlib.unflatten``), calls the function, flattens the graph again, and returns only the
leaves the function changed (and every donated one), with the outputs; when the function
changed the graph's structure or returns graph nodes, it returns the whole graph split as
``nnx.jit``'s inner split does, for the caller to merge. It aborts (raises :class:`Abort`, so
that ``nnx.jit`` makes the call) when its record of the outputs differs from the first
trace's: a compiled function in JAX's cache therefore always belongs to the record the
wrapper reads after a call.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import jax
import jax.tree_util as jtu

from ._nnx_graph import Graph, flax

if TYPE_CHECKING:
    from .nnx import CachedNnxJit


class Abort(Exception):
    """Raised inside a trace whose call ``nnx.jit`` must make instead; carries the reason."""


def _flat(value: Any) -> tuple[list, Any]:
    leaves, treedef = jtu.tree_flatten(value)
    return leaves, treedef


def _same(value: Any, before: tuple[list, Any]) -> bool:
    """Whether a leaf left the trace as it entered (``before``: its jax leaves and treedef then,
    taken before the call, as a Variable's pytree value may be mutated in place)."""
    leaves, treedef = _flat(value)
    return treedef == before[1] and all(x is y for x, y in zip(leaves, before[0]))


class Entry:
    """One ``jax.jit`` for a graph structure, static arguments and argument treedef. ``record``:
    what its first trace found, which every later trace must find again, or the trace is
    abandoned and the entry handed to ``nnx.jit``: ``("values", changed leaves, output treedef)``
    when the graph kept its structure and no graph node is returned (the caller writes the
    changed values into its Variables), else ``("graph", graph definitions, output treedef,
    which outputs are graph nodes)`` (the caller merges them into its objects as nnx.jit does)."""

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
            for i, v in zip(self.kept, kept):
                values[i] = v
            for i, v in zip(self.donated, donated):
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
            before = [_flat(v) for v in graph_in]
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
            # The graph changed, or graph nodes are returned: split the arguments and the outputs
            # again, one reference map over all, each node that entered marked with its index
            # (``outer_index``), as nnx.jit's inner split does; the caller merges as nnx.jit does.
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
