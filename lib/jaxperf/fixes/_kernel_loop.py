"""``kernel_loop``: a Pallas kernel's loop written once and built in any loop form (jax-ml/jax#20909),
each running ``carry = body(j, carry)`` for ``j`` in ``range(lower, upper)`` inside a Pallas kernel
or plain ``jax.jit``: the Python loop, ``fori_loop(unroll=k)``, ``pl.loop`` or
:func:`~._unroll.hand_unrolled_fori`. :func:`run_loop` runs every form the jax#20909 study uses
(its ``hoisted`` and ``scalar_carry`` too); :func:`recording` lets ``python -m jaxperf loops`` see
which loops a traced kernel ran and for how many steps (what turns two compiles into "work per
loop step")."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import bad_value, check_choice
from ._unroll import Body, Carry, check_unroll, hand_unrolled_fori, static_bounds

#: The forms :func:`kernel_loop` takes (``hoisted`` and ``scalar_carry`` rewrite a kernel's
#: body around its invariant, so only a kernel's own factory can offer them).
KERNEL_LOOP_FORMS = ("python", "fori", "pl_loop", "hand_unrolled")
#: Every form :func:`run_loop` runs (``hoisted`` and ``scalar_carry`` run as ``hand_unrolled``).
LOOP_FORMS = (*KERNEL_LOOP_FORMS, "hoisted", "scalar_carry")
_FORM_HELP = (
    "'python', or one of 'fori', 'pl_loop', 'hand_unrolled' with an optional ' u=<k>' "
    "(k >= 1 body copies per iteration), e.g. 'fori u=4'"
)


@dataclass(frozen=True)
class LoopCall:
    """One :func:`kernel_loop` traced: its form and its trip count (None: traced bounds)."""

    form: str
    unroll: int
    trips: int | None


_RECORDER: contextvars.ContextVar[list[LoopCall] | None] = contextvars.ContextVar(
    "jaxperf_kernel_loop_recorder", default=None
)


@contextlib.contextmanager
def recording() -> Iterator[list[LoopCall]]:
    """Collect every loop :func:`run_loop` traces inside the block, in order (one inside a Python
    loop's body once per step, one inside a ``fori_loop`` body once)."""
    calls: list[LoopCall] = []
    token = _RECORDER.set(calls)
    try:
        yield calls
    finally:
        _RECORDER.reset(token)


def parse_form(form: Any) -> tuple[str, int]:
    """``(loop form, unroll)`` of a form name: ``"python"``, ``"fori"`` (unroll 1) or
    ``"fori u=4"``; ValueError naming ``form`` and what is allowed for anything else."""
    if not isinstance(form, str):
        raise bad_value("form", form, _FORM_HELP)
    name, sep, unroll = form.partition(" u=")
    if name not in KERNEL_LOOP_FORMS or (sep and not unroll.isdigit()) or (sep and int(unroll) < 1):
        raise bad_value("form", form, _FORM_HELP)
    if name == "python" and sep and int(unroll) != 1:
        raise bad_value("form", form, "'python' alone (a Python loop is fully unrolled)")
    return name, int(unroll) if sep else 1


def kernel_loop(lower: Any, upper: Any, body: Body, init: Carry, *, form: str = "fori") -> Carry:
    """``carry = body(j, carry)`` for ``j`` in ``range(lower, upper)``, written once and run in the
    loop ``form`` asked for: ``"python"`` (a Python ``for`` loop, traced once per step: needs static
    bounds), ``"fori u=k"`` (``lax.fori_loop``), ``"pl_loop u=k"`` (``pl.loop``) or
    ``"hand_unrolled u=k"`` (:func:`jaxperf.hand_unrolled_fori`, which lowers on every Pallas
    backend). Returns what ``lax.fori_loop`` returns; ValueError names ``form`` for an unknown form
    or traced bounds with ``"python"``. Whether a form lowers is Pallas' error, as without this helper.

    Example, inside a Pallas kernel::

        def kernel(x_ref, o_ref, *, form):
            def body(k, acc):
                return acc + x_ref[pl.ds(k * 64, 64), :].sum(axis=0)
            o_ref[...] = jaxperf.kernel_loop(0, x_ref.shape[0] // 64, body, zeros, form=form)
    """
    loop_form, unroll = parse_form(form)
    if loop_form == "python" and static_bounds(lower, upper) is None:
        raise bad_value(
            "form", form, "a looping form ('fori', ...) for traced bounds: 'python' needs static ints"
        )
    return run_loop(loop_form, lower, upper, body, init, unroll)


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
    """Run ``body`` from ``lower`` to ``upper`` in ``loop_form`` with ``unroll`` body copies per
    iteration (1 for ``python``); ``hoisted`` and ``scalar_carry`` run as ``hand_unrolled`` (the
    kernel passes a body without the invariant)."""
    from jax import lax

    check_choice("loop_form", loop_form, LOOP_FORMS)
    check_unroll(unroll)
    calls = _RECORDER.get()
    if calls is not None:  # the loop study's engine is watching (see recording())
        bounds = static_bounds(lower, upper)
        calls.append(LoopCall(loop_form, unroll, None if bounds is None else max(bounds[1] - bounds[0], 0)))
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
