"""The loop forms of the Pallas loop study (jax-ml/jax#20909), usable both
inside a Pallas kernel and in plain ``jax.jit``.

Every form runs ``carry = body(j, carry)`` for ``j`` in ``range(lower, upper)``:

- ``python``: a Python ``for`` loop; the body is traced once per step, so the
  program grows with the trip count (the seed's "scanless" kernel);
- ``fori``: ``lax.fori_loop(..., unroll=k)``; JAX unrolls only when the bounds
  are static, and Pallas' Triton lowering rejects any ``k != 1``;
- ``pl_loop``: ``pl.loop(lower, upper, unroll=k, init_carry=...)``, a thin
  wrapper over ``fori_loop`` (so it inherits the same lowering rules);
- ``hand_unrolled``: :func:`hand_unrolled_fori`, an outer ``fori_loop`` over
  ``trip // k`` with ``k`` copies of the body in Python, then the remainder.
  It uses only ``fori_loop(unroll=1)``, which every Pallas backend lowers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .errors import bad_value, check_choice, check_int

LOOP_FORMS = ("python", "fori", "pl_loop", "hand_unrolled")

Carry = TypeVar("Carry")
Body = Callable[[Any, Carry], Carry]


def _is_static(value: Any) -> bool:
    """A bound known at trace time: a Python/NumPy int or a concrete integer scalar."""
    import jax
    import numpy as np

    if isinstance(value, bool) or isinstance(value, jax.core.Tracer):
        return False
    if isinstance(value, (int, np.integer)):
        return True
    dtype = getattr(value, "dtype", None)
    return getattr(value, "shape", None) == () and dtype is not None and np.issubdtype(dtype, np.integer)


def check_unroll(unroll: Any) -> int:
    """``unroll`` must be an int >= 1 (``True``/``False`` are not accepted)."""
    return check_int("unroll", unroll, minimum=1)


def python_loop(lower: int, upper: int, body: Body, init: Carry) -> Carry:
    """``body`` traced once per step (the bounds must be Python ints)."""
    if not (_is_static(lower) and _is_static(upper)):
        raise bad_value("lower/upper", (lower, upper), "static Python ints for loop_form='python'")
    carry = init
    for j in range(int(lower), int(upper)):
        carry = body(j, carry)
    return carry


def hand_unrolled_fori(lower: Any, upper: Any, body: Body, init: Carry, unroll: int) -> Carry:
    """``fori_loop(lower, upper, body, init)``, partially unrolled by hand.

    An outer ``fori_loop`` runs ``trip // unroll`` times, each iteration
    calling ``body`` ``unroll`` times in Python; the ``trip % unroll``
    remaining steps follow (inline copies when the bounds are static, a
    second ``fori_loop`` when they are traced). Correct when ``unroll`` does
    not divide the trip count, when it exceeds it, and for zero or negative
    trip counts (no steps, like ``fori_loop``).
    """
    import jax.numpy as jnp
    from jax import lax

    check_unroll(unroll)
    static = _is_static(lower) and _is_static(upper)

    def outer_body(i, carry):
        base = lower + i * unroll
        for r in range(unroll):
            carry = body(base + r, carry)
        return carry

    if static:
        lower, upper = int(lower), int(upper)
        trip = max(upper - lower, 0)
        outer = trip // unroll
        carry = lax.fori_loop(0, outer, outer_body, init) if outer > 0 else init
        for j in range(lower + outer * unroll, upper):
            carry = body(j, carry)
        return carry
    dtype = jnp.result_type(lower, upper)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    outer = jnp.maximum(upper - lower, 0) // unroll
    carry = lax.fori_loop(jnp.zeros((), dtype), outer, outer_body, init)
    return lax.fori_loop(lower + outer * unroll, upper, body, carry)


def run_loop(loop_form: str, lower: Any, upper: Any, body: Body, init: Carry, unroll: int = 1) -> Carry:
    """Run ``body`` from ``lower`` to ``upper`` in the chosen ``loop_form``.

    ``unroll`` must be 1 for ``python`` (already fully unrolled); for the
    others it is the number of body copies per loop iteration.
    """
    from jax import lax

    check_choice("loop_form", loop_form, LOOP_FORMS)
    check_unroll(unroll)
    if loop_form == "python":
        if unroll != 1:
            raise bad_value("unroll", unroll, "1 for loop_form='python' (a Python loop is fully unrolled)")
        return python_loop(lower, upper, body, init)
    if loop_form == "fori":
        return lax.fori_loop(lower, upper, body, init, unroll=unroll)
    if loop_form == "pl_loop":
        from jax.experimental import pallas as pl

        return pl.loop(lower, upper, init_carry=init, unroll=unroll)(body)
    return hand_unrolled_fori(lower, upper, body, init, unroll)
