"""``hand_unrolled_fori``: ``lax.fori_loop`` partially unrolled by hand (jax-ml/jax#20909).
Pallas' Triton backend rejects ``fori_loop(unroll=k > 1)`` and Mosaic GPU needs ``k`` to
divide the trip count; this loop uses only ``fori_loop(unroll=1)``, which every backend
lowers, with ``unroll`` copies of the body per iteration.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import check_int

Carry = TypeVar("Carry")
Body = Callable[[Any, Carry], Carry]


def check_unroll(unroll: Any) -> int:
    """``unroll`` as a Python int; ValueError unless an int >= 1 (a NumPy integer too, as
    ``lax.fori_loop`` takes; not a bool, float or array)."""
    import numpy as np

    if isinstance(unroll, np.integer) and not isinstance(unroll, np.bool_):
        unroll = int(unroll)
    return check_int("unroll", unroll, minimum=1)


def static_bounds(lower: Any, upper: Any) -> tuple[int, int] | None:
    """``(int(lower), int(upper))`` when both are known at trace time, as ``fori_loop`` decides."""
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


def _typematch(a: Any, b: Any) -> bool:
    return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype


def _carry_error(structure: bool, difference: str) -> TypeError:
    """``lax.fori_loop``'s TypeError (static bounds: its scan's), first line word for word."""
    what = "have the same pytree structure" if structure else "have equal types"
    return TypeError(
        f"scan body function carry input and carry output must {what}, but they differ:\n\n"
        f"{difference}.\n\nRevise the function so that the carry output has the same "
        f"{'pytree structure' if structure else 'types'} as the carry input."
    )


def _step(body: Body, index: Any, carry: Any) -> Any:
    """``body(index, carry)`` with ``lax.fori_loop``'s carry contract, outside a loop primitive:
    the same structure, shapes and dtypes out (a weakly typed leaf promoted and the step traced
    again, as fori_loop does), JAX arrays out; TypeError else."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    carry = jax.tree.map(jnp.asarray, carry)
    out = body(index, carry)
    treedef: Any
    out_treedef: Any
    for _ in range(2):  # at most one promotion, as fori_loop traces its body at most twice
        leaves, treedef = jax.tree.flatten(carry)
        out_leaves, out_treedef = jax.tree.flatten(out)
        if out_treedef != treedef:
            raise _carry_error(True, f"The input carry is {treedef} but the output carry is {out_treedef}")
        out_leaves = [jnp.asarray(x) for x in out_leaves]
        promoted = [
            lax.convert_element_type(c, jnp.result_type(c, o))
            if jax.typeof(c).weak_type and not _typematch(c, o)
            else c
            for c, o in zip(leaves, out_leaves)
        ]
        if all(p is c for p, c in zip(promoted, leaves)):
            break
        carry = treedef.unflatten(promoted)
        out = body(index, carry)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(carry)[0]]
    for path, c, o in zip(paths, leaves, out_leaves):
        if not _typematch(c, o):
            raise _carry_error(
                False,
                f"The input carry component{path} has type {jax.typeof(c).str_short()} but the "
                f"corresponding output carry component has type {jax.typeof(o).str_short()}",
            )
    return out_treedef.unflatten(out_leaves)


def _copies(body: Body, start: Any, unroll: int, count: int) -> Body:
    """A loop body running ``count`` checked copies of ``body`` from index ``start + i * unroll``."""

    def run(i: Any, carry: Any) -> Any:
        base = start + i * unroll
        for r in range(count):
            carry = _step(body, base + r, carry)
        return carry

    return run


def _static(start: int, stop: int, body: Body, unroll: int, init: Carry) -> Carry:
    """Static bounds, laid out as ``lax.scan(unroll=unroll)`` lays out ``fori_loop``: a loop of
    ``trips // unroll`` iterations of ``unroll`` steps, then the rest inline in the same program
    (all inline when one iteration would hold every step), so that XLA sees what it sees there."""
    import jax.numpy as jnp
    from jax import lax

    outer, rest = divmod(stop - start, unroll)
    if outer == 1 and rest == 0:
        outer, rest = 0, unroll
    carry = init
    if outer:
        carry = lax.fori_loop(0, outer, _copies(body, start, unroll, unroll), carry)
    for j in range(start + outer * unroll, stop):
        carry = _step(body, jnp.asarray(j), carry)  # fori_loop's index here: a weakly typed int
    return carry


