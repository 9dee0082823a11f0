"""The child's side of a launch: join the job, guard against an orphaned life,
write results as files.

``initialize()`` reads what ``launch.launch`` put in the environment, sets the
local CPU device count (before JAX starts its backend) and calls
``jax.distributed.initialize`` with an explicit coordinator. Without those
variables (a TPU pod, a Slurm allocation) it calls
``jax.distributed.initialize()`` with no arguments and lets JAX detect the
cluster.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import records
from .launch import (
    ENV_COORDINATOR,
    ENV_LOCAL_DEVICES,
    ENV_NUM_PROCESSES,
    ENV_OUT_DIR,
    ENV_PARENT_PID,
    ENV_PROCESS_ID,
)

_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Place:
    """Where this process sits in the job."""

    process_id: int
    processes: int
    local_devices: int
    coordinator: str  # "" when JAX detected the cluster itself
    out_dir: Path


def guard_parent(parent_pid: int | None = None, poll_s: float = 0.2) -> None:
    """Die with the launcher, and take this process's own children along.

    Linux sends SIGTERM when the parent exits (``PR_SET_PDEATHSIG``); the handler
    and a daemon thread that watches the parent pid (the backstop, e.g. while the
    main thread waits inside a collective) both SIGKILL this process's group. The
    group is only killed when this process leads it, as ``launch.run`` arranges.
    """
    parent = parent_pid or int(os.environ.get(ENV_PARENT_PID, "0") or 0)
    if not parent:
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: _die())
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the launcher died before the guard was in place
        _die()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        _die()

    threading.Thread(target=watch, name="jaxperf-parent-guard", daemon=True).start()


def _die() -> None:
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(70)


def place_from_env() -> Place:
    """This process's place as the launcher described it (ids default to a single process)."""
    return Place(
        process_id=int(os.environ.get(ENV_PROCESS_ID, "0")),
        processes=int(os.environ.get(ENV_NUM_PROCESSES, "1")),
        local_devices=int(os.environ.get(ENV_LOCAL_DEVICES, "1")),
        coordinator=os.environ.get(ENV_COORDINATOR, ""),
        out_dir=Path(os.environ.get(ENV_OUT_DIR, ".")),
    )


def initialize(place: Place | None = None, *, timeout_s: int = 60) -> Place:
    """Join the job described by ``place`` (default: the environment); return this
    process's place as JAX sees it after joining.

    ``coordinator`` ``"host:port"``: join that coordinator (what ``launch.run`` sets);
    ``"auto"``: ``jax.distributed.initialize()`` with no arguments, JAX detects the
    cluster (TPU pod, Slurm, Open MPI, ...); ``""``: a single process, nothing to join.
    On CPU, ``jax_num_cpu_devices`` is set first; it only takes effect before JAX's
    backend starts, so call this before any JAX operation.
    """
    import jax

    place = place or place_from_env()
    guard_parent()
    if jax.config.jax_platforms in (None, "", "cpu"):
        jax.config.update("jax_num_cpu_devices", place.local_devices)
    if place.coordinator == "auto":
        jax.distributed.initialize()
    elif place.coordinator:
        jax.distributed.initialize(
            coordinator_address=place.coordinator,
            num_processes=place.processes,
            process_id=place.process_id,
            initialization_timeout=timeout_s,
        )
    return dataclasses.replace(
        place,
        process_id=jax.process_index(),
        processes=jax.process_count(),
        local_devices=jax.local_device_count(),
    )


def write_result(place: Place, name: str, payload: dict[str, Any]) -> Path:
    """Write ``<out_dir>/<name>_<process_id>.json`` atomically."""
    return records.write_json(place.out_dir / f"{name}_{place.process_id}.json", payload)


def read_results(out_dir: str | os.PathLike, name: str, processes: int) -> list[dict[str, Any]]:
    """Every process's ``<name>_<i>.json``, in process order; a missing one is an error naming it."""
    import json

    out = []
    for i in range(processes):
        path = Path(out_dir) / f"{name}_{i}.json"
        if not path.exists():
            raise FileNotFoundError(f"process {i} wrote no {path.name} in {out_dir}")
        out.append(json.loads(path.read_text()))
    return out
