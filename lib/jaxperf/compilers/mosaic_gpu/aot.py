"""The Mosaic GPU compile worker: ``python -m jaxperf.compilers.mosaic_gpu.aot REQUEST OUT_DIR``.

Runs in the compile environment (:mod:`.toolchain`), importing only JAX and the factories its
points (``{"factory": ..., "form": ..., "T": ...}``, checked by the caller) name. Each kernel is
lowered for a deviceless H100 and compiled once with the SASS dump on (``OUT_DIR/<point>/sass.txt``);
one JSON line per point goes to ``OUT_DIR/results.jsonl`` as soon as it is done, so a killed run
keeps what it had (:func:`_warm_up` pays the one-off set-up; a kernel Mosaic GPU's cache serves
without a dump gets the SASS seen earlier). Nothing runs on a GPU."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..mosaic_tpu.topology import placed
from .compile import STATUS_FAILED, STATUS_NO_LOWER, STATUS_NOT_REACHED, STATUS_OK
from .toolchain import TARGET_CONFIG

_KERNEL_HASH = re.compile(r'kernel_hash = "((?:[^"\\]|\\.)*)"')


def _topology_mesh() -> Any:
    from jax.experimental import topologies
    from jax.sharding import Mesh

    topology = topologies.get_topology_desc(platform="cuda", target_config=TARGET_CONFIG, topology="1x1x1")
    return Mesh(topology.devices, ("x",))


def _warm_up(mesh: Any) -> None:
    """Compile a kernel no point builds, so that the first point's time holds no one-off set-up."""
    import jax
    from jax.experimental.pallas import mosaic_gpu as plgpu

    def program(x_gmem: Any, y_gmem: Any, x_smem: Any, loaded: Any) -> None:
        plgpu.copy_gmem_to_smem(x_gmem, x_smem, loaded)
        plgpu.barrier_wait(loaded)
        x_smem[...] = x_smem[...] + 1.0
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(x_smem, y_gmem)
        plgpu.wait_smem_to_gmem(0)

    spec = jax.ShapeDtypeStruct((128, 64), jax.numpy.float32)
    scratch: list[Any] = [plgpu.SMEM(spec.shape, spec.dtype), plgpu.Barrier()]
    call = plgpu.kernel(program, out_type=spec, scratch_types=scratch, kernel_name="jaxperf_warm_up")
    jax.jit(call).trace(*placed((spec,), mesh)).lower().compile()


def compile_point(point: dict[str, Any], mesh: Any, seen: dict[str, str]) -> tuple[float, float, str]:
    """Build, lower and compile one point with the SASS dump on: (lower ms, compile ms, SASS; "" when
    none was written). ``seen`` maps the kernel hashes compiled so far (served from Mosaic GPU's
    cache without a dump) to their SASS."""
    import jax

    jax.clear_caches()
    fn, specs = _build(point)
    leftovers = set(Path(tempfile.gettempdir()).glob("mosaic-gpu-*"))
    with tempfile.TemporaryDirectory(prefix="jaxperf-mgpu-dump-") as tmp:
        os.environ["MOSAIC_GPU_DUMP_TO"] = tmp
        try:
            started = time.perf_counter()
            lowered = fn.trace(*placed(specs, mesh)).lower()
            lowered_at = time.perf_counter()
            lowered.compile()
            done = time.perf_counter()
        finally:
            del os.environ["MOSAIC_GPU_DUMP_TO"]
        found = sorted(Path(tmp).glob("*.sass_ctrl"))
        sass = found[-1].read_text() if found else ""
    # Mosaic GPU's SASS dump leaves its cubin in /tmp/mosaic-gpu-XXXXXX: remove the ones made here.
    for path in set(Path(tempfile.gettempdir()).glob("mosaic-gpu-*")) - leftovers:
        shutil.rmtree(path, ignore_errors=True)
    hashes = _KERNEL_HASH.findall(lowered.as_text())
    if not sass and len(hashes) == 1:
        sass = seen.get(hashes[0], "")
    elif sass and len(hashes) == 1:
        seen[hashes[0]] = sass
    return (lowered_at - started) * 1e3, (done - lowered_at) * 1e3, sass


def _build(point: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    """The point's kernel for Mosaic GPU: ``factory(form, T, interpret=False, compiler="mosaic_gpu")``."""
    module, _, name = point["factory"].partition(":")
    fn, specs = getattr(importlib.import_module(module), name)(
        point["form"], point["T"], interpret=False, compiler="mosaic_gpu"
    )
    return fn, tuple(specs)


def run(request: dict[str, Any], out_dir: Path) -> None:
    started = time.perf_counter()
    mesh = _topology_mesh()
    budget_s = float(request.get("budget_s", float("inf")))
    seen: dict[str, str] = {}
    if request["points"]:
        _warm_up(mesh)
    with (out_dir / "results.jsonl").open("a") as results:
        for point in request["points"]:
            row: dict[str, Any] = dict(point)
            spent = time.perf_counter() - started
            if spent > budget_s:
                row.update(
                    status=STATUS_NOT_REACHED,
                    error=f"the worker had run {spent:.0f} s > budget_s={budget_s:g}",
                )
            else:
                row.update(_measure(point, mesh, seen, out_dir))
            results.write(json.dumps(row) + "\n")
            results.flush()


def _measure(point: dict[str, Any], mesh: Any, seen: dict[str, str], out_dir: Path) -> dict[str, Any]:
    try:
        lower_ms, compile_ms, sass = compile_point(point, mesh, seen)
    except Exception as err:  # noqa: BLE001 - a point that does not compile is a result
        first = str(err).strip().splitlines()[0][:400] if str(err).strip() else ""
        status = STATUS_NO_LOWER if isinstance(err, NotImplementedError) else STATUS_FAILED
        return dict(status=status, error=f"{type(err).__name__}: {first}")
    where = out_dir / re.sub(r"[^A-Za-z0-9_]+", "_", f"{point['form']}_T{point['T']}")
    where.mkdir(parents=True, exist_ok=True)
    (where / "sass.txt").write_text(sass)
    return dict(status=STATUS_OK, error="", lower_ms=[lower_ms], compile_ms=[compile_ms], dump_dir=where.name)


def use_own_cuda_tools() -> None:
    """Put the environment's ptxas, libdevice and nvdisasm (``nvidia.cu13``, from PyPI) before
    any other CUDA on this machine (else the machine's CUDA is used); call before JAX starts."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia.cu13")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    cuda = next((r for r in roots if (r / "bin" / "ptxas").exists()), None)
    if cuda is None:
        return
    os.environ["PATH"] = os.pathsep.join([str(cuda / "bin"), os.environ.get("PATH", "")])
    os.environ["CUDA_ROOT"] = str(cuda)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_gpu_cuda_data_dir={cuda}".strip()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m jaxperf.compilers.mosaic_gpu.aot REQUEST.json OUT_DIR", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    out_dir = Path(args[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    use_own_cuda_tools()
    run(request, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
