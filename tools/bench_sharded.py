"""What Equinox advises instead of eqx.filter_pmap, timed beside it: notebook 01's pmap cells
(:func:`jaxperf_study.dispatch.cost.run_cell`, every path proved equal to the reader's step first)
with :mod:`jaxperf_study.dispatch.sharded`'s paths added, each cell in ``--processes`` fresh
processes. Printed per cell and path: pipelined it/s over jax.pmap on params' in the same rounds,
the median over processes [lo, hi] and the verdict (:func:`jaxperf_study.dispatch.per_leaf.ranges`).

    PYTHONPATH=lib python tools/bench_sharded.py [--backend cpu|tpu] [--devices 8] [--processes 3] [--seconds 6]
        [--save FILE.pkl]

``--devices`` forces CPU devices (a TPU keeps its own: one chip on a v5e). The parent never opens
a device: on a TPU one process at a time can hold the chip.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CELLS = (("noop", 1), ("noop", 64), ("train", 16))  # (step, MLP depth)


def child(out: str, platform: str, devices: int, seconds: float) -> None:
    from jaxperf import backend

    backend.configure(platform, devices)
    import jax
    import pandas as pd

    from jaxperf_study.dispatch import cost, sharded
    from jaxperf_study.dispatch.models import ModelSpec

    cost.PATCHED = {
        **cost.PATCHED,
        **sharded.PATHS,
    }  # the study's paths, as the lead's run_cell will add them
    print(f"jax {jax.__version__}: {jax.device_count()} x {jax.devices()[0].device_kind}", file=sys.stderr)
    frames = []
    for step, depth in CELLS:
        cell = cost.Cell(step, ModelSpec("mlp", depth), False, "pmap")
        timings, notes = cost.run_cell(cell, precision=0.05, max_seconds=seconds, min_rounds=6)
        for path, why in notes.items():
            print(f"  {step} mlp_depth{depth}: {path}: {why}", file=sys.stderr)
        frames.append(timings)
    pd.concat(frames).to_pickle(out)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--backend", default="cpu", choices=("cpu", "tpu", "gpu"))
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--save", help="a pickle of every round's timings (pandas)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return child(a.child, a.backend, a.devices, a.seconds)
    outs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(a.processes):
            out = str(Path(tmp) / f"{k}.pkl")
            argv = ["--backend", a.backend, "--devices", str(a.devices), "--seconds", str(a.seconds)]
            subprocess.run([sys.executable, __file__, *argv, "--child", out], check=True)
            outs.append(out)
        import pandas as pd

        from jaxperf_study.dispatch import per_leaf

        timings = pd.concat(
            [pd.read_pickle(o).assign(process=k) for k, o in enumerate(outs)], ignore_index=True
        )
    if a.save:
        timings.to_pickle(a.save)
    print(f"{a.processes} processes; medians over processes [lo, hi]; it/s pipelined (the seed's loop)")
    for (step, leaves), cell in timings.groupby(["step", "leaves"], sort=False):
        print(
            f"{step} step, {leaves} array leaves: it/s, ms to enqueue a call, it/s over jax.pmap on params'"
        )
        for method, rows in cell.groupby("method", sort=False):
            each = per_leaf.per_process(rows)
            its = per_leaf.spread([p["loop_it_per_s"].median() for p in each])
            enqueue = per_leaf.spread([1e3 * p["dispatch_s_per_call"].median() for p in each])
            line = f"  {method:20s} {its['median']:8.1f} [{its['lo']:.1f}, {its['hi']:.1f}]"
            line += f"  {enqueue['median']:7.3f} ms [{enqueue['lo']:.3f}, {enqueue['hi']:.3f}]"
            if method != "pmap_params":
                r = per_leaf.ranges(cell, method, "pmap_params", "loop_it_per_s", 0.05)["cells"].iloc[0]
                line += f"  {r['median']:6.3f}x [{r['lo']:.3f}, {r['hi']:.3f}] {r['verdict']}"
            print(line)


if __name__ == "__main__":
    main()
