"""Changes Equinox could merge for equinox#192: ``eqx.filter_pmap`` working with the leaves of
its inputs and outputs rather than rebuilding their pytrees on each call, and ``eqx.filter_jit``
waiting only when its compiled call holds an error check.

Each is a ``git format-patch`` of one commit on Equinox's main (``results/equinox_patch/1-*.diff``,
``2-*.diff``; each applies alone, with its tests in Equinox's own test files); both apply
unchanged to Equinox 0.13.8, the release the project pins. The text to paste into equinox#192 is
``tools/templates/equinox-192.md``, filled from notebook 01's summary by ``tools/readme.py``.
"""

from typing import TYPE_CHECKING

from jaxperf._lazy import exports

if TYPE_CHECKING:
    from . import diff, load, probe, suite
    from .load import (
        DIFF_PATHS,
        EQUINOX_MAIN,
        PATCHED_RELEASE,
        PatchedEquinox,
        patched_equinox,
        patched_filter_jit,
        patched_filter_pmap,
        shipped_error_checks_routed,
    )

# Loaded on first use: importing this package imports no JAX or Equinox.
_EXPORTS = {
    "diff": (".diff", None),
    "load": (".load", None),
    "probe": (".probe", None),
    "suite": (".suite", None),
    "DIFF_PATHS": (".load", "DIFF_PATHS"),
    "EQUINOX_MAIN": (".load", "EQUINOX_MAIN"),
    "PATCHED_RELEASE": (".load", "PATCHED_RELEASE"),
    "PatchedEquinox": (".load", "PatchedEquinox"),
    "patched_equinox": (".load", "patched_equinox"),
    "patched_filter_jit": (".load", "patched_filter_jit"),
    "patched_filter_pmap": (".load", "patched_filter_pmap"),
    "shipped_error_checks_routed": (".load", "shipped_error_checks_routed"),
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
