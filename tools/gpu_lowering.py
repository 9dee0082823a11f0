"""``python tools/gpu_lowering.py [--json PATH]``: every kernel a GPU pass of notebook
02 plans (:meth:`jaxperf_study.jax20909.settings.LoopSettings.gpu_plan`), built as its part builds it (his form, the Mosaic GPU
port, the engine's factory), lowered for CUDA with the running JAX (a refusal is a row saying so) and
compiled where this machine can, without a GPU: Triton's for sm_90 (the ``triton`` package), the port's
for sm_90a in Mosaic GPU's own environment (its JAX). The device run's dry run runs it with the image's
JAX; tests/test_gpu_lowering.py with the lock's."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

from jaxperf.compilers.lowering import error_text, export_variant
from jaxperf.loops import targets as tg
from jaxperf_study.jax20909 import factories, sweep
from jaxperf_study.jax20909.settings import LoopSettings
from jaxperf_study.jax20909.vocab import parse_variant


def _build(settings: LoopSettings, kind: str, variant: str, T: int) -> tuple:
    """The kernel as its part builds it: the sweep's (his form, which his harness builds too; the port),
    or the engine's factory (family, loops: Triton on CUDA)."""
    if kind == "factory":
        return factories.seed(variant, T)
    cfg = {c.mode: c for c in sweep.plan("gpu", settings)[0]}["mosaic_gpu" if kind == "port" else "pallas"]
    return sweep.build(cfg, cfg.variant("seed", *parse_variant(variant), T))


def lower_plan(
    settings: LoopSettings | None = None, keep=lambda *point: True, compile_at=lambda *point: True
):
    """One row per distinct kernel of the plan's (part, variant, T) that ``keep`` keeps: its parts, the
    JAX that lowered it, ``lowered`` ("ok" or why not), ``compiled`` ("ok (...)", why not, or "" where
    ``compile_at`` leaves it out) and ``compile_ms`` (export and compile)."""
    import jax

    from jaxperf.compilers.mosaic_gpu import compile as mgpu
    from jaxperf.compilers.mosaic_gpu.toolchain import JAX_VERSION
    from jaxperf.compilers.triton import toolchain
    from jaxperf.compilers.triton.capture import capture
    from jaxperf.compilers.triton.compile import compile_ttir

    settings, points = settings or LoopSettings.on_device("gpu"), dict[tuple, list[str]]()
    for part, variant, T in (p for p in settings.gpu_plan() if keep(*p)):
        kind = {"port": "port", "harness": "his form", "sweep": "his form"}.get(part, "factory")
        points.setdefault((kind, variant, T), []).append(part)
    triton, rows, ported = toolchain.status(), list[dict](), list[int]()
    for (kind, variant, T), parts in points.items():
        compiler = "mosaic_gpu" if kind == "port" else "triton"
        row = dict(
            parts=",".join(dict.fromkeys(parts)), variant=variant, T=T, compiler=compiler, jax=jax.__version__
        )
        row |= dict(lowered="ok", compiled="", compile_ms=None)
        try:
            fn, args = _build(settings, kind, variant, T)
            got = (
                capture(fn, args, target="sm_90")
                if compiler == "triton"
                else export_variant(fn, args, compiler)
            )
            if compile_at(parts[0], variant, T) and compiler == "mosaic_gpu":
                ported.append(len(rows))
            elif compile_at(parts[0], variant, T) and not triton.available:
                row["compiled"] = f"{tg.NOT_PRESENT}: {triton.reason}"
            elif compile_at(parts[0], variant, T):
                row["compiled"] = "failed"  # until the compile returns
                done = compile_ttir(
                    got.ttir, target="sm_90", num_warps=got.num_warps, num_stages=got.num_stages
                )
                row |= dict(
                    compiled=f"ok (triton {triton.version}, sm_90)", compile_ms=got.export_ms + done.total_ms
                )
        except Exception as err:  # noqa: BLE001 - a refusal, or a failed compile, is the row's finding
            why = f"{tg.failure(compiler, err)['status']}: {type(err).__name__}: {error_text(err)}"
            row |= dict(compiled=why) if row["compiled"] else dict(lowered=why)
        rows.append(row)
    if ported:  # one worker for every port point, in Mosaic GPU's environment
        request = [
            dict(factory=factories.FACTORIES["seed"], form=rows[i]["variant"], T=rows[i]["T"]) for i in ported
        ]
        for i, got in zip(
            ported, mgpu.compile_points(request, Path(tempfile.mkdtemp(prefix="jaxperf-gpu-"))), strict=True
        ):
            ok = got["status"] == tg.OK
            rows[i]["compiled"] = (
                f"ok (jax {JAX_VERSION}, sm_90a)" if ok else f"{got['status']}: {str(got.get('error'))[:300]}"
            )
            rows[i]["compile_ms"] = sum(got["lower_ms"] + got["compile_ms"]) if ok else None
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--json", *argv[1:2]]) or len(argv) == 1:
        print("usage: python tools/gpu_lowering.py [--json PATH]", file=sys.stderr)
        return 2
    rows = lower_plan()
    with pd.option_context("display.max_colwidth", 120, "display.width", 250):
        print(rows.drop(columns="jax").to_string(index=False))
    counts = rows.compiled.str.split(" ").str[0].value_counts().to_dict()
    print(
        f"gpu_lowering: jax {rows.jax.iloc[0]}, {len(rows)} kernels, {int((rows.lowered != 'ok').sum())} refused; compiled: {counts}"
    )
    if argv:
        Path(argv[1]).write_text(rows.to_json(orient="records", indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
