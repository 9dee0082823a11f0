"""What the core tests compare a drop-in with its reference by (jax, equinox, numpy only)."""

from __future__ import annotations

import re
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

#: devices the pmap tests map over (tests/core/conftest.py forces at least this many)
N = 4


def enable_x64(enabled: bool) -> Any:
    """``jax.enable_x64(enabled)`` where JAX has it; ``jax.experimental.enable_x64``
    where it has not (the oldest JAX of the core's range, 0.6.0, has only that one)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(enabled)
    from jax.experimental import enable_x64 as experimental_enable_x64

    return experimental_enable_x64(enabled)


def stacked(tree: Any, n: int = N) -> Any:
    """``tree`` with every array stacked ``n`` times along a new leading axis."""
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *a.shape)) if eqx.is_array(a) else a, tree)


def assert_same(expected: Any, got: Any) -> None:
    """Same structure, same non-array leaves (and types), arrays of the same kind (jax or
    numpy), shape, dtype, weak type and values."""
    le, te = jax.tree.flatten(expected)
    lg, tg = jax.tree.flatten(got)
    assert te == tg, (te, tg)
    for x, y in zip(le, lg):
        if eqx.is_array(x):
            assert eqx.is_array(y) and isinstance(y, jax.Array) == isinstance(x, jax.Array), (x, y)
            assert (x.shape, x.dtype) == (y.shape, y.dtype), (x, y)
            assert getattr(x, "weak_type", False) == getattr(y, "weak_type", False), (x, y)
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        else:
            assert x == y and type(x) is type(y), (x, y)


def outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """``("value", result)`` or ``("error", (type, message))`` of ``call(*args, **kwargs)``."""
    try:
        return "value", call(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 -- the error is the outcome compared
        return "error", (type(err), str(err))


#: how JAX up to 0.9 at least prints a tracer inside an error message (jax 0.12 prints none in
#: the messages compared here): the one trace-dependent part of a message
_TRACER_REPRS = re.compile(
    r"Traced<[^\n]*?>with<BatchTrace> with\n\s*val = [^\n]*\n\s*batch_dim = (?:\d+|None)"
    r"|Traced<[^\n]*?>with<\w+>"
    r"|\b\w*Tracer\([^()]*\)"
)


def without_tracer_reprs(message: str) -> str:
    """``message`` with every tracer's repr replaced by ``<tracer>``: cached_filter_pmap
    finds a mismatched out_axes in its one vmap probe, Equinox inside jax.pmap's trace, so
    the same error names a vmap tracer in one and a jit tracer in the other."""
    return _TRACER_REPRS.sub("<tracer>", message)


def assert_same_outcome(expected: tuple[str, Any], got: tuple[str, Any]) -> None:
    assert expected[0] == got[0], (expected, got)
    if expected[0] == "value":
        assert_same(expected[1], got[1])
    else:
        (expected_type, expected_message), (got_type, got_message) = expected[1], got[1]
        assert expected_type is got_type, (expected, got)
        assert without_tracer_reprs(expected_message) == without_tracer_reprs(got_message), (expected, got)
