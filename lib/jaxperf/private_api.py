"""Every use of a private API (``jax._src``, ``equinox._*``) in jaxperf, in one place.

Each hook is a small function that imports the private name at call time, so
that importing jaxperf never depends on it, and each is pinned by
``tests/test_private_api.py``: an upgrade that moves or renames one fails there,
loudly and by name, instead of deep inside a study.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable, Iterator
from typing import Any

# --- shared harness (backend) ---------------------------------------------

# --- dispatch study (equinox#192) -----------------------------------------

# --- loop study (jax#20909) -----------------------------------------------

# --- Triton compile study -------------------------------------------------


TRITON_LOWERING_MODULE = "jax._src.pallas.triton.lowering"
TRITON_LOWERING_FUNCTION = "lower_jaxpr_to_triton_module"


@contextlib.contextmanager
def triton_lowering_hook(on_module: Callable[[Any, float], None]) -> Iterator[None]:
    """Call ``on_module(result, seconds)`` for each module Pallas' Triton lowering builds.

    No public API returns the Triton module (the custom call carries it as
    MLIR bytecode only), so the lowering function that Pallas' registration
    calls, ``jax._src.pallas.triton.lowering.lower_jaxpr_to_triton_module``,
    is wrapped for the duration and restored after. ``result.module`` is the
    MLIR module. Needs JAX only, not the triton package.
    """
    lowering = importlib.import_module(TRITON_LOWERING_MODULE)
    original = getattr(lowering, TRITON_LOWERING_FUNCTION)

    def recording(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = original(*args, **kwargs)
        on_module(result, time.perf_counter() - start)
        return result

    setattr(lowering, TRITON_LOWERING_FUNCTION, recording)
    try:
        yield
    finally:
        setattr(lowering, TRITON_LOWERING_FUNCTION, original)


# --- TPU compile study ------------------------------------------------------
