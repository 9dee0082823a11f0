"""What a device call runs on, read before anything runs (tools/device/run.sh prints it first).

    python tools/device/machine.py OUT.json

Prints, one ``machine:`` line each, and writes as JSON to OUT.json (it comes back with the
call's files): the host; the GPU (``nvidia-smi``'s name, driver, clocks and memory, then its
plain table); the version of each package that imports, and from where (the pinned Equinox
ahead of the image's); ``ptxas`` (on PATH, its ``--version``, and the copies JAX's CUDA and
Triton packages carry: Mosaic GPU needs one); whether a loopback TCP socket binds (papermill's
kernel needs one); the dispatching thread's CPU clock step (``jaxperf.timing_config.cpu_tick``:
10 ms on the TPU host); the GPU memory policy (``XLA_PYTHON_CLIENT_*``); whether Flax's
sources for notebook 11 are carried; and JAX's devices, opened in this process, which exits
before any notebook starts (one process holds the device at a time).

Run by the Python ``run.sh`` chose, with its ``PYTHONPATH``: standard library at the top, the
rest imported inside, so that a package that fails is a line that says so, never a failed call.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: what nvidia-smi is asked for (GPU, driver, clocks now and at most, memory)
GPU_QUERY = "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total"
#: the packages whose versions a device number depends on: (import name, distribution name)
PACKAGES = (
    ("jax", "jax"),
    ("jaxlib", "jaxlib"),
    (None, "jax-cuda13-plugin"),
    (None, "jax-cuda13-pjrt"),
    (None, "libtpu"),
    ("triton", "triton"),
    ("equinox", "equinox"),
    ("flax", "flax"),
    ("optax", "optax"),
    ("numpy", "numpy"),
    ("jaxtyping", "jaxtyping"),
    ("papermill", "papermill"),
)
#: the GPU memory policy's variables (run.sh sets the first)
MEMORY = ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR")


def _run(cmd: list[str], timeout: float = 30) -> str:
    """A command's output, or why there is none."""
    if shutil.which(cmd[0]) is None:
        return f"{cmd[0]}: not on PATH"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as err:
        return f"{cmd[0]}: {type(err).__name__}: {err}"
    return (proc.stdout + proc.stderr).strip() or f"{cmd[0]}: exit {proc.returncode}, no output"


def versions() -> dict[str, dict[str, str]]:
    """``{distribution: {"version", "from"}}`` as this Python imports them; absent ones left out."""
    out = {}
    for module, dist in PACKAGES:
        try:
            if module is None:
                found = md.distribution(dist)
                out[dist] = {"version": found.version, "from": str(found.locate_file(""))}
                continue
            imported = importlib.import_module(module)
            version = getattr(imported, "__version__", None) or md.version(dist)
            out[dist] = {"version": str(version), "from": str(Path(imported.__file__).parent)}
        except md.PackageNotFoundError:
            continue
        except ImportError as err:
            if isinstance(err, ModuleNotFoundError) and err.name == module:
                continue
            out[dist] = {"version": "fails to import", "from": f"{type(err).__name__}: {err}"}
        except Exception as err:  # noqa: BLE001 - a package that breaks on import is a fact to print
            out[dist] = {"version": "fails to import", "from": f"{type(err).__name__}: {err}"}
    return out


def _release(said: str) -> str:
    """The line of a ``--version`` that names the release (CUDA's "Cuda compilation tools, release ...")."""
    lines = said.splitlines() or [""]
    return next((ln for ln in lines if "release" in ln), lines[-1])


def ptxas() -> dict[str, Any]:
    """``ptxas`` on PATH (where, its version) and the copies JAX's CUDA and Triton packages keep."""
    on_path = shutil.which("ptxas")
    bundled = sorted(
        {
            str(p)
            for entry in sys.path
            if entry and Path(entry).is_dir()
            for pattern in (
                "nvidia/cu*/bin/ptxas",
                "nvidia/cuda_nvcc/bin/ptxas",
                "triton/backends/nvidia/bin/ptxas",
            )
            for p in Path(entry).glob(pattern)
        }
    )
    return {
        "on_path": on_path,
        "version": _release(_run([on_path, "--version"])) if on_path else None,
        "bundled": bundled,
    }


