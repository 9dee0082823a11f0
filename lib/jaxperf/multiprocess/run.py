"""The parent's side of the study: one launch per process count, every process's
result files gathered into tidy frames.

Each launch keeps its folder, ``<results>/launches/processes_<N>/``: the
worker config, one log per process and each process's ``study_<i>.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..records import write_json
from . import launch, runtime
from .settings import MultiprocessSettings

WORKER = "jaxperf.multiprocess.worker"


@dataclass
class StudyRun:
    """Everything the processes wrote, one row per process (and per case/check/timing)."""

    checks: pd.DataFrame  # processes, process_id, model, step, method, ran, error, loss, digest, ...
    timings: pd.DataFrame  # timing.compare rows + processes, process_id
    repro: pd.DataFrame  # processes, process_id, case, ok, error_type, error, traceback
    launches: pd.DataFrame  # processes, local_devices, seconds, folder
    phases: pd.DataFrame  # processes, process_id, model, step, seconds (check + time one step)
    versions: dict[str, str] = field(default_factory=dict)


def launch_study(settings: MultiprocessSettings, processes: int, folder: Path) -> list[dict[str, Any]]:
    """One launch of ``processes`` processes; returns each process's ``study_<i>.json`` payload.
    Raises ``launch.LaunchError`` (with the failing process's log) when one dies."""
    folder.mkdir(parents=True, exist_ok=True)
    config = write_json(folder / "config.json", settings.worker_config())
    launch.run(
        launch.python_module(WORKER, "study", str(config)),
        processes=processes,
        local_devices=settings.global_devices // processes,
        out_dir=folder,
        timeout_s=settings.launch_timeout_s,
    )
    return runtime.read_results(folder, "study", processes)


def run_study(settings: MultiprocessSettings, results_dir: Path, progress: Any = None) -> StudyRun:
    """Launch every count in ``settings.process_counts``, in ascending order, and gather."""
    checks, timings, repro, launches, phases = [], [], [], [], []
    versions: dict[str, str] = {}
    for n in settings.process_counts:
        folder = Path(results_dir) / "launches" / f"processes_{n}"
        payloads = launch_study(settings, n, folder)
        for p in payloads:
            tag = {"processes": n, "process_id": p["process_id"]}
            checks += [{**tag, **c} for c in p["checks"]]
            timings += p["timings"]
            repro += [{**tag, "case": case, **r} for case, r in p["repro"].items()]
            phases += [{**tag, **phase} for phase in p["phases"]]
            versions = p["versions"]
        launches.append(
            {
                "processes": n,
                "local_devices": payloads[0]["local_devices"],
                "global_devices": payloads[0]["global_devices"],
                "worker_seconds_max": max(p["seconds"] for p in payloads),
                "folder": str(folder.relative_to(Path(results_dir))),
            }
        )
        if progress is not None:
            progress.update(1)
    repro_df = pd.DataFrame(repro)
    for column in ("error_type", "error", "traceback"):
        if column not in repro_df:
            repro_df[column] = ""
    return StudyRun(
        checks=pd.DataFrame(checks),
        timings=pd.DataFrame(timings),
        repro=repro_df.fillna(""),
        launches=pd.DataFrame(launches),
        phases=pd.DataFrame(phases),
        versions=versions,
    )