def hand_unrolled_fori(lower: Any, upper: Any, body: Body, init: Carry, unroll: int = 1) -> Carry:
    """``lax.fori_loop(lower, upper, body, init)``, partially unrolled by hand.

    An outer ``fori_loop(unroll=1)`` runs ``trip // unroll`` times, calling ``body`` ``unroll``
    times per iteration; the ``trip % unroll`` remaining steps follow inline (static bounds,
    laid out as ``lax.fori_loop(unroll=unroll)`` lays them out, so the results are bitwise
    equal, eagerly too) or in a second ``fori_loop`` (traced bounds). ``fori_loop``'s contract
    holds: the carry keeps its tree structure, shapes and dtypes (a weakly typed leaf is
    promoted as there), else TypeError; the body gets a JAX integer index of ``fori_loop``'s
    dtype; no step for an empty range; static bounds differentiate in reverse mode, traced
    ones do not. ``unroll=1`` is ``lax.fori_loop`` itself; ValueError for ``unroll`` not an
    int >= 1.
    """
    import jax
    from jax import lax

    unroll = check_unroll(unroll)
    if unroll == 1:
        return lax.fori_loop(lower, upper, body, init)
    bounds = static_bounds(lower, upper)
    if bounds is not None:
        index_dtype(lower, upper)  # fori_loop's TypeError for mismatched bound types
        start, stop = bounds
        if stop <= start:  # no step: fori_loop's own result (the init as JAX arrays)
            return lax.fori_loop(lower, upper, body, init)
        if isinstance(jax.numpy.zeros(()), jax.core.Tracer):  # staged (jit, a loop body, a kernel)
            return _static(start, stop, body, unroll, init)
        try:  # eager: one compiled program, as lax.fori_loop runs there
            hash(body)
        except TypeError:
            return jax.jit(lambda carry: _static(start, stop, body, unroll, carry))(init)
        return _jitted_static()(start, stop, body, unroll, init)
    return _traced(lower, upper, body, init, unroll)


def _traced(lower: Any, upper: Any, body: Body, init: Carry, unroll: int) -> Carry:
    """Traced bounds: ``trips = (upper - lower) // unroll`` outer iterations, then the rest, all index
    arithmetic in the bounds' dtype: the span in the unsigned type of the same width (exact, and zero
    when ``upper <= lower``); ``lower + i * unroll`` may wrap on the way, to the exact value."""
    import jax
    import numpy as np
    from jax import lax

    # As fori_loop: a bound is converted only if its dtype differs, and the index takes the
    # lower bound's type, weak type included (a Python int lower keeps an int8 carry int8).
    dtype = np.dtype(index_dtype(lower, upper))
    lo = lower if jax.typeof(lower).dtype == dtype else lax.convert_element_type(lower, dtype)
    hi = upper if jax.typeof(upper).dtype == dtype else lax.convert_element_type(upper, dtype)
    bits = dtype.itemsize * 8
    if unroll >= 2 ** (bits - 1):  # no outer iteration can run: every step is in the rest
        return lax.fori_loop(lo, hi, body, init)
    unsigned = np.dtype(f"uint{bits}")
    span = lax.convert_element_type(hi, unsigned) - lax.convert_element_type(lo, unsigned)
    span = lax.select(hi > lo, span, lax.full_like(span, 0))
    trips = lax.convert_element_type(span // np.array(unroll, unsigned), dtype)  # < 2**(bits-1)
    step = np.array(unroll, dtype)

    def as_index(value: Any) -> Any:
        return lax.full_like(lo, value)  # the bounds' dtype, weakly typed if lower is

    def copies(i: Any, carry: Any) -> Any:  # fori_loop's while loop checks the carry (its message)
        base = as_index(lo + i * step)
        for r in range(unroll):
            carry = body(base + as_index(r), carry)
        return carry

    carry = lax.fori_loop(as_index(0), as_index(trips), copies, init)
    return lax.fori_loop(as_index(lo + trips * step), hi, body, carry)


@functools.cache
def _jitted_static() -> Any:
    import jax

    return jax.jit(_static, static_argnums=(0, 1, 2, 3))
