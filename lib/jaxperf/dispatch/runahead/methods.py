"""The methods the runs-ahead study times: every dispatch method (:data:`jaxperf.dispatch.METHODS`)
and, beside them, ``eqx.filter_jit`` with the proposed change patched in (:mod:`.eqx_fix`),
which is this study's demonstration, not a method of the dispatch study."""

from __future__ import annotations

from typing import Any

import jax

from ...errors import check_choice
from ..methods import Runner, build_filter_jit_like, build_runner
from . import eqx_fix
from .config import ALL, PATCHED
from .config import EXTRA as EXTRA

#: method id -> label, beyond the dispatch study's


def label(method: str) -> str:
    return ALL.get(method, method)


def build(
    method: str, step: str, model: Any, opt_state: Any, x: jax.Array, n_devices: int, *, donate: bool = False
) -> Runner:
    """:func:`jaxperf.dispatch.build_runner` for a dispatch method; the patched ``eqx.filter_jit``
    on one device for :data:`PATCHED`."""
    check_choice("method", method, ALL)
    if method == PATCHED:
        return build_filter_jit_like(
            eqx_fix.fixed_filter_jit, PATCHED, step, model, opt_state, x, donate=donate
        )
    return build_runner(method, step, model, opt_state, x, n_devices, donate=donate)
