"""Run one part of the device run, or the report: ``python -m jaxperf_study.gpu.run PART``.

Needs no notebook machinery (the GPU machine has no papermill or ipykernel): each part
calls the studies' library functions through :func:`jaxperf_study.study.start`, so every record
carries provenance. ``tools/device/run_gpu.sh`` runs each part in its own process and time limit.

    python -m jaxperf_study.gpu.run --budgets             # "part seconds" lines, for the shell
    python -m jaxperf_study.gpu.run harness --output-root DIR [--dry]
    python -m jaxperf_study.gpu.run report --output-root DIR [--dry]

``--dry`` is the CPU dry run (the settings' QUICK preset: Pallas interpret
mode, tiny sizes); without it the part insists on a GPU and fails otherwise.
Exit status: 0 when the part ran (points it skipped or that failed are in its
records), 1 when the part itself failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import importlib.abc
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .settings import PARTS, GpuSettings


def _part_function(part: str) -> Callable[..., dict[str, Any]]:
    from . import loop_parts, other_parts

    return {
        "loops_seed": lambda study, s, b: loop_parts.loop_sweep(study, s, "seed", b),
        "loops_mosaic_gpu": loop_parts.mosaic_gpu_sweep,
        "loops_attention": lambda study, s, b: loop_parts.loop_sweep(study, s, "attention", b),
        "harness": loop_parts.harness,
        "dispatch": other_parts.dispatch,
    }[part]


# Not on the GPU machine's image (tools/device/image_packages.txt): the dry run hides them,
# so that it proves the device run does not need them.
ABSENT_ON_DEVICE = tuple(
    "IPython ipywidgets ipykernel papermill nbformat nbclient jupyter_client jupyterlab".split()
)


class HideAbsent(importlib.abc.MetaPathFinder):
    """A meta path finder that makes :data:`ABSENT_ON_DEVICE` unimportable."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.split(".")[0] in ABSENT_ON_DEVICE:
            raise ModuleNotFoundError(
                f"No module named {name!r} (absent on the GPU machine; hidden in the dry run)"
            )
        return None


BUDGET_ENV = "JAXPERF_PART_BUDGET_S"  # the shell's limit for this part, when under the settings' budget


def budget_s(part: str, settings: GpuSettings) -> int:
    """The part's budget: the settings', or less when ``$JAXPERF_PART_BUDGET_S`` says so."""
    given = os.environ.get(BUDGET_ENV, "")
    if given and not given.isdigit():
        raise ValueError(f"{BUDGET_ENV}={given!r} is not allowed: expected whole seconds")
    return min(settings.budgets[part], int(given)) if given else settings.budgets[part]


def start_cuda() -> None:
    """Start JAX on CUDA (and the CPU beside it) before the study frame configures it.

    ``jaxperf.backend.configure("gpu")`` asks JAX for the platforms "cuda,rocm", and JAX
    fails loudly when a platform listed explicitly is absent (no ROCm plugin on an NVIDIA
    machine); once JAX has started on CUDA, configure only checks that it is a GPU.
    Raises RuntimeError where no CUDA device is present.
    """
    import jax

    jax.config.update("jax_platforms", "cuda,cpu")  # the first listed is the default
    jax.devices()
    if jax.default_backend() != "gpu":
        raise RuntimeError(f"JAX found no CUDA device and started on {jax.default_backend()!r}")


def run_part(part: str, settings: GpuSettings, *, dry: bool) -> int:
    """Run ``part`` through the study frame; write ``results/<backend>/run/<part>.json``."""
    import jaxperf_study.study

    from .. import records
    from . import env

    os.environ.setdefault(jaxperf_study.study.PROGRESS_ENV, "text")
    started = time.perf_counter()
    seconds = budget_s(part, settings)
    if not dry:
        try:
            start_cuda()
        except RuntimeError as err:
            print(
                f"[{part}] not measured: no CUDA GPU here ({err}); use --dry for the CPU dry run", flush=True
            )
            return 1
    study = jaxperf_study.study.start("dispatch" if part == "dispatch" else "loops", settings)
    study.provenance["versions_vs_pins"] = env.versions_report()
    study.provenance["device_run"] = {
        "part": part,
        "dry_run": dry,
        "tree_commit": os.environ.get("JAXPERF_GIT_COMMIT", "unknown"),
        "budget_s": seconds,
    }
    run_dir = study.results_dir.parent / "run"
    out: dict[str, Any] = {"part": part, "budget_s": seconds, "dry_run": dry}
    try:
        summary = _part_function(part)(study, settings, env.Budget(seconds))
        out.update(status="ok", summary=summary)
        code = 0
    except Exception as err:  # noqa: BLE001 -- the part failed as a whole: say why, the next part runs
        traceback.print_exc()
        out.update(status=env.failure(err), traceback=traceback.format_exc()[-4000:])
        code = 1
    out.update(elapsed_s=round(time.perf_counter() - started, 1), provenance=study.provenance)
    records.write_json(run_dir / f"{part}.json", out)
    print(f"[{part}] {out['status']} in {out['elapsed_s']} s -> {study.results_dir}", flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxperf_study.gpu.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("part", nargs="?", choices=[*PARTS, "report"])
    parser.add_argument("--dry", action="store_true", help="the CPU dry run (tiny sizes, interpret mode)")
    parser.add_argument("--output-root", default="", help="folder that receives results/ and figures/")
    parser.add_argument("--budgets", action="store_true", help="print each part's budget in seconds")
    args = parser.parse_args(argv)
    if args.dry:
        sys.meta_path.insert(0, HideAbsent())
    settings = GpuSettings.from_parameters({"quick": args.dry, "output_root": args.output_root})
    if args.budgets:
        print("\n".join(f"{part} {settings.budgets[part]}" for part in PARTS))
        return 0
    if args.part is None:
        parser.error("name a part, 'report', or --budgets")
    if args.part == "report":
        from jaxperf import paths

        from . import report

        root = paths.output_root(args.output_root or None)
        print(f"[report] {report.write(Path(root), settings.backend, dry=args.dry)}")
        return 0
    return run_part(args.part, settings, dry=args.dry)


if __name__ == "__main__":
    sys.exit(main())
