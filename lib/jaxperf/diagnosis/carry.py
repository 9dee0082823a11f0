"""The reader's loop, read off one call: which outputs become the next call's arguments
(the carry), fresh copies of the arguments for each path, and where two results first differ.

The seed's loop ``loss, model, opt_state = step(model, x, opt_state)`` passes its state
along; a diagnosis times every path that way. The carry is inferred from one call: each
argument is matched to the first unused element of a tuple output with the same pytree
structure and the same shape and dtype in every array leaf (a step that updates its
modules in place, as Flax NNX steps do, carries nothing). A reader whose step does not
fit passes ``carry={argument index: output index}``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from ..errors import bad_value

Carry = dict[int, int]


def _is_array(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _avals(tree: Any) -> tuple[Any, list[Any]]:
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, [(np.shape(x), np.dtype(x.dtype)) if _is_array(x) else None for x in leaves]


def same_kind(a: Any, b: Any) -> bool:
    """Same pytree structure, and the same shape and dtype in every array leaf."""
    try:
        return _avals(a) == _avals(b)
    except (TypeError, ValueError):  # treedefs of unlike node types may refuse to compare
        return False


def infer(args: tuple, out: Any, skip: int | None = None) -> Carry:
    """argument index -> output index, by :func:`same_kind`; ``skip``: the loader's batch."""
    if not isinstance(out, (tuple, list)):
        return {}
    carry: Carry = {}
    used: set[int] = set()
    for i, arg in enumerate(args):
        if i == skip or not jax.tree.leaves(arg):
            continue
        for j, element in enumerate(out):
            if j not in used and same_kind(arg, element):
                carry[i] = j
                used.add(j)
                break
    return carry


def check(carry: Any, args: tuple, out: Any) -> Carry:
    """A reader's own ``carry`` mapping, checked against one call's output."""
    if not isinstance(carry, Mapping):
        raise bad_value("carry", carry, '"auto", None, or a dict {argument index: output index}')
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for i, j in carry.items():
        if not (isinstance(i, int) and 0 <= i < len(args)):
            raise bad_value("carry", dict(carry), f"argument indices in 0..{len(args) - 1}")
        if not (isinstance(j, int) and 0 <= j < len(outs)):
            raise bad_value("carry", dict(carry), f"output indices in 0..{len(outs) - 1}")
        if not same_kind(args[i], outs[j]):
            raise bad_value(
                "carry",
                dict(carry),
                f"outputs like the arguments they replace (argument {i} vs output {j} differ)",
            )
    return dict(carry)


def apply(carry: Carry, out: Any, args: tuple) -> tuple:
    """The next call's arguments: ``args`` with each carried one replaced by its output."""
    if not carry:
        return args
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(outs[carry[i]] if i in carry else a for i, a in enumerate(args))


def _copy_arrays(tree: Any) -> Any:
    """``tree`` with every jax.Array copied to a new buffer on its own sharding, in one
    transfer (a deep copy compiles a copy per shape), and numpy arrays copied."""
    leaves, treedef = jax.tree.flatten(tree)
    at = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)]
    copies = jax.device_put([leaves[i] for i in at], [leaves[i].sharding for i in at], may_alias=False)
    for i, x in zip(at, copies):
        leaves[i] = x
    leaves = [copy.copy(x) if isinstance(x, np.ndarray) else x for x in leaves]
    return jax.tree.unflatten(treedef, leaves)


def _has_graph_nodes(tree: Any) -> bool:
    try:
        from flax.nnx import graph
    except ImportError:
        return False
    items = tree if isinstance(tree, (tuple, list)) else (tree,)
    return any(graph.is_graph_node(x) for x in items)


def fresh(tree: Any) -> Any:
    """A copy whose arrays are new buffers on the same shardings and whose other leaves are
    the same objects (a donated path must not consume another path's inputs); NNX modules
    are new objects too (an in-place step must not update another path's modules)."""
    if _has_graph_nodes(tree):
        from flax import nnx

        graphdef, state = nnx.split(tree)
        return nnx.merge(graphdef, _copy_arrays(state))
    return _copy_arrays(tree)


def _tolerance(x: Any) -> tuple[float, float]:
    dtype = np.dtype(x.dtype)
    if dtype in (np.float16,) or "bfloat16" in str(dtype):
        return 1e-2, 1e-3
    return 1e-5, 1e-6


#: stands for an array a donating call consumed: its value is gone, on both sides
DONATED = "<donated>"


def host(tree: Any) -> Any:
    """``tree`` on the host, each array a donating call consumed replaced by :data:`DONATED`."""
    return jax.device_get(
        jax.tree.map(lambda x: DONATED if isinstance(x, jax.Array) and x.is_deleted() else x, tree)
    )


def first_difference(reference: Any, got: Any, prefix: str = "") -> str | None:
    """None when ``got`` equals ``reference`` leaf by leaf (arrays allclose at their dtype's
    tolerance, other leaves ==, the same structure; a :data:`DONATED` leaf matches anything);
    else the first leaf path that differs (after ``prefix``) and by how much."""
    ref_leaves, ref_def = jax.tree_util.tree_flatten_with_path(reference)
    got_leaves, got_def = jax.tree_util.tree_flatten_with_path(got)
    if str(ref_def) != str(got_def):
        ref_paths = [jax.tree_util.keystr(p) for p, _ in ref_leaves]
        got_paths = [jax.tree_util.keystr(p) for p, _ in got_leaves]
        first = next((a for a, b in zip(ref_paths, got_paths) if a != b), None)
        where = first or (ref_paths[len(got_paths)] if len(ref_paths) > len(got_paths) else "the end")
        return f"{prefix or 'the'} structure differs ({len(ref_leaves)} vs {len(got_leaves)} leaves; first at {prefix}{where})"
    for (path, a), (_, b) in zip(ref_leaves, got_leaves):
        where = prefix + jax.tree_util.keystr(path) or "the output"
        if isinstance(a, str) and a == DONATED or isinstance(b, str) and b == DONATED:
            continue
        if _is_array(a) or _is_array(b):
            a_np, b_np = np.asarray(a), np.asarray(b)
            if a_np.shape != b_np.shape:
                return f"{where}: shape {a_np.shape} vs {b_np.shape}"
            rtol, atol = _tolerance(a_np)
            if not np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=True):
                if a_np.dtype.kind in "fcbiu" and a_np.size:
                    diff = np.max(np.abs(a_np.astype(np.float64) - b_np.astype(np.float64)))
                    return f"{where}: largest difference {diff:.3g}"
                return f"{where}: values differ"
        elif a != b:
            return f"{where}: {a!r} vs {b!r}"
    return None
