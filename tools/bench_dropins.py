"""Every path notebook 01 times for one cell, against the hand-written reference, per pair,
interleaved in one process: the profile-and-tune loop for the drop-ins and the patch.

    PYTHONPATH=lib python tools/bench_dropins.py [--devices 1] [--family jit|pmap] [--kind mlp]
        [--size 64] [--step noop|train] [--donated] [--rounds 30] [--round-ms 30] [--nogc]

The paths are :func:`jaxperf.diagnosis.engine.build`'s for the study's own cell
(:class:`jaxperf_study.dispatch.cost.Cell`), with the patched Equinox: the same objects the
notebook times. Rounds in Williams order (:func:`jaxperf.timing.williams`); per round and path
``number`` blocked calls (wall, thread CPU), then ``number`` calls pipelined (enqueue wall, the
thread's CPU while enqueuing, the loop's wall). Printed per path: the reference's time over
the path's in the same round (above 1: the path is faster), median [quartiles], pipelined and
blocked, and the path's medians in µs per call. Runs on any JAX the fixes accept (the TPU's
0.10.2 in ``.envs/image-tpu``); ``--devices`` forces CPU devices (a TPU keeps its own).
``--nogc`` collects before each batch and holds the collector off during it, to tell the
Python collector's pauses from a path's own cost.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--family", default="jit", choices=("jit", "pmap"))
    p.add_argument("--kind", default="mlp", choices=("mlp", "transformer", "cnn"))
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--microbatches", type=int, default=1)
    p.add_argument("--step", default="noop", choices=("noop", "train"))
    p.add_argument("--donated", action="store_true")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--round-ms", type=float, default=30.0)
    p.add_argument("--nogc", action="store_true")
    a = p.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxperf import backend

    backend.configure(os.environ["JAX_PLATFORMS"].split(",")[0], a.devices)
    import jax

    from jaxperf import timing
    from jaxperf.diagnosis import engine
    from jaxperf.diagnosis.kinds import identify
    from jaxperf_study.dispatch.cost import Cell
    from jaxperf_study.dispatch.eqx_patch.path import PATHS
    from jaxperf_study.dispatch.models import ModelSpec

    cell = Cell(a.step, ModelSpec(a.kind, a.size, microbatches=a.microbatches), a.donated, a.family)
    wrapped, args = cell.make()
    batches = engine.Batches(None)
    _, mine, paths, skipped, _, leaves, _ = engine.build(
        identify(wrapped), args, "auto", batches, None, PATHS
    )
    everyone = {mine.name: mine, **paths}
    ref = next(n for n in everyone if "partitioned" in n)
    for path in everyone.values():  # compile, then warm
        for _ in range(3):
            engine.sync(path.call())
    start = time.perf_counter()
    for _ in range(5):
        engine.sync(everyone[ref].call())
    number = int(max(3, min(500, round(a.round_ms / 1e3 / ((time.perf_counter() - start) / 5)))))
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in everyone}
    for r in range(a.rounds):
        for name in timing.williams(list(everyone), r):
            path = everyone[name]
            if a.nogc:
                gc.collect()
                gc.disable()
            w0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(number):
                engine.sync(path.call())
            wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
            outs, w0, c0 = [], time.perf_counter(), time.thread_time()
            for _ in range(number):
                outs.append(path.call())
            enqueue, enqueue_cpu = time.perf_counter() - w0, time.thread_time() - c0
            engine.sync(outs)
            loop = time.perf_counter() - w0
            gc.enable()
            rows[name].append(
                {
                    k: v / number
                    for k, v in dict(wall=wall, cpu=cpu, enq=enqueue, enq_cpu=enqueue_cpu, loop=loop).items()
                }
            )
    print(
        f"jax {jax.__version__}, {jax.device_count()} {jax.devices()[0].platform} devices; {cell.spec.name} "
        f"{a.step}{' donated' if a.donated else ''}, {leaves} leaves, {a.family}; {a.rounds} rounds x {number} calls; "
        f"reference {ref}; not offered: {skipped or 'none'}"
    )
    for name, mine_rows in rows.items():
        out = []
        for key, label in (("loop", "pipelined"), ("wall", "blocked")):
            ratio = [b[key] / m[key] for b, m in zip(rows[ref], mine_rows)]
            q25, med, q75 = np.percentile(ratio, [25, 50, 75])
            out.append(f"{label} {med:6.3f}x [{q25:.3f}, {q75:.3f}]")
        us = {k: 1e6 * float(np.median([m[k] for m in mine_rows])) for k in ("loop", "enq", "enq_cpu", "cpu")}
        print(
            f"  {name:45s} {'  '.join(out)}  loop {us['loop']:8.1f} us  enqueue {us['enq']:8.1f} us "
            f"(CPU {us['enq_cpu']:8.1f})  blocked CPU {us['cpu']:8.1f} us",
            flush=True,
        )


if __name__ == "__main__":
    main()
