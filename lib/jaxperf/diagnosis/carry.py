"""The reader's loop, read off one call: which outputs become the next call's arguments
(the carry), fresh copies of the arguments for each path, and where two results first differ.
The step's ``return`` statement names outputs (``return loss, model, opt_state``); the rest
are matched by kind (a 0-d argument only by an expression naming it, as ``step + 1``), and an
ambiguous argument is an error listing the candidates."""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from collections.abc import Callable, Collection, Mapping
from typing import Any

import jax
import numpy as np

from ..errors import bad_value

Carry = dict[int, int]
#: the output index that stands for the whole output (a step that returns its new state only)
WHOLE = -1


def _is_array(x: Any) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _leaf_kind(x: Any) -> Any:
    """Shape and dtype of an array leaf; a Python scalar as the 0-d array a traced step makes of it."""
    if _is_array(x):
        return np.shape(x), str(x.dtype)
    if isinstance(x, (bool, int, float, complex)):
        return (), str(jax.numpy.asarray(x).dtype)
    return None


def same_kind(a: Any, b: Any) -> bool:
    """Same pytree structure, and the same shape and dtype in every array leaf."""
    try:
        (la, ta), (lb, tb) = jax.tree.flatten(a), jax.tree.flatten(b)
        return (ta, list(map(_leaf_kind, la))) == (tb, list(map(_leaf_kind, lb)))
    except (TypeError, ValueError):  # treedefs of unlike node types may refuse to compare
        return False


def parameter_names(fn: Callable[..., Any] | None) -> list[str]:
    """The positional parameter names of ``fn`` ([] when they cannot be read)."""
    try:
        params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _mentions(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def returned_names(fn: Callable[..., Any] | None) -> list[str | frozenset[str] | None] | None:
    """Per element of the tuple ``fn`` returns, the plain name it returns, else the frozenset of
    names its expression mentions, read from its source; None when unreadable or they disagree."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))  # type: ignore[arg-type]
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    func = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return None
    found: list[list[str | frozenset[str]]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue  # a nested function's return is not the step's
            if isinstance(child, ast.Return) and isinstance(child.value, (ast.Tuple, ast.List)):
                found.append([e.id if isinstance(e, ast.Name) else _mentions(e) for e in child.value.elts])
            visit(child)

    visit(func)
    if not found or any(len(f) != len(found[0]) for f in found):
        return None
    return [names[0] if len(set(names)) == 1 else None for names in zip(*found)]


def infer(
    args: tuple, out: Any, skip: int | Collection[int] | None = None, fn: Callable[..., Any] | None = None
) -> Carry:
    """argument index -> output index; ``skip``: the loader's batch (never carried; the arguments
    of a batch that fills several); ``fn``: the step's function, whose ``return`` names its outputs
    (see the module's text). ``ValueError`` listing the candidates when one matches several."""
    skipped = set() if skip is None else {skip} if isinstance(skip, int) else set(skip)
    whole = [i for i, a in enumerate(args) if i not in skipped and jax.tree.leaves(a) and same_kind(a, out)]
    if len(whole) == 1:  # ``params = step(params, x)``: the whole output is the next state
        return {whole[0]: WHOLE}
    if not isinstance(out, tuple):
        return {}
    params = parameter_names(fn)
    names = returned_names(fn) if params else None
    names = names if names is not None and len(names) == len(out) else [None] * len(out)
    carry: Carry = {}
    for i, arg in enumerate(args):
        if i in skipped or not jax.tree.leaves(arg):
            continue
        name = params[i] if i < len(params) else None
        if name is not None and name in names:
            j = names.index(name)
            if same_kind(arg, out[j]):
                carry[i] = j
    for i, arg in enumerate(args):
        if i in skipped or i in carry or not jax.tree.leaves(arg):
            continue
        # an output named after something else (another argument, a new variable) is not i's, nor is
        # an expression that does not mention a 0-d argument (a learning rate beside the loss)
        name = params[i] if i < len(params) else None
        scalar = name is not None and _leaf_kind(arg) is not None and np.ndim(arg) == 0
        free = [n is None or not isinstance(n, str) and (not scalar or name in n) for n in names]
        candidates = [
            j for j, o in enumerate(out) if j not in carry.values() and free[j] and same_kind(arg, o)
        ]
        if not candidates:
            continue
        twins = [k for k, a in enumerate(args) if k not in skipped and k not in carry and same_kind(a, arg)]
        if len(candidates) > 1 and len(candidates) != len(twins):
            label = f"argument {i}" + (f" ({name})" if name else "")
            raise bad_value(
                "carry",
                "auto",
                f"an unambiguous carry: {label} has the kind of outputs {candidates}; name it, "
                f"e.g. carry={{{i}: {candidates[0]}}} (--carry {i}={candidates[0]}), or carry=None",
            )
        carry[i] = candidates[0]
    return carry


def check(carry: Any, args: tuple, out: Any, fn: Callable[..., Any] | None = None) -> Carry:
    """A reader's own ``carry`` (arguments by index or name), checked against one call's output."""
    if not isinstance(carry, Mapping):
        raise bad_value("carry", carry, '"auto", None, or a dict {argument: output index}')
    outs = out if isinstance(out, (tuple, list)) else (out,)
    params = parameter_names(fn)
    resolved: Carry = {}
    for i, j in carry.items():
        if isinstance(i, str) and i in params:
            i = params.index(i)
        if not (isinstance(i, int) and 0 <= i < len(args)):
            named = f" or names among {params[: len(args)]}" if params else ""
            raise bad_value("carry", dict(carry), f"argument indices in 0..{len(args) - 1}{named}")
        if not (isinstance(j, int) and WHOLE <= j < len(outs)):
            raise bad_value("carry", dict(carry), f"output indices in 0..{len(outs) - 1}, or -1 (all of it)")
        if not same_kind(args[i], output(out, j)):
            raise bad_value(
                "carry",
                dict(carry),
                f"outputs like the arguments they replace (argument {i} vs output {j} differ)",
            )
        resolved[i] = j
    return resolved


def apply(carry: Carry, out: Any, args: tuple) -> tuple:
    """The next call's arguments: ``args`` with each carried one replaced by its output."""
    return tuple(output(out, carry[i]) if i in carry else a for i, a in enumerate(args))


def output(out: Any, j: int) -> Any:
    """Output ``j`` of a step's result (:data:`WHOLE`: all of it)."""
    return out if j == WHOLE else out[j] if isinstance(out, (tuple, list)) else (out,)[j]


def _copy_arrays(tree: Any) -> Any:
    """``tree`` with every array copied to a new buffer on its sharding, in one transfer."""
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
    """A copy with new array buffers on the same shardings (a donated path must not consume
    another's inputs), other leaves the same objects, NNX modules new objects."""
    if _has_graph_nodes(tree):
        from flax import nnx

        graphdef, state = nnx.split(tree)
        return nnx.merge(graphdef, _copy_arrays(state))
    return _copy_arrays(tree)


def _extended(x: Any) -> bool:
    """A typed PRNG key, or any other extended dtype."""
    return getattr(x, "dtype", None) is not None and jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended)


