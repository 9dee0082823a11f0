"""Why ``eqx.filter_pmap``'s inner ``jax.pmap`` call costs more than ``jax.pmap`` on params.

Both run the same compiled program on the same arrays (the lowered modules are the same
size, op for op), yet the inner call that Equinox 0.13 makes is dearer on the host. It
differs from the reporter's ``jax.pmap`` over ``eqx.partition(model, eqx.is_array)[0]`` in
what it hands to ``jax.pmap`` on every call:

- ``in_axes``: a pytree with one entry per node of ``(fun, args, dummy, out_axes)``, where
  pmap on params passes the single int ``0``. ``jax.pmap`` turns a non-int ``in_axes``
  into one axis per leaf on every call (flatten the prefix, broadcast it against the
  arguments' tree); an int takes its fast path.
- its outputs: ``2k`` filtered copies of the step's output tree (one per possible output
  axis ``-k .. k-1``, ``k`` the largest output rank), plus the unmapped part and a
  ``Static`` node, where pmap on params returns the tree once. ``jax.pmap`` rebuilds every
  node of that output on every call, arrays or not.

:func:`rungs` builds a ladder between the two calls, each rung removing one difference,
and :func:`ladder` proves every rung returns the same arrays and times them interleaved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import pandas as pd

from .. import private_api, timing
from ..errors import check_int
from .methods import build_runner

#: the rungs, from the reporter's fast call to filter_pmap's own inner call
RUNGS = (
    "jax.pmap on params",
    "filter_pmap's inputs, in_axes=0, one output tree",
    "+ per-leaf in_axes pytree",
    "+ 2k output trees (out_axes list)",
    "filter_pmap's inner call (both)",
)


def _is_none(x: Any) -> bool:
    return x is None


def _nodes(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> int:
    return int(jtu.tree_structure(tree, is_leaf=is_leaf).num_nodes)  # type: ignore[attr-defined]


def rungs(fn: Any, args: tuple, reference: Callable[[], Any]) -> tuple[dict[str, Callable[[], Any]], dict]:
    """The ladder's zero-argument calls for an ``eqx.filter_pmap`` wrapper ``fn`` on ``args``
    (``reference``: the same step under jax.pmap on params), and the sizes of what each hands
    to jax.pmap: ``in_axes`` nodes, output nodes, output copies ``2k``."""
    h = private_api.equinox_pmap_stage_helpers()
    dummy = h["_common_preprocess"](fn._axis_size, {})
    arg_axes = h["_resolve_axes"](args, h["_named_in_axes"](fn._fun, fn._in_axes, args))
    in_axes = (None, arg_axes, 0, None)
    dynamic, static = eqx.partition((fn._fun, args, dummy, fn._out_axes), eqx.is_array)
    mapped = jtu.tree_leaves(arg_axes)
    arrays = [a for a in jtu.tree_leaves((fn._fun, args, dummy)) if eqx.is_array(a)]
    if set(mapped) != {0} or len(mapped) != len(arrays) or len(arrays) != len(jtu.tree_leaves(dynamic)):
        raise ValueError("the ladder needs every array argument mapped over axis 0 (the default in_axes)")
    struct = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), dynamic)
    options = (fn._axis_name, fn._axis_size, fn._pmapkwargs)
    inner = h["_filter_pmap_cache"](fn._fun, static, struct, in_axes, *options)
    inner_in0 = h["_filter_pmap_cache"](fn._fun, static, struct, 0, *options)

    def one_tree(d: Any) -> Any:  # what pmap on params returns: (loss, model arrays, opt arrays)
        f, a, _, _ = eqx.combine(d, static)
        loss, model, opt = f(*a)
        return jnp.asarray(loss), eqx.filter(model, eqx.is_array), eqx.filter(opt, eqx.is_array)

    one_tree.__name__ = getattr(fn._fun, "__name__", "step")
    one_in0 = jax.pmap(one_tree, in_axes=0, axis_name=fn._axis_name)
    one_tree_axes = jax.pmap(one_tree, in_axes=(in_axes,), axis_name=fn._axis_name)
    post = h["_postprocess"]
    calls = {
        RUNGS[0]: reference,
        RUNGS[1]: lambda: one_in0(dynamic),
        RUNGS[2]: lambda: one_tree_axes(dynamic),
        RUNGS[3]: lambda: post(inner_in0(dynamic)),
        RUNGS[4]: lambda: post(inner(dynamic)),
    }
    out = inner(dynamic)
    sizes = {
        "in_axes_nodes": _nodes(in_axes, _is_none),
        "inner_output_nodes": _nodes(out),
        "output_copies": len(out[0]),
        "params_output_nodes": _nodes(reference()),
    }
    return calls, sizes


def _arrays(out: Any) -> list[np.ndarray]:
    """A step output's (loss, model, opt_state) as host arrays: the loss's first element
    (filter_pmap returns a Python-float loss unmapped, the others an array per device), then
    the model's and optimiser state's arrays in order."""
    loss, model, opt = out
    rest = [np.asarray(x) for x in jtu.tree_leaves((model, opt)) if eqx.is_array(x)]
    return [np.asarray(loss).reshape(-1)[:1], *rest]


def same_arrays(outputs: dict[str, Any]) -> None:
    """Every rung's output holds the same loss and the same model and optimiser-state arrays,
    in the same order, as the first rung's. Raises AssertionError naming the rung that differs."""
    names = list(outputs)
    ref = _arrays(outputs[names[0]])
    for name in names[1:]:
        got = _arrays(outputs[name])
        if len(got) != len(ref) or not all(
            a.shape == b.shape and np.allclose(a, b) for a, b in zip(ref, got)
        ):
            raise AssertionError(f"rung {name!r} returns other arrays than {names[0]!r}")


