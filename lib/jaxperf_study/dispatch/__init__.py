"""The equinox#192 study (notebooks 01, 10 and 11): what ``eqx.filter_pmap`` and
``eqx.filter_jit`` (and Flax's ``nnx.jit``) cost per call and per leaf against ``jax.pmap`` /
``jax.jit`` on the state partitioned once, and what the fixes and a patched Equinox give back.

Notebook 01 is :mod:`.cost`, :mod:`.accounting`, :mod:`.report` and their helpers; notebook 10
(:mod:`.your_step`, :mod:`.your_step_settings`, :mod:`.examples`) runs
:func:`jaxperf.diagnosis.diagnose` on a reader's step; notebook 11 is :mod:`.nnx`; the patch
proposed to Equinox, built beside the shipped one, is :mod:`.eqx_patch`."""

from typing import TYPE_CHECKING

from jaxperf._lazy import exports

if TYPE_CHECKING:
    from jaxperf.fixes import state_step

    from .models import ModelSpec, count_leaves
    from .settings import DispatchSettings
    from .steps import AXIS, make_train_step

# Loaded on first use: importing this package (or its settings) imports no JAX.
_EXPORTS = {
    "state_step": ("jaxperf.fixes", "state_step"),
    "ModelSpec": (".models", "ModelSpec"),
    "count_leaves": (".models", "count_leaves"),
    "DispatchSettings": (".settings", "DispatchSettings"),
    "AXIS": (".steps", "AXIS"),
    "make_train_step": (".steps", "make_train_step"),
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
