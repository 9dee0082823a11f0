"""The loop forms of the jax#20909 study, usable inside a Pallas kernel and in plain ``jax.jit``.

Every form runs ``carry = body(j, carry)`` for ``j`` in ``range(lower, upper)``
(names and meanings in :mod:`jaxperf.jax20909.vocab`). The hand-unrolled form is the
public fix :func:`jaxperf.fixes.unroll.hand_unrolled_fori`.
"""

from __future__ import annotations

from typing import Any

from ..errors import bad_value, check_choice
from ..fixes.unroll import Body, Carry, check_unroll, hand_unrolled_fori, static_bounds
from .vocab import LOOP_FORMS

__all__ = ["check_unroll", "hand_unrolled_fori", "python_loop", "run_loop", "static_bounds"]


def python_loop(lower: int, upper: int, body: Body, init: Carry) -> Carry:
    """``body`` traced once per step with a Python int ``j`` (the bounds must be static)."""
    bounds = static_bounds(lower, upper)
    if bounds is None:
        raise bad_value("lower/upper", (lower, upper), "static ints for loop_form='python'")
    carry = init
    for j in range(*bounds):
        carry = body(j, carry)
    return carry


def run_loop(loop_form: str, lower: Any, upper: Any, body: Body, init: Carry, unroll: int = 1) -> Carry:
    """Run ``body`` from ``lower`` to ``upper`` in the chosen ``loop_form``.

    ``unroll`` must be 1 for ``python`` (already fully unrolled); for the
    others it is the number of body copies per loop iteration. ``hoisted``
    and ``scalar_carry`` run the loop as ``hand_unrolled``: hoisting is the kernel's job (it
    passes a body without the invariant), see :mod:`jaxperf.jax20909.kernels`.
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
