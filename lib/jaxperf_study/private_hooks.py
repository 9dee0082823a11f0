"""The private Equinox hooks only the study uses (the package's own are :mod:`jaxperf.private_api`'s,
which the wheel ships): the stage timers of notebook 01's accounting and the patched Equinox.
Each is pinned by a test in ``tests/test_private_api.py``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: the helpers ``_PmapWrapper._call`` runs, in its order (the stage timers copy that call)
EQUINOX_PMAP_STAGE_HELPERS = (
    "_common_preprocess",
    "_named_in_axes",
    "_resolve_axes",
    "_filter_pmap_cache",
    "_postprocess",
)
#: what the Equinox patch (issue 21) touches in equinox._jit and equinox._errors
EQUINOX_JIT_NAMES = ("_call", "_filter_jit_cache")
EQUINOX_ERRORS_NAMES = ("_error", "branched_error_if_impl", "branched_error_if_impl_jit")


def equinox_pmap_stage_helpers() -> dict[str, Callable[..., Any]]:
    """The private helpers of Equinox's ``_PmapWrapper._call`` by name (the stage timers call them)."""
    module = importlib.import_module("equinox._vmap_pmap")
    return {name: getattr(module, name) for name in EQUINOX_PMAP_STAGE_HELPERS}


def equinox_jit_modules() -> tuple[Any, Any]:
    """The modules ``equinox._jit`` and ``equinox._errors``, each name the patch touches checked."""
    jit_module = importlib.import_module("equinox._jit")
    errors_module = importlib.import_module("equinox._errors")
    for module, names in ((jit_module, EQUINOX_JIT_NAMES), (errors_module, EQUINOX_ERRORS_NAMES)):
        for name in names:
            getattr(module, name)  # AttributeError here, by name, if Equinox moved it
    return jit_module, errors_module
