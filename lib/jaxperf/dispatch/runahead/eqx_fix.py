"""Notebook 07's view of the Equinox patch (:mod:`jaxperf.eqx_patch`): ``eqx.filter_jit`` that
waits for its call only when the compiled function holds an error check.

Equinox 0.13.8's ``_filter_jit_cache`` makes every compiled call also return
``marker = jnp.array(0)``, and ``_call`` waits for that marker before returning, so that a
failing ``eqx.error_if`` raises inside ``filter_jit``'s ``try`` with Equinox's readable message.
The wait is unconditional: a function with no error check waits too, and a training loop can
never run ahead of its steps. The patch looks for an ``eqx.error_if`` callback in the whole
jaxpr of the call (reused inner traces included) and returns ``marker = None`` when there is
none, so that ``_call`` has nothing to wait for. Two other diffs remove the per-call
partition/combine of ``filter_jit`` and ``filter_pmap`` (notebook 01 times that part).

:func:`fixed_filter_jit` is the patched ``filter_jit`` (:func:`jaxperf.eqx_patch.patched_filter_jit`,
Equinox's own source with the patch applied, loaded beside the shipped Equinox) with the shipped
``eqx.error_if`` routed through the patched Equinox during each call, so that a step written
against ``eqx`` behaves as it would with the patch installed; :func:`fix_diff` is the part of
the patch that makes the change (``equinox/_jit.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...eqx_patch import diff, load

#: the files of the patch that carry filter_jit's change (its pmap half is in _vmap_pmap.py)
FILES = ("equinox/_jit.py",)


def fix_diff() -> str:
    """The patch's change to ``equinox/_jit.py``, as a unified diff against Equinox's main
    and 0.13.8 (the committed ``results/equinox_patch/2-filter-jit-wait-only-on-error-checks.diff``)."""
    sections = diff.file_sections(load.JIT_DIFF_PATH.read_text())
    return "".join(sections[path] for path in FILES)


def fixed_filter_jit(fun: Callable[..., Any] | None = None, *, donate: str = "none") -> Any:
    """``eqx.filter_jit(fun, donate=donate)`` as the patched Equinox builds it (a decorator too);
    each call and ``.lower(...)`` runs with the shipped ``eqx.error_if`` routed through the
    patched Equinox (:func:`jaxperf.eqx_patch.shipped_error_checks_routed`)."""
    if fun is None:
        return functools.partial(fixed_filter_jit, donate=donate)
    wrapper = load.patched_filter_jit(fun, donate=donate)

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        with load.shipped_error_checks_routed():
            return wrapper(*args, **kwargs)

    def lower(*args: Any, **kwargs: Any) -> Any:
        with load.shipped_error_checks_routed():
            return wrapper.lower(*args, **kwargs)

    call.lower = lower  # type: ignore[attr-defined]
    return call
