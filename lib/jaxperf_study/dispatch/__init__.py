"""The dispatch study (equinox#192, notebooks 01, 10 and 11): what ``eqx.filter_pmap`` and
``eqx.filter_jit`` (and Flax's ``nnx.jit``, :mod:`.nnx`) cost per call, per leaf, against
``jax.pmap`` / ``jax.jit`` on the state partitioned once, and what the drop-in fixes
(:mod:`jaxperf.fixes`) and a patched Equinox (:mod:`.eqx_patch`) give back."""

from typing import TYPE_CHECKING

from jaxperf._lazy import exports

if TYPE_CHECKING:
    from jaxperf.fixes import state_step

    from .methods import build_runner
    from .models import ModelSpec, count_leaves
    from .settings import DispatchSettings
    from .steps import AXIS, make_train_step

# Loaded on first use: importing this package (or its settings) imports no JAX.
_EXPORTS = {
    "state_step": ("jaxperf.fixes", "state_step"),
    "build_runner": (".methods", "build_runner"),
    "ModelSpec": (".models", "ModelSpec"),
    "count_leaves": (".models", "count_leaves"),
    "DispatchSettings": (".settings", "DispatchSettings"),
    "AXIS": (".steps", "AXIS"),
    "make_train_step": (".steps", "make_train_step"),
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
