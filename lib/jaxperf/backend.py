"""Choosing the backend before JAX starts it: on CPU, N host devices (default 8, like a TPU
v3-8), which only works before the first ``jax.devices()`` or op. A backend asked for but not
present is an error, never simulated: the study reports it as not measured."""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import bad_value, check_choice, check_int

BACKENDS = ("auto", "cpu", "gpu", "tpu")
# JAX's platform names for each study backend.
_JAX_PLATFORMS = {"cpu": "cpu", "gpu": "cuda,rocm", "tpu": "tpu"}


class BackendUnavailableError(RuntimeError):
    """The requested backend is not present on this machine."""


@dataclass(frozen=True)
class BackendInfo:
    backend: str  # "cpu", "gpu" or "tpu"
    device_kind: str  # e.g. "cpu", "NVIDIA H200", "TPU v3"
    device_count: int
    platform_version: str


def package_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Installed version of each package; absent ones are left out."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _backends_started() -> bool:
    from .private_api import jax_backends_initialized

    return jax_backends_initialized()


def _plugins() -> list[str]:
    return [(d.metadata["Name"] or "").lower().replace("_", "-") for d in importlib.metadata.distributions()]


def _platforms_for(backend: str) -> str:
    """JAX's platform names for ``backend``; for "gpu", only the GPU plugins installed (JAX
    refuses a platform it has no plugin for, so "cuda,rocm" fails on an NVIDIA-only machine)."""
    if backend != "gpu":
        return _JAX_PLATFORMS[backend]
    found = [p for p in ("cuda", "rocm") if any(n.startswith(f"jax-{p}") for n in _plugins())]
    return ",".join(found) or "cuda"


def _auto_platforms(dev: Path = Path("/dev")) -> str | None:
    """What ``backend="auto"`` may start: ``"cpu"`` with no TPU device node and no JAX GPU plugin,
    else None (JAX's choice). Why: with libtpu installed (the ``tpu`` extra compiles for TPUs on a
    CPU) JAX would probe for TPU hosts in every notebook and print libtpu's errors."""
    if any(dev.glob("accel*")) or (dev / "vfio").exists():
        return None
    if any(name.startswith(("jax-cuda", "jax-rocm")) for name in _plugins()):
        return None
    return "cpu"


# Device nodes (and tools) that show an accelerator is attached, read with the standard library
# only (run_all.sh refuses a missing backend with them before any environment exists).
_GPU_NODES = ("nvidia[0-9]*", "kfd", "dxg")  # NVIDIA, AMD ROCm, WSL2's GPU
_GPU_TOOLS = ("nvidia-smi", "rocm-smi")
_TPU_NODES = ("accel*", "vfio")


def hardware(dev: Path = Path("/dev")) -> dict[str, str | None]:
    """For each backend, what shows it is attached (a device node or driver tool), or None (definite);
    a sign is no promise that JAX can use it. Standard library only."""
    import shutil

    def first(patterns: tuple[str, ...]) -> str | None:
        for pattern in patterns:
            for node in sorted(dev.glob(pattern)):
                return str(node)
        return None

    gpu = first(_GPU_NODES) or next((t for t in _GPU_TOOLS if shutil.which(t)), None)
    return {"cpu": "always", "gpu": gpu, "tpu": first(_TPU_NODES)}


def missing(backend: str, dev: Path = Path("/dev")) -> str | None:
    """Why ``backend`` is certainly not present here (naming what is), or None when it may be."""
    check_choice("backend", backend, BACKENDS)
    found = hardware(dev)
    if backend == "auto" or found.get(backend):
        return None
    what = {
        "gpu": "no GPU was found (no /dev/nvidia*, /dev/kfd or /dev/dxg, no nvidia-smi or rocm-smi)",
        "tpu": "no TPU was found (no /dev/accel* or /dev/vfio)",
    }[backend]
    return f"{what}; available here: {', '.join(b for b, sign in found.items() if sign)}"


def configure(backend: str = "auto", host_devices: int = 8) -> BackendInfo:
    """Select ``backend`` and, on CPU, force ``host_devices`` devices, before any JAX device is
    touched. ValueError for a bad argument, BackendUnavailableError when the backend is not
    present, RuntimeError when JAX already started otherwise (restart the kernel)."""
    check_choice("backend", backend, BACKENDS)
    check_int("host_devices", host_devices, minimum=1)
    import jax

    if not _backends_started():
        if backend != "auto":
            jax.config.update("jax_platforms", _platforms_for(backend))
        elif not jax.config.jax_platforms and (platforms := _auto_platforms()):
            jax.config.update("jax_platforms", platforms)
        jax.config.update("jax_num_cpu_devices", host_devices)
    try:
        devices = jax.devices()
    except Exception as err:  # RuntimeError, or a bare AssertionError from JAX's backend set-up
        why = missing(backend) if backend != "auto" else None
        reason = why or f"JAX could not start it: {type(err).__name__}: {err}".rstrip(": ")
        raise BackendUnavailableError(
            f"backend={backend!r} is not available on this machine: {reason}; "
            "it is reported as not measured, never simulated."
        ) from err
    actual = jax.default_backend()
    actual = {"cuda": "gpu", "rocm": "gpu"}.get(actual, actual)
    if backend != "auto" and actual != backend:
        raise RuntimeError(
            f"JAX already started on {actual!r}, but backend={backend!r} was asked for: "
            "restart the kernel and call configure() first."
        )
    if actual == "cpu" and len(devices) != host_devices:
        raise RuntimeError(
            f"JAX's CPU backend already started with {len(devices)} devices, but "
            f"host_devices={host_devices}: restart the kernel and call configure() first."
        )
    version = str(getattr(devices[0].client, "platform_version", ""))
    return BackendInfo(actual, devices[0].device_kind, len(devices), version)


def _main(argv: list[str]) -> int:
    """``python -m jaxperf.backend BACKEND [HOST_DEVICES]``: print the resolved backend."""
    try:
        devices = argv[1] if len(argv) > 1 else "8"
        if not devices.isdigit():
            raise bad_value("host_devices", devices, "a positive integer")
        info = configure(argv[0] if argv else "auto", int(devices))
    except (ValueError, BackendUnavailableError, RuntimeError) as err:
        print(err, file=sys.stderr)
        return 1
    print(info.backend)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
