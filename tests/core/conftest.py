"""What the core tests need, and nothing of the study's (tests/conftest.py is not loaded
where they run alone: ``pytest --confcutdir tests/core tests/core``, as
tests/test_core_envs.py runs them in clean environments with only ``pip install jaxperf``).

The core tests import only jaxperf's public API (``jaxperf``, ``jaxperf.fixes.*``,
``jaxperf.errors``, and ``jaxperf.private_api`` whose checks they test), jax, equinox, numpy
and pytest. They run on CPU with 8 devices, forced before JAX starts, as the rest of the
suite does.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
HOST_DEVICES = 8


def _force_host_devices() -> None:
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", HOST_DEVICES)
    except AttributeError:  # JAX before 0.4.38 has no such option: the XLA flag does the same
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_force_host_platform_device_count" not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={HOST_DEVICES}".strip()
    except RuntimeError:  # JAX already started (inside the whole suite: tests/conftest.py chose)
        pass


_force_host_devices()
