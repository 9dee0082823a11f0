"""The cheaper paths of a Flax NNX step (``nnx.jit``), for :func:`jaxperf.diagnosis.diagnose`: Flax's
own mitigations (tree mode, ``nnx.cached_partial``, ``nnx.jit_partial``, ``jax.jit`` on
``nnx.split`` state) and ``jaxperf.cached_nnx_jit``, each on the reader's raw function.
An NNX step usually updates its modules in place, so every path starts from its own deep
copy of them, and its view of the next call's arguments is its modules after the call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import carry as carry_mod
from .kinds import Step
from .paths import NotApplicable, Path, _same


def _statics(step: Step) -> tuple[int, ...]:
    """The static positions: graph mode keeps them on the wrapper, tree mode on its jax.jit."""
    found = getattr(step.call, "static_argnums", None)
    if found is None:
        info = getattr(getattr(step.call, "jitted_fn", None), "_jit_info", None)
        found = getattr(info, "static_argnums", None)
    if found is None:
        return ()
    return (found,) if isinstance(found, int) else tuple(found)


def _donated(step: Step, args: tuple) -> tuple[int, ...] | None:
    return step.donated(len(args)) or None


def leading_nodes(args: tuple) -> int:
    """How many leading arguments are NNX graph nodes (modules, optimisers, Rngs)."""
    from flax.nnx import graph

    return next((i for i, arg in enumerate(args) if not graph.is_graph_node(arg)), len(args))


def reader_like(step: Step, args: tuple) -> Path:
    """The reader's own ``nnx.jit`` call on its own copies of the objects."""
    from .paths import reader

    return reader(step, args, {}, None)


def tree_mode(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    from flax import nnx

    fn = nnx.jit(
        step.raw, graph=False, static_argnums=_statics(step) or None, donate_argnums=_donated(step, args)
    )
    what = "nnx.jit in tree mode (graph=False): no graph walk, Variables as a pytree"
    return Path(
        "nnx.jit tree mode", what, fn, carry_mod.fresh(args), dict(carry), _same, batch_at, "nnx_tree"
    )


def _leading(args: tuple, carry: carry_mod.Carry, batch_at: int | None, why: str = "") -> tuple[tuple, int]:
    """(fresh copies of ``args``, how many leading modules); NotApplicable when none can be held."""
    if carry:
        raise NotApplicable("the step returns state that the next call takes" + why)
    args = carry_mod.fresh(args)
    n = leading_nodes(args)
    if not n:
        raise NotApplicable("no leading NNX module argument to bind or split")
    if batch_at is not None and batch_at < n:
        raise NotApplicable("the loader's batch is a module")
    return args, n


def _bound(
    name: str, bind: Callable[..., Any], what: str, args: tuple, carry: carry_mod.Carry, at: int | None
) -> Path:
    """A path whose leading modules are bound once (``bind(*modules)`` -> a callable of the rest)."""
    args, n = _leading(args, carry, at, " (bound modules are updated in place)")
    nodes, method = args[:n], name.replace(".", "_")
    view = lambda out, rest: (out, (*nodes, *rest))  # noqa: E731
    return Path(name, what, bind(*nodes), args[n:], {}, view, None if at is None else at - n, method)


def cached_partial(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    from flax import nnx

    if step.kind != "nnx.jit":
        raise NotApplicable("nnx.cached_partial binds a graph-mode nnx.jit step (yours is in tree mode)")
    what = "nnx.cached_partial(step, *modules): the modules' graph walked once, outside the loop"
    bind = lambda *m: nnx.cached_partial(step.call, *m)  # noqa: E731
    return _bound("nnx.cached_partial", bind, what, args, carry, batch_at)


def jit_partial(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    from flax import nnx

    if _statics(step):
        raise NotApplicable("static arguments (nnx.jit_partial binds leading modules only)")
    what = "nnx.jit_partial(step, *modules, graph=False): tree mode with the modules flattened once"
    donate = _donated(step, args)
    bind = lambda *m: nnx.jit_partial(step.raw, *m, graph=False, donate_argnums=donate)  # noqa: E731
    return _bound("nnx.jit_partial", bind, what, args, carry, batch_at)


def split_jit(
    step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None, flat: bool = False
) -> Path:
    """``jax.jit`` on ``nnx.split`` state: Flax's functional loop; ``flat``: the state's leaves
    as one list (``nnx.State`` is a pytree JAX flattens in Python, node by node: the flat list
    is the floor of a functional loop)."""
    import jax
    from flax import nnx

    if _statics(step) and not carry:
        raise NotApplicable("static arguments")
    args, n = _leading(args, carry, batch_at)
    graphdef, state = nnx.split(args[:n])
    leaves, treedef = jax.tree.flatten(state)

    def pure(held: Any, *rest: Any) -> tuple[Any, Any]:
        nodes = nnx.merge(graphdef, jax.tree.unflatten(treedef, held) if flat else held)
        out = step.raw(*nodes, *rest)
        new = nnx.split(nodes)[1]
        return out, jax.tree.leaves(new) if flat else new

    def view(out: Any, path_args: tuple) -> Any:
        held = jax.tree.unflatten(treedef, path_args[0]) if flat else path_args[0]
        return out[0], (*nnx.merge(graphdef, held), *path_args[1:])

    rest_batch = None if batch_at is None else batch_at - n + 1
    donated = step.donated(len(args))
    donate = tuple(sorted({0 if i < n else i - n + 1 for i in donated}))
    if flat:
        name, method = "jax.jit on nnx.split leaves", "nnx_split_leaves_jit"
        what = "jax.jit over nnx.split state as one flat list of leaves, split once, carried"
    else:
        name, method = "jax.jit on nnx.split state", "nnx_split_jit"
        what = "jax.jit over nnx.split state, split once outside the loop, carried from call to call"
    held = leaves if flat else state
    fn = jax.jit(pure, donate_argnums=donate)
    return Path(name, what, fn, (held, *args[n:]), {0: 1}, view, rest_batch, method)


def split_leaves_jit(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    return split_jit(step, args, carry, batch_at, flat=True)


def cached_nnx_jit(step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None) -> Path:
    try:
        from ..fixes import cached_nnx_jit as drop_in
    except ImportError as err:
        raise NotApplicable(f"jaxperf.cached_nnx_jit is not available: {err}") from err
    options: dict[str, Any] = {"static_argnums": _statics(step), "donate_argnums": _donated(step, args)}
    fn = drop_in(step.raw, **{k: v for k, v in options.items() if v})
    what = "the same nnx.jit semantics, the graph walked once per graph structure"
    args = carry_mod.fresh(args)
    return Path("jaxperf.cached_nnx_jit", what, fn, args, dict(carry), _same, batch_at, "cached_nnx_jit")


BUILDERS: dict[str, Callable[[Step, tuple, carry_mod.Carry, int | None], Path]] = {
    "tree mode": tree_mode,
    "cached_partial": cached_partial,
    "jit_partial": jit_partial,
    "split": split_jit,
    "split leaves": split_leaves_jit,
    "cached_nnx_jit": cached_nnx_jit,
}
