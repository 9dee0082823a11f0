"""What made a result: versions, devices, flags, commit, parameters.

Every results file carries this as a JSON sidecar, every summary.md ends with
it, and every executed notebook prints it near the top.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from jaxperf import backend
from jaxperf.backend import BackendInfo
from jaxperf.paths import PROJECT_ROOT

PACKAGES = tuple(
    "jax jaxlib equinox flax optax numpy pandas matplotlib seaborn papermill jupyterlab ipykernel triton "
    "jax-cuda13-plugin libtpu".split()
)


def git_commit() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()

    try:
        return {
            "commit": git("rev-parse", "HEAD"),
            # The code that ran: results/ and figures/ change under a run that publishes as it goes.
            "dirty": bool(
                git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results", ":!figures")
            ),
        }
    except (OSError, subprocess.SubprocessError):
        # A copy without .git (a lent device's working tree): tools/device/manifest.py checked
        # every tracked file against the commit the copy came from and exported the answer.
        commit = os.environ.get("JAXPERF_GIT_COMMIT", "")
        if len(commit) == 40:
            return {"commit": commit, "dirty": os.environ.get("JAXPERF_GIT_DIRTY") != "false"}
        return {"commit": "unknown", "dirty": None}


def versus_lock(packages: dict[str, str]) -> dict[str, str]:
    """``{name: "ran X, locked Y"}`` for each package whose version differs from requirements.lock
    (a lent machine's own JAX, say); empty where the lock is absent."""
    lock = PROJECT_ROOT / "requirements.lock"
    if not lock.is_file():
        return {}
    locked = {}
    for line in lock.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            locked[name.strip().lower().replace("_", "-")] = version.strip()
    return {
        name: f"ran {version}, locked {locked[name]}"
        for name, version in sorted(packages.items())
        if name in locked and locked[name] != version
    }


def code_files(own_package: str | None = None) -> list[str]:
    """The project files whose code made a result: every module of ``jaxperf`` and of the study
    beside it (``jaxperf_study``) loaded in this process, and every module of ``own_package``
    (the study's own package, whose modules may run in child processes), as paths relative to
    the project, sorted."""
    lib = PROJECT_ROOT / "lib"
    files = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.partition(".")[0] in ("jaxperf", "jaxperf_study") and path and Path(path).is_relative_to(lib):
            files.add(Path(path))
    if own_package:
        package = lib / own_package.replace(".", "/")
        if package.is_dir():
            files.update(package.rglob("*.py"))
    return sorted(p.relative_to(PROJECT_ROOT).as_posix() for p in files)


def capture(
    parameters: dict[str, Any] | None, info: BackendInfo, environment: str | None = None
) -> dict[str, Any]:
    """Snapshot of the environment of a run on ``info``'s backend (already configured by
    :func:`jaxperf.backend.configure`, whose backend name it records), with the
    parameters that ran. ``environment``: JAX's report from the process that opened the device,
    where it is not this one (an accelerator run measures in fresh processes)."""
    import jax

    packages = backend.package_versions(PACKAGES)  # the installed ones
    return {
        "timestamp_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "backend": info.backend,
        "device_kind": info.device_kind,
        "device_count": info.device_count,
        "platform_version": info.platform_version,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "jax_platforms": str(jax.config.jax_platforms or ""),
        "packages": packages,
        "versus_lock": versus_lock(packages),
        "git": git_commit(),
        "parameters": dict(parameters or {}),
        # the variables JAX prints may name a folder of this machine (a run's compilation cache)
        "jax_environment_info": re.sub(
            r"=/\S*",
            "=<a folder of the run>",
            environment or jax.print_environment_info(return_string=True) or "",
        ),
        "nvidia_smi": _nvidia_smi() if info.backend == "gpu" else None,
    }


def _nvidia_smi() -> str | None:
    try:
        return subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def footer(prov: dict[str, Any]) -> str:
    """One line for a figure: backend, device, versions, commit."""
    pkgs = prov.get("packages", {})
    commit = prov.get("git", {}).get("commit", "unknown")[:10]
    return (
        f"{prov.get('backend', '?')}: {prov.get('device_count', '?')} x {prov.get('device_kind', '?')} | "
        f"jax {pkgs.get('jax', '?')}, jaxlib {pkgs.get('jaxlib', '?')}, equinox {pkgs.get('equinox', '?')}, "
        f"python {prov.get('python', '?')} | {prov.get('timestamp_utc', '?')} | commit {commit}"
    )


def environment_block(prov: dict[str, Any]) -> str:
    """Markdown block for summary.md and the top of each executed notebook."""
    lines = [
        "<details><summary>Environment</summary>",
        "",
        "```",
        f"backend: {prov.get('backend')}  devices: {prov.get('device_count')} x {prov.get('device_kind')}",
        f"python: {prov.get('python')}  platform: {prov.get('platform')}  cpus: {prov.get('cpu_count')}",
        f"XLA_FLAGS: {prov.get('xla_flags') or '(unset)'}",
        "packages: " + ", ".join(f"{k}=={v}" for k, v in prov.get("packages", {}).items()),
        "not as locked: " + ("; ".join(f"{k} {v}" for k, v in prov.get("versus_lock", {}).items()) or "none"),
        f"git: {prov.get('git', {}).get('commit')} (dirty={prov.get('git', {}).get('dirty')})",
        f"recorded: {prov.get('timestamp_utc')}",
        f"parameters: {prov.get('parameters')}",
        "",
        (prov.get("jax_environment_info") or "").strip(),
    ]
    if prov.get("nvidia_smi"):
        lines += ["", prov["nvidia_smi"].strip()]
    lines += ["```", "", "</details>"]
    return "\n".join(lines)
