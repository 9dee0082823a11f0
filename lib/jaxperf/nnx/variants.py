"""The ways to call one NNX step that the study compares, each a zero-argument callable
over fresh objects of one :class:`~jaxperf.nnx.models.Problem`, and the proof that they
compute the same thing as ``nnx.jit`` before any is timed.

- ``nnx.jit``: graph mode, Flax's default; ``nnx.jit tree``: ``graph=False`` (FLIP 5310);
- ``cached_partial``: ``nnx.cached_partial(nnx.jit(step), model, optimizer)``;
- ``jit_partial``: ``nnx.jit_partial(step, model, optimizer, graph=False)`` (called like
  ``nnx.jit``, with graph mode and graph updates, it raises "`graph_updates` not supported by
  `jit_partial`"; ``graph=False`` is the form its docstring and Flax's benchmark use);
- ``jax.jit split``: ``nnx.split`` once, then ``jax.jit`` of merge, step, split on the state
  (the functional loop of Flax's performance guide; the reference the goal is stated against);
- ``jax.jit leaves``: the same on the state's leaves as one flat list (``nnx.State`` is a
  pytree that JAX flattens in Python, node by node): the floor of a functional loop;
- ``cached_nnx_jit``: this study's drop-in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import check_choice
from .models import Problem, step_function

VARIANTS = (
    "nnx.jit",
    "nnx.jit tree",
    "cached_partial",
    "jit_partial",
    "jax.jit split",
    "jax.jit leaves",
    "cached_nnx_jit",
)
REFERENCE = "jax.jit split"


@dataclass
class Variant:
    """``call()`` runs one step and returns what a loop would block on; ``state()`` is the
    model's and optimizer's state on the host now, to compare with another variant's."""

    name: str
    call: Callable[[], Any]
    state: Callable[[], list]


def build(problem: Problem, step: str, variant: str) -> Variant:
    """``variant`` of ``step`` over fresh objects of ``problem``."""
    import jax
    from flax import nnx

    from .. import cached_nnx_jit

    check_choice("variant", variant, VARIANTS)
    fn = step_function(step)
    model, optimizer, x, y = problem.build()

    def host_state() -> list:
        return [np.asarray(a) for a in jax.tree.leaves(nnx.state((model, optimizer)))]

    if variant in ("jax.jit split", "jax.jit leaves"):
        graphdef, state = nnx.split((model, optimizer))
        flat = variant == "jax.jit leaves"
        leaves, treedef = jax.tree.flatten(state)

        @jax.jit
        def pure(state: Any, x: Any, y: Any) -> Any:
            m, o = nnx.merge(graphdef, jax.tree.unflatten(treedef, state) if flat else state)
            out = fn(m, o, x, y)
            new = nnx.state((m, o))
            return out, jax.tree.leaves(new) if flat else new

        box = [leaves if flat else state]

        def call() -> Any:
            out, box[0] = pure(box[0], x, y)
            return out, box[0]

        def split_state() -> list:
            nnx.update((model, optimizer), jax.tree.unflatten(treedef, box[0]) if flat else box[0])
            return host_state()

        return Variant(variant, call, split_state)
    if variant in ("cached_partial", "jit_partial"):
        partial: Any
        if variant == "cached_partial":
            partial = nnx.cached_partial(nnx.jit(fn), model, optimizer)
        else:
            partial = nnx.jit_partial(fn, model, optimizer, graph=False)
        return Variant(variant, lambda: (partial(x, y), optimizer.step[...]), host_state)
    if variant == "nnx.jit":
        jitted = nnx.jit(fn)
    elif variant == "nnx.jit tree":
        jitted = nnx.jit(fn, graph=False)
    else:
        jitted = cached_nnx_jit(fn)
    return Variant(variant, lambda: (jitted(model, optimizer, x, y), optimizer.step[...]), host_state)


def check_same(
    problem: Problem, step: str, variants: tuple[str, ...] = VARIANTS, calls: int = 3
) -> dict[str, Variant]:
    """Run every variant ``calls`` times from the same fresh state and return them, ready to
    time; raise ``ValueError`` naming the first whose outputs or final state differ from
    ``nnx.jit``'s (its outputs: the train step's losses; the no-op step has none)."""
    reference = build(problem, step, "nnx.jit")
    ref_out = [np.asarray(reference.call()[0] if step == "train" else 0.0) for _ in range(calls)]
    ref_state = reference.state()
    built = {}
    for name in variants:
        variant = built[name] = build(problem, step, name)
        out = [np.asarray(variant.call()[0] if step == "train" else 0.0) for _ in range(calls)]
        state = variant.state()
        same = len(state) == len(ref_state) and all(
            np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(out + state, ref_out + ref_state)
        )
        if not same:
            raise ValueError(
                f"variant={name!r} computes another result than nnx.jit for step={step!r} at "
                f"depth={problem.depth}: it is not timed."
            )
    return built
