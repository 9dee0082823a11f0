"""``hand_unrolled_fori``: ``lax.fori_loop`` partially unrolled by hand (jax-ml/jax#20909).

Pallas' Triton backend rejects ``fori_loop(unroll=k)`` for every ``k > 1`` and Mosaic GPU
needs ``k`` to divide the trip count; this loop uses only ``fori_loop(unroll=1)``, which
every backend lowers, and runs ``unroll`` copies of the body per iteration. Public as
``jaxperf.hand_unrolled_fori``; needs only jax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import check_int

Carry = TypeVar("Carry")
Body = Callable[[Any, Carry], Carry]


def check_unroll(unroll: Any) -> int:
    """``unroll`` must be an int >= 1 (``True``/``False`` are not accepted)."""
    return check_int("unroll", unroll, minimum=1)


def static_bounds(lower: Any, upper: Any) -> tuple[int, int] | None:
    """``(int(lower), int(upper))`` when both are known at trace time, as
    ``lax.fori_loop`` decides it (then it unrolls and differentiates as a scan); else None."""
    import jax

    if isinstance(lower, jax.core.Tracer) or isinstance(upper, jax.core.Tracer):
        return None
    try:
        return int(lower), int(upper)
    except TypeError:  # includes jax.errors.ConcretizationTypeError
        return None


def index_dtype(lower: Any, upper: Any) -> Any:
    """The loop index dtype ``lax.fori_loop`` uses for traced bounds (same rule, same TypeError):
    equal dtypes, or a weakly typed signed int (a Python int) takes the other's dtype."""
    import jax
    import numpy as np

    lo, up = jax.typeof(lower), jax.typeof(upper)
    if lo.dtype == up.dtype:
        return lo.dtype
    if np.issubdtype(lo.dtype, np.signedinteger) and np.issubdtype(up.dtype, np.signedinteger):
        if lo.weak_type and not up.weak_type:
            return up.dtype
        if up.weak_type and not lo.weak_type:
            return lo.dtype
    raise TypeError(
        f"lower and upper arguments to fori_loop must have equal types, got {lo.dtype.name} and {up.dtype.name}"
    )


def _copies(body: Body, start: Any, unroll: int, count: int) -> Body:
    """A loop body running ``count`` copies of ``body`` from index ``start + i * unroll``."""

    def run(i: Any, carry: Any) -> Any:
        base = start + i * unroll
        for r in range(count):
            carry = body(base + r, carry)
        return carry

    return run


def hand_unrolled_fori(lower: Any, upper: Any, body: Body, init: Carry, unroll: int = 1) -> Carry:
    """``lax.fori_loop(lower, upper, body, init)``, partially unrolled by hand.

    An outer ``fori_loop(unroll=1)`` runs ``trip // unroll`` times, calling
    ``body`` ``unroll`` times per iteration; the ``trip % unroll`` remaining
    steps follow inline (static bounds: with ``unroll >= trip`` no loop
    remains) or in a second ``fori_loop`` (traced bounds). The
    body always receives a JAX integer index of the dtype ``fori_loop`` gives
    it (a weakly typed int32 for static bounds, :func:`index_dtype` for traced
    ones), never a Python int, so a body written for ``fori_loop`` runs
    unchanged (the inline steps' index is a constant: a body may branch on it
    there, where ``fori_loop``'s would raise). Zero or negative trip counts run no step.
    Static bounds differentiate in reverse mode (a scan), traced bounds do not
    (a while loop: the same error as ``fori_loop``). ``unroll=1`` is
    ``lax.fori_loop`` itself. Raises ValueError for ``unroll`` not an int >= 1.
    """
    from jax import lax

    check_unroll(unroll)
    if unroll == 1:
        return lax.fori_loop(lower, upper, body, init)
    import jax.numpy as jnp

    bounds = static_bounds(lower, upper)
    if bounds is not None:
        index_dtype(lower, upper)  # fori_loop's TypeError for mismatched bound types
        start, stop = bounds
        outer = max(stop - start, 0) // unroll
        carry = init
        if outer:
            carry = lax.fori_loop(0, outer, _copies(body, start, unroll, unroll), carry)
        for j in range(start + outer * unroll, stop):
            carry = body(jnp.asarray(j), carry)  # a weakly typed int32, as fori_loop's index
        return carry
    import jax

    # As fori_loop: a bound is converted only if its dtype differs, and the index takes the
    # lower bound's type, weak type included (a Python int lower keeps an int8 carry int8).
    dtype = index_dtype(lower, upper)
    lo = lower if jax.typeof(lower).dtype == dtype else lax.convert_element_type(lower, dtype)
    hi = upper if jax.typeof(upper).dtype == dtype else lax.convert_element_type(upper, dtype)

    def as_index(value: Any) -> Any:
        return lax.full_like(lo, value)

    trips = jnp.maximum(hi - lo, 0) // unroll
    carry = lax.fori_loop(as_index(0), as_index(trips), _copies(body, lo, unroll, unroll), init)
    return lax.fori_loop(as_index(lo + trips * unroll), hi, body, carry)
