"""Every use of a private API (``jax._src``, ``equinox._*``) in jaxperf, in one place.

Each hook is a small function that imports the private name at call time, so
that importing jaxperf never depends on it, and each is pinned by
``tests/test_private_api.py``: an upgrade that moves or renames one fails there,
loudly and by name, instead of deep inside a study.
"""

from __future__ import annotations

# --- shared harness (backend) ---------------------------------------------

# --- dispatch study (equinox#192) -----------------------------------------

# --- loop study (jax#20909) -----------------------------------------------

# --- Triton compile study -------------------------------------------------

# --- TPU compile study ------------------------------------------------------