def ladder(
    spec: Any, step: str, n_devices: int, config: timing.TimingConfig, **labels: Any
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Time the rungs for ``spec``'s model on ``step`` (each call blocked; wall and the
    dispatching thread's CPU), after proving they return the same arrays. Returns the tidy
    rows (one per rung and repeat, ms) and the structure sizes."""
    check_int("n_devices", n_devices, minimum=1)
    model, opt_state = spec.build()
    x = spec.batch(n_devices)
    slow = build_runner("filter_pmap", step, model, opt_state, x, n_devices)
    fast = build_runner("pmap_params", step, model, opt_state, x, n_devices)
    calls, sizes = rungs(slow.fn, slow.args, fast.call)
    same_arrays({name: timing.block(call()) for name, call in calls.items()})
    rows = timing.compare(calls, config, model=spec.name, **labels)
    rows = rows.rename(columns={"variant": "rung"})
    rows["wall_ms_per_call"] = 1e3 * rows.pop("wall_s_per_call")
    rows["cpu_ms_per_call"] = 1e3 * rows.pop("cpu_s_per_call")
    keep = ["model", *labels, "rung", "repeat", "wall_ms_per_call", "cpu_ms_per_call"]
    return rows[keep], sizes


def explain(rows: pd.DataFrame) -> dict[str, Any]:
    """Per model: each rung's host CPU and wall ms per call (median and quartiles), and the
    inner call's excess over pmap on params split into its two causes, per repeat (a pair
    within one repeat) then summarised. ``sum_of_parts`` is the two single-cause excesses
    added, to compare with the measured total."""
    out: dict[str, Any] = {}
    for model, part in rows.groupby("model", sort=False):
        per = part.pivot_table(index="repeat", columns="rung", values="cpu_ms_per_call")
        base = per[RUNGS[1]]
        excess = {
            "in_axes_pytree": per[RUNGS[2]] - base,
            "output_trees": per[RUNGS[3]] - base,
            "both": per[RUNGS[4]] - base,
            "inner_over_pmap_params": per[RUNGS[4]] - per[RUNGS[0]],
            "inputs_over_pmap_params": base - per[RUNGS[0]],
        }
        stats = {k: timing.iqr_stats(v) for k, v in excess.items()}
        out[str(model)] = {
            "cpu_ms": {r: timing.iqr_stats(part[part["rung"] == r]["cpu_ms_per_call"]) for r in RUNGS},
            "wall_ms": {r: timing.iqr_stats(part[part["rung"] == r]["wall_ms_per_call"]) for r in RUNGS},
            "excess_cpu_ms": stats,
            "sum_of_parts_cpu_ms": stats["in_axes_pytree"]["median"] + stats["output_trees"]["median"],
        }
    return out


def run_ladders(
    specs: list[Any], step: str, n_devices: int, config: timing.TimingConfig
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """:func:`ladder` for each spec: all rows, and per model :func:`explain`'s numbers with the
    structure sizes under ``sizes``."""
    frames, sizes = [], {}
    for spec in specs:
        rows, sizes[spec.name] = ladder(spec, step, n_devices, config)
        frames.append(rows)
    rows = pd.concat(frames, ignore_index=True)
    explained = explain(rows)
    return rows, {model: {**v, "sizes": sizes[model]} for model, v in explained.items()}
