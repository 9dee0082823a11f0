"""The equinox#192 step compiled for a TPU v3-8 on a CPU: is the slow method's TPU program the same?

Each dispatch method of :mod:`jaxperf.dispatch` that can compile ahead of
time is lowered for the 8 devices of the ``v3:2x2`` topology
(``devices=topo.devices``, the leading axis of every input = 8) and compiled
by libtpu. Their optimised HLO is compared after normalising the names that
differ between any two traces (instruction and parameter names, metadata,
``/*index=*/`` comments): the same multiset of instructions is the same TPU
program, and then whatever separates the methods' it/s on a TPU is host-side.
"""

from __future__ import annotations

import collections
import hashlib
import re
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from ..compilers.mosaic_tpu import compile, topology

METHODS = ("filter_pmap", "pmap_params", "cached_filter_pmap")
REFERENCE = "pmap_params"
AXIS = "devices"


def _cached_filter_pmap() -> Callable:
    """The cached fix, from the package root where it is exported (issue 13), else its module."""
    import jaxperf

    if hasattr(jaxperf, "cached_filter_pmap"):
        return jaxperf.cached_filter_pmap
    from jaxperf.fixes import cached_filter_pmap

    return cached_filter_pmap


def inputs(depth: int, n_devices: int) -> tuple[Any, Any, Any, Any]:
    """``(model, x, opt_state, static)`` of the dispatch study's MLP, each array stacked ``n_devices`` times."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from ..dispatch.models import ModelSpec

    spec = ModelSpec("mlp", depth)
    model, opt_state = spec.build()

    def stack(tree: Any) -> Any:
        return jax.tree.map(
            lambda a: jnp.broadcast_to(a, (n_devices, *a.shape)) if eqx.is_array(a) else a, tree
        )

    x = spec.batch(n_devices).reshape(n_devices, -1, *spec.batch(1).shape[1:])
    return stack(model), x, stack(opt_state), eqx.partition(model, eqx.is_array)[1]


def _on_params(step: Callable, static: Any) -> Callable:
    """The reporter's fast loop: ``jax.pmap`` over the model's arrays, combined inside."""
    import equinox as eqx

    def fn(params: Any, x: Any, opt_state: Any) -> tuple[Any, Any, Any]:
        loss, model, opt_state = step(eqx.combine(params, static), x, opt_state)
        return loss, eqx.filter(model, eqx.is_array), opt_state

    return fn


def _lower(method: str, step: Callable, static: Any, devices: list, model: Any, x: Any, opt: Any) -> Any:
    import equinox as eqx
    import jax

    # filter_pmap passes extra keywords on to jax.pmap (its stubs do not list them).
    target: dict[str, Any] = {"devices": devices}
    if method == "filter_pmap":
        wrapper: Any = eqx.filter_pmap(step, axis_name=AXIS, **target)
        return wrapper.lower(model, x, opt)
    if method == "cached_filter_pmap":
        wrapped = _cached_filter_pmap()(step, axis_name=AXIS, **target)
        if not hasattr(wrapped, "lower"):
            raise NotImplementedError("cached_filter_pmap has no ahead-of-time .lower() in this version")
        return wrapped.lower(model, x, opt)
    params = eqx.filter(model, eqx.is_array)
    return jax.pmap(_on_params(step, static), axis_name=AXIS, devices=devices).lower(params, x, opt)


def compile_methods(step_name: str, *, generation: str = "v3", depth: int = 8) -> tuple[pd.DataFrame, dict]:
    """Compile ``step_name`` (``noop``/``train``) by every method for all devices of ``generation``.

    Returns one row per method (compile ms, code size, cost analysis,
    instruction count, fingerprint, or the error) and the normalised
    instruction multisets by method (for :func:`compare`).
    """
    from ..dispatch.steps import get_step

    devices = topology.devices(generation)
    model, x, opt, static = inputs(depth, len(devices))
    step = get_step(step_name, AXIS)
    rows, programs = [], {}
    for method in METHODS:
        row: dict[str, Any] = dict(step=step_name, method=method, generation=generation, devices=len(devices))
        try:
            started = time.perf_counter()
            compiled = _lower(method, step, static, devices, model, x, opt).compile()
            row["compile_ms"] = (time.perf_counter() - started) * 1e3
        except Exception as err:  # noqa: BLE001 - a method that cannot compile AOT is a result
            rows.append(dict(row, error=compile.short_error(err)))
            continue
        compiled = getattr(compiled, "compiled", compiled)  # Equinox wraps jax's Compiled
        programs[method] = instructions(compiled.as_text())
        row.update(
            error="",
            code_bytes=int(compiled.memory_analysis().generated_code_size_in_bytes),
            instructions=sum(programs[method].values()),
            fingerprint=fingerprint(programs[method]),
            **{f"cost_{k.replace(' ', '_')}": v for k, v in compile.cost_of(compiled).items()},
        )
        rows.append(row)
    return pd.DataFrame(rows), programs


def run_steps(steps: tuple[str, ...], *, generation: str, depth: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`compile_methods` for each step: the per-method table and the comparison with pmap on params."""
    tables, comparisons = [], []
    for step in steps:
        table, programs = compile_methods(step, generation=generation, depth=depth)
        tables.append(table)
        comparisons.append(compare(programs).assign(step=step))
    return pd.concat(tables, ignore_index=True), pd.concat(comparisons, ignore_index=True)


def instructions(hlo_text: str) -> collections.Counter:
    """The optimised HLO's instructions with names, metadata and index comments removed."""
    found: collections.Counter = collections.Counter()
    for line in hlo_text.splitlines():
        line = line.strip()
        if not line.startswith(("%", "ROOT")) or " = " not in line:
            continue
        line = re.sub(r", metadata=\{[^}]*\}", "", line)
        line = re.sub(r"/\*index=\d+\*/", "", line)
        found[re.sub(r"%[\w.\-]+", "%", line)] += 1
    return found


def fingerprint(program: collections.Counter) -> str:
    """A short hash of the normalised instruction multiset (equal programs, equal fingerprints)."""
    text = "\n".join(sorted(f"{count} {line}" for line, count in program.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def compare(programs: dict[str, collections.Counter], reference: str = REFERENCE) -> pd.DataFrame:
    """Each method against ``reference``: same program?, and the instructions only one side has."""
    rows = []
    for method, program in programs.items():
        if method == reference or reference not in programs:
            continue
        only_here = program - programs[reference]
        only_there = programs[reference] - program
        rows.append(
            dict(
                method=method,
                reference=reference,
                same_program=not only_here and not only_there,
                only_in_method=sum(only_here.values()),
                only_in_reference=sum(only_there.values()),
                differences="; ".join(
                    [f"only {method}: {_describe(line)}" for line in only_here]
                    + [f"only {reference}: {_describe(line)}" for line in only_there]
                ),
            )
        )
    return pd.DataFrame(rows)


def _describe(line: str) -> str:
    """``opcode shape`` of a normalised instruction (a ROOT tuple by its element count)."""
    found = re.match(r"(ROOT )?% = (\(.*\)|\S+) ([\w-]+)\(", line)
    if not found:
        return line[:60]
    root, shape, opcode = found.groups()
    if shape.startswith("("):
        shape = f"tuple of {shape.count('{') - shape.count('{}')} arrays"
    return f"{'ROOT ' if root else ''}{opcode} {re.sub(r'{.*', '', shape)}"
