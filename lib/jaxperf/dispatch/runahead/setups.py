"""The seed's loop on a CPU, in one child process per XLA:CPU set-up.

On a CPU the "device" is the host's own cores: the step can only run beside the loader
if XLA leaves a core free for it. XLA reads its flags once, when the CPU backend starts,
so each set-up runs in a fresh interpreter (``python -m jaxperf.dispatch.runahead.child SETUP CONFIG``)
with one CPU host device and its own ``XLA_FLAGS``:

- ``xla_default``: XLA:CPU as it comes (its Eigen thread pool spreads one step over all cores);
- ``xla_single_thread``: ``--xla_cpu_multi_thread_eigen=false``, so a step runs on one
  core and the loader, in the main thread, can have the other. (The
  ``intra_op_parallelism_threads=1`` often quoted beside it is not an XLA flag: XLA
  ignores a bare word after a flag, and takes one in first place for a flag file.)

Nothing fakes a device: the step is XLA's, on the same machine as the loader.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

import pandas as pd

from ...paths import PROJECT_ROOT
from .config import SETUPS, check_setups
from .seed_loop import LoopConfig, LoopResult

PROTOCOL = "jaxperf.dispatch.runahead.seed_loop/1"


def xla_flags(setup: str) -> str:
    return " ".join(("--xla_force_host_platform_device_count=1", *SETUPS[setup]))


def run_setup(setup: str, config: LoopConfig, *, timeout_s: int = 1200) -> tuple[LoopResult, dict[str, Any]]:
    """The loop in a child interpreter with ``setup``'s flags; its result and what the child
    said about itself. Raises RuntimeError with the child's stderr when it fails."""
    check_setups([setup])
    env = {**os.environ, "XLA_FLAGS": xla_flags(setup), "JAX_PLATFORMS": "cpu"}
    payload = json.dumps(dataclasses.asdict(config))
    cmd = [sys.executable, "-m", "jaxperf.dispatch.runahead.child", setup, payload]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=PROJECT_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(
            f"the seed loop's child for {setup!r} exited {proc.returncode}:\n{proc.stderr[-4000:]}"
        )
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    if doc.get("protocol") != PROTOCOL:
        raise RuntimeError(f"the seed loop's child answered an unknown protocol {doc.get('protocol')!r}")
    result = LoopResult(
        pd.DataFrame(doc.pop("timings")), pd.DataFrame(doc.pop("checks")), doc["base_step_ms"], doc["pass_ms"]
    )
    return result, doc


def run_setups(
    config: LoopConfig, setups: tuple[str, ...], *, progress: Any = None, timeout_s: int = 1200
) -> tuple[LoopResult, pd.DataFrame]:
    """:func:`run_setup` for each of ``setups``, one after the other; the timings and checks
    with a ``setup`` column, and one row per set-up (flags, devices, the train step's D)."""
    frames, checks, about = [], [], []
    for setup in check_setups(setups):
        result, doc = run_setup(setup, config, timeout_s=timeout_s)
        frames.append(result.timings.assign(setup=setup))
        checks.append(result.checks.assign(setup=setup))
        about.append(
            {
                "setup": setup,
                "xla_flags": doc["xla_flags"],
                "devices": doc["device_count"],
                "cpu_count": doc["cpu_count"],
                "base_step_ms": doc["base_step_ms"],
                "pass_us": 1e3 * doc["pass_ms"],
                "child_wall_s": round(doc["wall_s"], 1),
            }
        )
        if progress is not None:
            progress.update(1)
    merged = LoopResult(
        pd.concat(frames, ignore_index=True),
        pd.concat(checks, ignore_index=True),
        float("nan"),
        float("nan"),
    )
    return merged, pd.DataFrame(about)


IN_PROCESS = "in process"


def run_loop(
    config: LoopConfig, backend: str, setups: tuple[str, ...], *, progress: Any = None
) -> tuple[LoopResult, pd.DataFrame]:
    """The seed's loop where it belongs: on a CPU once per set-up, each in its own child
    (:func:`run_setups`); on an accelerator in this process, on its first device, as set-up
    ``"in process"``."""
    if backend == "cpu":
        return run_setups(config, setups, progress=progress)
    import jax

    from . import seed_loop

    result = seed_loop.run(config)
    about = pd.DataFrame(
        [
            {
                "setup": IN_PROCESS,
                "xla_flags": os.environ.get("XLA_FLAGS", ""),
                "devices": 1,
                "device": jax.devices()[0].device_kind,
                "base_step_ms": result.base_step_ms,
                "pass_us": 1e3 * result.pass_ms,
            }
        ]
    )
    timings, checks = result.timings.assign(setup=IN_PROCESS), result.checks.assign(setup=IN_PROCESS)
    return LoopResult(timings, checks, result.base_step_ms, result.pass_ms), about


def summaries(timings: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """:func:`jaxperf.dispatch.runahead.loop_analysis.table` per set-up."""
    from . import loop_analysis

    return {
        setup: loop_analysis.table(loop_analysis.cells(part))
        for setup, part in timings.groupby("setup", sort=False)
    }
