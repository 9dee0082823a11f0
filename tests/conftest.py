"""Shared fixtures. Tests run on CPU with 8 forced host devices, set before JAX starts (as
the notebooks do), so multi-device code paths are exercised. Helper functions that tests
import live in ``notebook_support`` (a test importing ``conftest`` by name would get
whichever conftest.py pytest loaded last: tests/core has its own)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jaxperf.paths import PROJECT_ROOT

os.environ.setdefault("JAX_PLATFORMS", "cpu")


ALT_ENV = PROJECT_ROOT / ".envs" / "alt-jax-0.11.2"


@pytest.fixture(scope="session")
def alt_python() -> Path:
    """A second environment standing in for the GPU machine's image: jax/jaxlib 0.11.2,
    triton 3.6.0, no Jupyter stack (tools/make_alt_env.sh). Built from PyPI on first use
    (about 30 s), else from the wheels in .whl/; skipped only when neither can build it.
    ``./run_all.sh --python`` (tests/test_run_all.py) adds the Jupyter stack it lacks to it;
    the device run's dry run hides those modules again, as the image lacks them."""
    python = ALT_ENV / "bin" / "python"
    tail = ""
    for args in ([], ["--offline"]):
        try:
            build = subprocess.run(
                ["bash", str(PROJECT_ROOT / "tools" / "make_alt_env.sh"), *args],
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.TimeoutExpired:
            tail += f"make_alt_env.sh {' '.join(args)} timed out after 900 s\n"
            continue
        if build.returncode == 0 and (ALT_ENV / ".complete").exists():
            return python
        tail += build.stderr[-500:]
    pytest.skip(f"no second JAX environment at {ALT_ENV} (tools/make_alt_env.sh needs PyPI):\n{tail}")


@pytest.fixture(scope="session", autouse=True)
def _cpu_backend():
    from jaxperf import backend

    return backend.configure("cpu", 8)
