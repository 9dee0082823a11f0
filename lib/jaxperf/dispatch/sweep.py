"""Pytree equality and the wait a donated loop needs: what notebook 07's seed loop shares
with the rest of the dispatch study (the diagnosis engine, :mod:`jaxperf.diagnosis`, has
replaced the earlier method sweep)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .. import timing


def same_result(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Pytree equality: same structure, allclose leaves."""
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    ta, tb = str(ta), str(tb)  # treedefs of Equinox modules compare by their text
    return ta == tb and all(
        np.shape(x) == np.shape(y) and np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(la, lb)
    )


def sync(tree: Any) -> Any:
    """``timing.block``, for donated runners too: a pipelined loop's list of outputs holds
    a donated runner's earlier states, which the next call consumed (deleted); its last
    output is alive and was computed from all of them, so waiting for it is waiting for all."""
    try:
        return timing.block(tree)
    except jax.errors.JaxRuntimeError:
        if isinstance(tree, list) and tree:
            return timing.block(tree[-1])
        raise