def loopback() -> str:
    """Whether a TCP socket binds and listens on 127.0.0.1: "binds", or the error."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen(1)
        return "binds"
    except OSError as err:
        return f"refused: {err}"


def cpu_tick_ms() -> float | None:
    """The dispatching thread's CPU clock step, in ms, as the study reads it."""
    sys.path.insert(0, str(ROOT / "lib"))
    try:
        from jaxperf.timing_config import cpu_tick

        return 1e3 * cpu_tick(time.thread_time, spin_s=0.2)
    except Exception:  # noqa: BLE001 - said as "not read"
        return None


def flax_sources(flax: str | None) -> str:
    """Whether notebook 11 has Flax's sources: the sdist of the Flax that runs, carried."""
    if flax is None:
        return "no flax"
    carried = sorted(ROOT.glob(f".whl-*/flax-{flax}.tar.gz"))
    if carried:
        return f"carried: {carried[0].relative_to(ROOT)}"
    return f"not carried (flax=={flax}): notebook 11 reports Flax's suite not run"


def devices() -> dict[str, Any]:
    """JAX's backend and devices, opened here (this process exits before any other opens them)."""
    try:
        import jax

        found = jax.devices()
        return {
            "backend": jax.default_backend(),
            "devices": [str(d) for d in found],
            "device_kind": found[0].device_kind if found else None,
        }
    except Exception as err:  # noqa: BLE001 - a device that does not open is what to print
        return {"backend": None, "error": f"{type(err).__name__}: {err}"}


def read() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo")
    total = next(
        (ln.split()[1] for ln in meminfo.read_text().splitlines() if ln.startswith("MemTotal")), None
    )
    found: dict[str, Any] = {
        "uname": " ".join(platform.uname()),
        "cpus": os.cpu_count(),
        "memory_gib": round(int(total) / 2**20, 1) if meminfo.exists() and total else None,
        "python": f"{sys.version.split()[0]} ({sys.executable})",
        "nvidia_smi_query": _run(["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv"]),
        "nvidia_smi": _run(["nvidia-smi"]),
        "versions": versions(),
        "ptxas": ptxas(),
        "loopback_tcp": loopback(),
        "cpu_tick_ms": cpu_tick_ms(),
        "memory_policy": {name: os.environ.get(name, "(unset)") for name in MEMORY},
        "pythonpath": [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p],
    }
    found["flax_sources"] = flax_sources(found["versions"].get("flax", {}).get("version"))
    found.update(devices())
    return found


def lines(found: dict[str, Any]) -> list[str]:
    """What run.sh prints, ``machine:`` first on every line."""
    out = [
        f"host: {found['uname']}, {found['cpus']} CPUs, {found['memory_gib']} GiB",
        f"python {found['python']}",
    ]
    out += ["nvidia-smi: " + ln.removeprefix("nvidia-smi: ") for ln in found["nvidia_smi_query"].splitlines()]
    out += (
        ["  " + ln for ln in found["nvidia_smi"].splitlines()]
        if "not on PATH" not in found["nvidia_smi"]
        else []
    )
    out += [f"{name} {v['version']} ({v['from']})" for name, v in found["versions"].items()]
    px = found["ptxas"]
    out.append(
        f"ptxas on PATH: {px['on_path']} ({px['version']})" if px["on_path"] else "ptxas on PATH: none"
    )
    out.append("ptxas in the packages: " + (", ".join(px["bundled"]) or "none"))
    out.append(f"loopback TCP socket: {found['loopback_tcp']}")
    tick = found["cpu_tick_ms"]
    out.append(
        f"thread CPU clock step: {tick:.3g} ms" if tick is not None else "thread CPU clock step: not read"
    )
    out.append("GPU memory: " + " ".join(f"{k}={v}" for k, v in found["memory_policy"].items()))
    out.append(f"Flax's sources (notebook 11): {found['flax_sources']}")
    if found.get("backend"):
        out.append(f"JAX backend {found['backend']}: {found['device_kind']}; {', '.join(found['devices'])}")
    else:
        out.append(f"JAX opened no device: {found.get('error')}")
    return ["machine: " + ln for ln in out]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/device/machine.py OUT.json", file=sys.stderr)
        return 2
    found = read()
    print("\n".join(lines(found)), flush=True)
    Path(argv[0]).write_text(json.dumps(found, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
