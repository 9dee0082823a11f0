"""Compile readers' Mosaic GPU kernels for sm_90a on this CPU, from the project's venv:
:func:`compile_points` runs :mod:`.aot` in the compile environment (without it every point is "not
measured", with the reason); :func:`read_dump` loads a point's SASS."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import bad_value
from ...paths import PROJECT_ROOT
from . import sass, toolchain

# the loop study's words (jaxperf.loops.targets), and "not measured" where the environment is missing
STATUS_OK, STATUS_NO_LOWER, STATUS_FAILED = "ok", "does not lower", "failed"
STATUS_NOT_REACHED, STATUS_NOT_MEASURED = "not reached", "not measured"
NO_INSTRUCTIONS = (
    "Mosaic GPU compiled the kernel but its SASS dump held no instruction, so nothing was counted"
)


def _worker_env(extra_paths: Sequence[str] = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "MOSAIC_GPU_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(PROJECT_ROOT / "lib"), *extra_paths, env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    env["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"  # no cuDNN/cuBLAS here: nothing runs, the compile needs none
    return env


def compile_points(
    points: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    budget_s: float = 600.0,
    extra_paths: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Compile every point (``{"factory": ..., "form": ..., "T": ...}``; ``extra_paths``: folders
    to import the factory from) in the environment's worker: one row per point, in order, "ok" only
    with SASS to count. The worker starts no point after ``budget_s`` and is stopped 120 s later:
    points not reached are "not reached", or "failed" with its last line when it died."""
    if not budget_s > 0:
        raise bad_value("budget_s", budget_s, "a number of seconds > 0")
    status = toolchain.status()
    if not status.available:
        return [dict(p, status=STATUS_NOT_MEASURED, error=status.reason) for p in points]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    results.unlink(missing_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(dict(points=list(points), budget_s=budget_s), handle)
    command = [str(toolchain.python()), "-m", "jaxperf.compilers.mosaic_gpu.aot", handle.name, str(out_dir)]
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(
            command, env=_worker_env(extra_paths), stdout=log, stderr=subprocess.STDOUT, text=True
        )
        try:
            proc.wait(timeout=budget_s + 120)
            why = (STATUS_FAILED, f"the worker stopped (exit status {proc.returncode})")
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            why = (STATUS_NOT_REACHED, f"the worker ran past {budget_s + 120:.0f} s and was stopped")
        finally:
            Path(handle.name).unlink(missing_ok=True)
        log.seek(0)
        last = [line for line in log.read().splitlines() if line.strip()][-1:]
    rows = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    error = ": ".join([why[1], *last]) if why[0] == STATUS_FAILED else why[1]
    rows += [dict(p, status=why[0], error=error) for p in list(points)[len(rows) :]]
    return counted(rows, out_dir)


def counted(rows: list[dict[str, Any]], out_dir: Path) -> list[dict[str, Any]]:
    """``rows`` with every "ok" row whose SASS holds no instruction made "failed" (a count not read,
    never a count of zero)."""
    for row in rows:
        if row.get("status") == STATUS_OK and "/*" not in read_dump(out_dir, row).get("sass", ""):
            row.update(status=STATUS_FAILED, error=NO_INSTRUCTIONS)
    return rows


def read_dump(out_dir: Path, row: dict[str, Any]) -> dict[str, str]:
    """One compiled point's SASS (``sass``, in ``cuobjdump`` form), or {} without one."""
    where = Path(out_dir) / str(row.get("dump_dir", ""))
    if not row.get("dump_dir") or not (where / "sass.txt").is_file():
        return {}
    return {"sass": sass.to_cuobjdump((where / "sass.txt").read_text())}
