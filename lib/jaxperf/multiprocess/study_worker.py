"""The ``study`` task of a launched process: the bug repro, then every method
checked and timed, written to ``study_<process_id>.json``.

Every process runs the same sequence (same methods, steps, order, call
counts), so their collectives pair up; a method that fails, fails in every
process alike (the failures seen here happen after the collective ran).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import numpy as np

from .. import timing
from ..dispatch.models import ModelSpec, count_leaves
from . import bug, methods, runtime


def _digest(result: methods.Canonical) -> str:
    """A bitwise fingerprint of (loss, leaves): equal in two processes iff their results are identical."""
    loss, leaves = result
    h = hashlib.sha256(np.float64(loss).tobytes())
    for leaf in leaves:
        h.update(np.ascontiguousarray(leaf).tobytes())
    return h.hexdigest()[:16]


def _max_abs_diff(got: methods.Canonical, ref: methods.Canonical) -> float:
    if len(got[1]) != len(ref[1]) or any(np.shape(a) != np.shape(b) for a, b in zip(got[1], ref[1])):
        return float("inf")
    diffs = [abs(got[0] - ref[0])] + [
        float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(got[1], ref[1])
    ]
    return float(max(diffs))


def matches(got: methods.Canonical, ref: methods.Canonical, *, rtol: float, atol: float) -> bool:
    """The loss and every leaf ``allclose`` to the reference's (the same leaves, the same shapes)."""
    if len(got[1]) != len(ref[1]) or any(np.shape(a) != np.shape(b) for a, b in zip(got[1], ref[1])):
        return False
    return bool(np.allclose(got[0], ref[0], rtol=rtol, atol=atol)) and all(
        np.allclose(a, b, rtol=rtol, atol=atol) for a, b in zip(got[1], ref[1])
    )


def _error(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[-1][:300] if lines else ''}"


def check_and_time(spec: Any, step: str, config: dict[str, Any], place: runtime.Place) -> tuple[list, list]:
    """Build each method for ``step``, check its first call against the reference, time the ones that ran."""
    model, opt_state = spec.build()
    x = spec.batch(place.processes * place.local_devices)  # every device of the job
    leaves = count_leaves(model, x, opt_state)
    started = time.perf_counter()
    ref = methods.reference(step, spec) if step in methods.CHECKED_STEPS else None
    reference_seconds = time.perf_counter() - started
    checks, runners = [], {}
    for name in config["methods"]:
        if not methods.supports(name, step):
            continue
        row = {
            "model": spec.name,
            "step": step,
            "method": name,
            "leaves": leaves,
            "reference_seconds": reference_seconds,
        }
        started = time.perf_counter()
        try:
            runner = methods.build(name, step, model, opt_state, x)
            got = runner.canonical(timing.block(runner.call()))
        except Exception as err:  # noqa: BLE001 -- recorded: the bug is one of these
            checks.append({**row, "ran": False, "error": _error(err)})
            continue
        row["check_seconds"] = time.perf_counter() - started  # build, compile, first call
        diff = _max_abs_diff(got, ref) if ref is not None else float("nan")
        close = ref is None or matches(got, ref, rtol=config["rtol"], atol=config["atol"])
        checks.append(
            {
                **row,
                "ran": True,
                "error": "",
                "loss": got[0],
                "digest": _digest(got),
                "max_abs_diff_vs_one_device": diff,
                "matches_one_device": bool(close) if ref is not None else None,
            }
        )
        runners[name] = runner
    rows: list[dict[str, Any]] = []
    if runners:
        cfg = timing.TimingConfig(warmup=config["warmup"], repeats=config["repeats"], number=config["number"])
        df = timing.compare(
            {name: r.call for name, r in runners.items()},
            cfg,
            model=spec.name,
            step=step,
            leaves=leaves,
        )
        rows = df.rename(columns={"variant": "method"}).to_dict("records")
    return checks, rows


def run(config: dict[str, Any]) -> None:
    """Join the job, then record: the bug repro, every (model, step, method) check, the timings."""
    started = time.perf_counter()
    place = runtime.initialize()
    import equinox as eqx
    import jax

    repro = {name: bug.attempt(case) for name, case in bug.repro_cases().items()}
    checks, rows, phases = [], [], []
    for model in config["models"]:
        spec = ModelSpec(kind=model["kind"], size=model["size"])
        # A model may time fewer repeats than the rest (the transformer's all-reduce is slow here).
        model_config = {**config, "repeats": model.get("repeats", config["repeats"])}
        for step in config["steps"]:
            phase_start = time.perf_counter()
            c, r = check_and_time(spec, step, model_config, place)
            phases.append({"model": spec.name, "step": step, "seconds": time.perf_counter() - phase_start})
            checks += c
            rows += r
    for row in rows:
        row.update(processes=place.processes, process_id=place.process_id)
    runtime.write_result(
        place,
        "study",
        {
            "process_id": jax.process_index(),
            "processes": jax.process_count(),
            "local_devices": jax.local_device_count(),
            "global_devices": jax.device_count(),
            "versions": {"jax": jax.__version__, "jaxlib": jax.lib.__version__, "equinox": eqx.__version__},
            "repro": repro,
            "checks": checks,
            "timings": rows,
            "phases": phases,
            "seconds": time.perf_counter() - started,
        },
    )
    jax.distributed.shutdown()
