"""Is Mosaic GPU's own compiler usable on this machine, and for which target?

Mosaic GPU's passes are C++ inside the CUDA plugin, which compiles without a GPU through XLA's
deviceless topology (openxla/xla#16913). In the project's venv the plugin would make JAX start
CUDA in every process, so it lives in its own environment (``tools/make_mosaic_gpu_env.sh``), run
as a subprocess by :mod:`.compile`; :func:`status` says whether that environment is usable."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...paths import PROJECT_ROOT

JAX_VERSION = "0.12.0.1"
ENV_DIR = PROJECT_ROOT / ".envs" / f"mosaic-gpu-{JAX_VERSION}"
PYTHON_ENV = "JAXPERF_MOSAIC_GPU_PYTHON"  # another interpreter with the CUDA plugin
INSTALL_HINT = "bash tools/make_mosaic_gpu_env.sh (from PyPI, about 1.3 GB)"
NOT_INSTALLED = "not measured: the Mosaic GPU compile environment is not built"

# An H100 SXM as XLA's GpuTargetConfig (text proto) for the deviceless topology. The values
# are the ones a jax#28376 reporter's deviceless H100 compile used; Mosaic GPU reads the
# compute capability (9.0 -> sm_90a) and XLA its limits (232448 bytes of opt-in shared memory).
TARGET_CONFIG = """gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84929347584
  shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 }
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 7 }
runtime_version { major: 13 minor: 0 patch: 0 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""


@dataclass(frozen=True)
class MosaicGpuStatus:
    """Whether the compile environment is usable: ``reason`` says why not ("" when it is)."""

    available: bool
    python: str | None
    reason: str


def python() -> Path:
    """The interpreter of the compile environment (``$JAXPERF_MOSAIC_GPU_PYTHON`` if set)."""
    given = os.environ.get(PYTHON_ENV, "")
    return Path(given) if given else ENV_DIR / "bin" / "python"


def status() -> MosaicGpuStatus:
    """Whether the environment is built (its ``.complete`` marker, or the named interpreter)."""
    from ...paths import scrub

    interpreter = python()
    if not interpreter.exists():  # the reason is printed and written to summaries: no machine paths
        return MosaicGpuStatus(
            False, None, scrub(f"{NOT_INSTALLED} ({interpreter} missing); build it: {INSTALL_HINT}")
        )
    if not os.environ.get(PYTHON_ENV) and not (ENV_DIR / ".complete").exists():
        return MosaicGpuStatus(False, None, f"{NOT_INSTALLED} (half-built: no {ENV_DIR.name}/.complete)")
    return MosaicGpuStatus(True, str(interpreter), "")
