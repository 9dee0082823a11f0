"""The device run's points, predicted before it runs: the time model's H200 predictions.

:func:`plan` lists, from the run's own settings (:class:`~jaxperf.gpu.settings.GpuSettings`),
every (part, variant, T) the model predicts: the reporter's harness (part ``harness``) and
the loop sweep on his kernel (part ``loops_seed``); the other parts are named in
:data:`jaxperf.gpu_model.h200.NOT_PREDICTED`. :func:`register` predicts them all
(:func:`jaxperf.gpu_model.h200.predict`) and registers the result
(:func:`jaxperf.gpu_model.registry.register`), from a clean tree, before any GPU run:

    python -m jaxperf.gpu.predictions register   # writes results/predictions/h200_<date>.{json,csv}
    python -m jaxperf.gpu.predictions check      # committed, unchanged, older than results/gpu
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..gpu_model import h200, registry
from ..paths import PROJECT_ROOT
from .settings import GpuSettings


def plan(s: GpuSettings | None = None) -> list[dict[str, Any]]:
    """Every (part, variant, T) of the device run that the model predicts, in the run's order."""
    from ..jax20909 import vocab
    from .loop_parts import sweep_config

    s = GpuSettings() if s is None else s
    out = [dict(part="harness", variant=v, T=T) for T in s.harness_Ts for v in s.harness_variants]
    cfg = sweep_config(s, "seed")
    for T in s.seed_Ts:
        out += [
            dict(part="loops_seed", variant=vocab.variant_name(f, u), T=T) for f, u in cfg.variants("seed", T)
        ]
    return out


def register(s: GpuSettings | None = None, *, root: Path = PROJECT_ROOT, **options: Any) -> tuple[Path, Path]:
    """Predict every planned point and register the result (see :func:`registry.register`)."""
    s = GpuSettings() if s is None else s
    rows = h200.predict(plan(s))
    sizes = {"batch": s.batch, "D": s.D, "dtype": s.dtype, "N": s.harness_N}
    return registry.register(rows, h200.meta(sizes), device_key="h200", root=root, **options)


def main(argv: list[str] | None = None) -> int:
    """Register the H200 predictions, or check the registered ones (exit 1 on a problem)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m jaxperf.gpu.predictions", description=main.__doc__)
    parser.add_argument("command", choices=["register", "check"])
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = registry.check_registered()
        print(
            "\n".join(problems) or "registered predictions: committed, unchanged, older than the GPU results"
        )
        return 1 if problems else 0
    for path in register():
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
