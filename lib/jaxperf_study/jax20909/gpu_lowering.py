"""Every kernel a GPU pass of notebook 02 plans, lowered for CUDA and compiled where this machine can,
without a GPU: ``python -m jaxperf_study.jax20909.gpu_lowering [--json PATH]`` (the device run's dry
run, with the image's JAX; tests/test_gpu_lowering.py, with the lock's).

Each (part, variant, T) of :meth:`.settings.LoopSettings.gpu_plan` with the GPU preset is built as that
part builds it (his form for ``harness`` and ``sweep``, the Mosaic GPU port for ``port``, the engine's
factory for ``family`` and ``loops``), exported for CUDA with the running JAX (a variant the lowering
refuses is a row saying so), then compiled: Triton's for sm_90 with the ``triton`` package
(:mod:`jaxperf.compilers.triton`), the port's for sm_90a in Mosaic GPU's own environment
(:mod:`jaxperf.compilers.mosaic_gpu`, its JAX); a compiler missing here is "not present here"."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from jaxperf.compilers.lowering import error_text, export_variant
from jaxperf.loops import targets as tg

from . import factories, kernels, mosaic_gpu_kernel
from .settings import LoopSettings
from .variant import KernelVariant
from .vocab import parse_variant

SEED = factories.FACTORIES["seed"]


def _build(settings: LoopSettings, part: str, variant: str, T: int) -> tuple[Any, tuple[Any, ...]]:
    if part in ("family", "loops"):
        return factories.seed(variant, T)  # the engine's: Triton on CUDA
    form, unroll = parse_variant(variant)
    v = KernelVariant("seed", form, unroll, T=T, D=settings.D, batch=settings.batch_at(T), dtype="float16")
    if part == "port":  # the port's own float32 carry, as the sweep builds it
        return mosaic_gpu_kernel.build(v, check_unroll=False)
    return kernels.build(v.replace(carry_dtype=settings.carry_dtype), interpret=False)


def lower_plan(
    settings: LoopSettings | None = None,
    keep: Callable[[str, str, int], bool] = lambda part, variant, T: True,
    compile_at: Callable[[str, str, int], bool] = lambda part, variant, T: True,
) -> pd.DataFrame:
    """One row per distinct kernel of the plan that ``keep`` keeps: its parts, ``lowered`` ("ok" or why
    not), ``compiled`` ("ok", why not, or "" where ``compile_at`` leaves it out) and ``compile_ms``."""
    import jax

    from jaxperf.compilers.mosaic_gpu import compile as mgpu
    from jaxperf.compilers.mosaic_gpu import toolchain as mgpu_env
    from jaxperf.compilers.triton import toolchain
    from jaxperf.compilers.triton.capture import capture
    from jaxperf.compilers.triton.compile import compile_ttir

    settings = settings or LoopSettings.on_device("gpu")
    points: dict[tuple[str, str, int], list[str]] = {}
    for part, variant, T in settings.gpu_plan():
        if keep(part, variant, T):
            kind = "port" if part == "port" else "his form" if part in ("harness", "sweep") else "factory"
            points.setdefault((kind, variant, T), []).append(part)
    triton = toolchain.status()
    rows, ported = [], []
    for (kind, variant, T), parts in points.items():
        compiler = "mosaic_gpu" if kind == "port" else "triton"
        row = dict(parts=",".join(dict.fromkeys(parts)), variant=variant, T=T, compiler=compiler)
        row |= dict(jax=jax.__version__, lowered="ok", compiled="", compile_ms=None)
        try:
            fn, args = _build(settings, parts[0], variant, T)
            got = (
                capture(fn, args, target="sm_90")
                if compiler == "triton"
                else export_variant(fn, args, compiler)
            )
        except Exception as err:  # noqa: BLE001 - a refusal is the row's finding
            rows.append(
                row
                | dict(
                    lowered=f"{tg.failure(compiler, err)['status']}: {type(err).__name__}: {error_text(err)}"
                )
            )
            continue
        if not compile_at(parts[0], variant, T):
            pass
        elif compiler == "mosaic_gpu":
            ported.append((len(rows), variant, T))
        elif not triton.available:
            row |= dict(compiled=f"{tg.NOT_PRESENT}: {triton.reason}")
        else:
            try:
                done = compile_ttir(
                    got.ttir, target="sm_90", num_warps=got.num_warps, num_stages=got.num_stages
                )
                row |= dict(
                    compiled=f"ok (triton {triton.version}, sm_90)", compile_ms=got.export_ms + done.total_ms
                )
            except Exception as err:  # noqa: BLE001 - a compile that fails is a result
                row |= dict(compiled=f"{tg.failure(compiler, err)['status']}: {error_text(err)}")
        rows.append(row)
    if ported:  # one worker for every port point, in Mosaic GPU's environment with its own JAX
        request = [dict(factory=SEED, form=v, T=T) for _, v, T in ported]
        done = mgpu.compile_points(request, Path(tempfile.mkdtemp(prefix="jaxperf-gpu-lowering-")))
        for (i, _, _), got in zip(ported, done, strict=True):
            where = f"jax {mgpu_env.JAX_VERSION}, sm_90a"
            ok = got["status"] == tg.OK
            text = f"ok ({where})" if ok else f"{got['status']}: {str(got.get('error', ''))[:300]}"
            ms = sum(got["compile_ms"]) / len(got["compile_ms"]) if ok and got.get("compile_ms") else None
            rows[i] |= dict(compiled=text, compile_ms=ms)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxperf_study.jax20909.gpu_lowering", description=__doc__)
    p.add_argument("--json", default="", help="a file for the rows as JSON")
    args = p.parse_args(argv)
    rows = lower_plan()
    with pd.option_context("display.max_colwidth", 110, "display.width", 250):
        print(rows.drop(columns="jax").to_string(index=False))
    refused = rows.lowered != "ok"
    print(
        f"gpu_lowering: jax {rows.jax.iloc[0]}: {len(rows)} kernels, {int(refused.sum())} refused by the lowering"
    )
    print(
        "gpu_lowering: compiled: " + json.dumps(rows.compiled.str.split(":").str[0].value_counts().to_dict())
    )
    if args.json:
        Path(args.json).write_text(rows.to_json(orient="records", indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
