"""The benchmark in each release's own interpreter, gathered into one matrix.

``bench_old.py`` (self-contained, Python 3.10 / jax 0.4.13 compatible) runs in
a child interpreter, times the no-op step three ways (``VARIANTS``) on each of
``MODELS``, and prints one JSON document; ``gather`` builds or reuses every
release's environment, runs it there and collects the tidy timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import check_int
from ..paths import PROJECT_ROOT, relative
from .configs import MODELS as MODELS
from .configs import BenchConfig
from .envs import ENVS_DIR, EnvStatus, ensure_env
from .releases import PINS_DIR, available_releases, check_releases

BENCH_SCRIPT = Path(__file__).resolve().parent / "bench_old.py"
BASELINE = "pmap_params"  # the variant every other one is compared with, per pair
VARIANTS = ("filter_pmap", "pmap_params", "pmap_cached")


class BenchmarkError(RuntimeError):
    """``bench_old.py`` failed in a child interpreter; the message carries its stderr."""


def run_bench(
    python_executable: str | os.PathLike,
    config: BenchConfig = BenchConfig(),
    *,
    host_devices: int = 8,
    timeout_s: int = 1800,
) -> dict[str, Any]:
    """Run ``bench_old.py`` with ``python_executable`` and return its JSON document.

    The child gets ``XLA_FLAGS=--xla_force_host_platform_device_count=<host_devices>``
    and ``JAX_PLATFORMS=cpu`` (the old jaxlib wheels on PyPI are CPU-only).
    Raises BenchmarkError, with the child's stderr, when it fails, times out or
    prints something that is not the expected JSON.
    """
    check_int("host_devices", host_devices, minimum=1)
    env = dict(os.environ)
    flag = "--xla_force_host_platform_device_count"
    kept = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(flag)]
    env["XLA_FLAGS"] = " ".join(kept + [f"{flag}={host_devices}"])
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTHONPATH", None)  # the child sees only its own environment's packages
    cmd = [str(python_executable), str(BENCH_SCRIPT), "--host-devices", str(host_devices), *config.argv()]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=PROJECT_ROOT
        )
    except subprocess.TimeoutExpired as err:
        stderr = err.stderr.decode() if isinstance(err.stderr, bytes) else (err.stderr or "")
        raise BenchmarkError(
            f"bench_old.py timed out after {timeout_s} s in {python_executable}:\n{stderr[-4000:]}"
        ) from err
    except OSError as err:
        raise BenchmarkError(f"could not start {python_executable}: {err}") from err
    if proc.returncode != 0:
        raise BenchmarkError(
            f"bench_old.py exited {proc.returncode} in {python_executable}; its stderr:\n{proc.stderr.strip()[-4000:]}"
        )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as err:
        raise BenchmarkError(
            f"bench_old.py printed no valid JSON in {python_executable} ({err}); stdout starts "
            f"{proc.stdout[:300]!r}; stderr:\n{proc.stderr.strip()[-2000:]}"
        ) from err
    if doc.get("protocol") != "jaxperf.versions.bench_old/1" or "rows" not in doc:
        raise BenchmarkError(f"bench_old.py answered an unknown protocol {doc.get('protocol')!r}")
    return doc


@dataclass
class VersionMatrix:
    """Tidy timings (one row per release, round, model, variant, repeat) and one row per environment."""

    timings: pd.DataFrame
    environments: pd.DataFrame
    documents: dict[str, list[dict[str, Any]]]


def gather(
    releases: Sequence[str],
    bench: BenchConfig = BenchConfig(),
    *,
    host_devices: int = 8,
    rounds: int = 1,
    reuse_project_env: bool = True,
    envs_dir: str | os.PathLike = ENVS_DIR,
    pins_dir: str | os.PathLike = PINS_DIR,
    env_timeout_s: int = 900,
    bench_timeout_s: int = 1800,
    progress: Any = None,
    log: Callable[[str], None] = lambda msg: print(msg, file=sys.stderr),
) -> VersionMatrix:
    """Build/reuse each release's environment, then run the benchmark in each.

    With ``rounds`` > 1 the releases run round-robin (A B C A B C), so slow
    drift of a shared machine spreads over all of them. A release that fails to
    build, import or run is reported with its error and skipped thereafter.
    """
    known = available_releases(pins_dir)
    releases = check_releases(list(releases), pins_dir=pins_dir)
    check_int("rounds", rounds, minimum=1)
    statuses: dict[str, EnvStatus] = {}
    for release in releases:
        statuses[release] = ensure_env(
            known[release],
            envs_dir=envs_dir,
            reuse_project_env=reuse_project_env,
            timeout_s=env_timeout_s,
            log=log,
        )
    frames: list[pd.DataFrame] = []
    documents: dict[str, list[dict[str, Any]]] = {r: [] for r in releases}
    bench_wall = {r: 0.0 for r in releases}
    for round_index in range(rounds):
        for release in releases:
            status = statuses[release]
            if status.ok and status.python_executable is not None:
                try:
                    doc = run_bench(
                        status.python_executable, bench, host_devices=host_devices, timeout_s=bench_timeout_s
                    )
                except BenchmarkError as err:
                    status.error = f"BenchmarkError: {err}"
                    log(f"versions: equinox {release} benchmark failed: {err}")
                else:
                    documents[release].append(doc)
                    bench_wall[release] += doc["wall_s"]
                    frame = pd.DataFrame(doc["rows"])
                    frame.insert(0, "round", round_index)
                    frame.insert(0, "python", doc["versions"]["python"])
                    frame.insert(0, "jax", doc["versions"]["jax"])
                    frame.insert(0, "equinox", doc["versions"]["equinox"])
                    frame.insert(0, "release", release)
                    frames.append(frame)
            if progress is not None:
                progress.update(1)
    env_rows = []
    for release in releases:
        status, pins = statuses[release], known[release]
        env_rows.append(
            {
                "release": release,
                "python": pins.python,
                "jax": pins.jax,
                "jaxlib": pins.pins.get("jaxlib", "?"),
                "numpy": pins.pins.get("numpy", "?"),
                "environment": status.kind or "-",
                "build_s": round(status.build_s, 1),
                "bench_wall_s": round(bench_wall[release], 1),
                "rounds_run": len(documents[release]),
                "status": "ok" if status.ok else "failed",
                "error": status.error or "",
            }
        )
    timings = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(
            columns=["release", "equinox", "jax", "python", "round", "model", "variant", "repeat"]
        )
    )
    return VersionMatrix(timings=timings, environments=pd.DataFrame(env_rows), documents=documents)


def documents_table(matrix: VersionMatrix) -> pd.DataFrame:
    """What each child reported about itself: versions, devices, flags, model sizes, the pytree check."""
    rows = []
    for release, docs in matrix.documents.items():
        for round_index, doc in enumerate(docs):
            row = {
                "release": release,
                "round": round_index,
                **{f"{k}_version": v for k, v in doc["versions"].items()},
                "executable": relative(doc["executable"]),
                "backend": doc["backend"],
                "device_count": doc["device_count"],
                "xla_flags": doc["xla_flags"],
                "bench_wall_s": round(doc["wall_s"], 2),
            }
            for model, info in doc["models"].items():
                row[f"{model}_param_arrays"] = info["param_arrays"]
                row[f"{model}_arrays_per_call"] = info["arrays_per_call"]
                row[f"{model}_same_pytree"] = info["same_pytree"]
            rows.append(row)
    return pd.DataFrame(rows)