#: stands for an array a donating call consumed: its value is gone, on both sides
DONATED = "<donated>"


def host(tree: Any) -> Any:
    """``tree`` on the host, each array a donating call consumed replaced by :data:`DONATED`."""
    return jax.device_get(
        jax.tree.map(lambda x: DONATED if isinstance(x, jax.Array) and x.is_deleted() else x, tree)
    )


def first_difference(reference: Any, got: Any, prefix: str = "") -> str | None:
    """None when ``got`` equals ``reference`` leaf by leaf (arrays allclose at their dtype's
    tolerance, typed PRNG keys by their key data, Python scalars and other leaves ==, None
    as structure; a :data:`DONATED` leaf matches anything); else the first leaf path that
    differs (after ``prefix``) and by how much."""
    is_leaf = lambda x: x is None  # noqa: E731 -- None is a value the step returned, compared too
    ref_leaves, ref_def = jax.tree_util.tree_flatten_with_path(reference, is_leaf=is_leaf)
    got_leaves, got_def = jax.tree_util.tree_flatten_with_path(got, is_leaf=is_leaf)
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
        if _is_array(a) or _is_array(b) or _extended(a) or _extended(b):
            try:
                a_np, b_np = (np.asarray(jax.random.key_data(x) if _extended(x) else x) for x in (a, b))
            except (TypeError, ValueError) as err:
                return f"{where}: cannot be compared ({type(err).__name__}: {err})"
            if a_np.shape != b_np.shape:
                return f"{where}: shape {a_np.shape} vs {b_np.shape}"
            if "O" in (a_np.dtype.kind, b_np.dtype.kind):
                if not np.array_equal(a_np, b_np):
                    return f"{where}: values differ"
                continue
            low = a_np.dtype == np.float16 or "bfloat16" in str(a_np.dtype)
            rtol, atol = (1e-2, 1e-3) if low else (1e-5, 1e-6)
            if not np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=True):
                if a_np.dtype.kind in "fcbiu" and a_np.size:
                    diff = np.max(np.abs(a_np.astype(np.float64) - b_np.astype(np.float64)))
                    return f"{where}: largest difference {diff:.3g}"
                return f"{where}: values differ"
        else:
            try:
                same = bool(a == b)
            except Exception:  # noqa: BLE001 -- an object whose == is not a bool
                same = a is b
            if not same:
                return f"{where}: {a!r} vs {b!r}"[:200]
    return None
