"""On paper: what the measured per-call host cost predicts for a pod of many hosts.

:data:`MODEL` states the model and its assumptions (the summary quotes it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MODEL = """\
Every input is measured here except the pod's own numbers, which are assumptions.

1. Multi-controller JAX: every host runs the same Python loop and dispatches only to
   its *local* devices, so a call's host CPU depends on the local device count `k` and
   the leaf count, not on the number of hosts. We fit `host_ms(k) = a + b*k` per
   (method, step) to the thread-CPU per call measured with N >= 2 processes
   (`k = global_devices / N`). One process is left out on purpose: there `jax.pmap`
   skips the per-call conversion between host-local and global arrays that every pod
   host pays. This box's cores are slower than a pod host's, so the numbers are an
   upper bound on a pod's host cost, and a method's rank is what carries over.
2. On a pod, collectives run on the device interconnect: device time, not host CPU
   (here gloo runs them on the same 2 cores, which is why they are split out above).
3. A synchronous step waits for the slowest host: the host bound per step is
   `host_ms(k) * straggler`, `straggler` = the slowest process's median over the
   median of all processes, at the largest N measured here.
4. Dispatch overlaps execution in a pipelined loop, so the host bound caps it/s at
   `1000 / (host_ms * straggler)` for any number of hosts, and costs nothing while
   the device step is longer than that.
"""

#: local devices per host on the pods the summary talks about (TPU v4/v5p: 4 chips per host)
POD_LOCAL_DEVICES = 4
#: the reporter's real transformer ran 20 batches/s on a TPU v3-8: a 50 ms step
DEVICE_STEP_MS = 50.0


def fit_host_cost(table: pd.DataFrame, global_devices: int) -> pd.DataFrame:
    """Per (model, step, method) measured with N >= 2 processes (see :data:`MODEL`):
    ``host_ms = a + b * local_devices`` (least squares; with one process count, ``b`` is 0)
    and the straggler factor at the largest N. Methods that never ran across processes
    have no row."""
    rows = []
    multi = table[table["processes"] > 1]
    for (model, step, method), group in multi.groupby(["model", "step", "method"], sort=False):
        k = global_devices / group["processes"].to_numpy(dtype=float)
        ms = group["cpu_ms_per_call"].to_numpy(dtype=float)
        if len(set(k)) > 1:
            slope, intercept = np.polyfit(k, ms, 1)
        else:
            slope, intercept = 0.0, float(ms.mean())
        widest = group.loc[group["processes"].idxmax()]
        straggler = float(widest["cpu_ms_per_call_slowest_process"] / widest["cpu_ms_per_call"])
        rows.append(
            {
                "model": model,
                "step": step,
                "method": method,
                "host_ms_fixed": float(intercept),
                "host_ms_per_local_device": float(slope),
                "straggler": max(straggler, 1.0),
                "points": len(group),
            }
        )
    return pd.DataFrame(rows)


def predict_pod(
    fits: pd.DataFrame,
    hosts: int,
    local_devices: int = POD_LOCAL_DEVICES,
    device_step_ms: float = DEVICE_STEP_MS,
) -> pd.DataFrame:
    """The host bound per step on a pod of ``hosts`` hosts with ``local_devices`` each."""
    out = fits[["model", "step", "method"]].copy()
    host_ms = np.maximum(fits["host_ms_fixed"] + fits["host_ms_per_local_device"] * local_devices, 0.0)
    out["hosts"] = hosts
    out["local_devices"] = local_devices
    out["global_devices"] = hosts * local_devices
    out["host_ms_per_call"] = host_ms
    out["host_bound_ms"] = host_ms * fits["straggler"]
    out["host_bound_it_per_s"] = 1000.0 / out["host_bound_ms"]
    out[f"share_of_a_{device_step_ms:g}_ms_step"] = out["host_bound_ms"] / device_step_ms
    return out
