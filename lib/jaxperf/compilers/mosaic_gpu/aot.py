"""The Mosaic GPU compile worker: ``python -m jaxperf.compilers.mosaic_gpu.aot REQUEST OUT_DIR``.

Runs inside the compile environment (:mod:`jaxperf.compilers.mosaic_gpu.toolchain`), never
in the project's venv, and imports only JAX and the kernel each point names. For each point of
the request (a JSON file: ``points``, ``repeats``, ``dump``, ``budget_s``) it builds the
point's kernel (a reader's ``factory``, or a ``builder`` such as the study's Mosaic GPU port,
:func:`jaxperf.compilers.mosaic_gpu.ir.point`), lowers it for a deviceless H100
topology and compiles it with XLA's GPU compiler, whose Mosaic GPU custom call runs Mosaic
GPU's passes, LLVM's NVPTX backend and ptxas for sm_90a. Each repeat compiles a kernel of
its own name, so that neither JAX's nor Mosaic GPU's compile cache answers it. With ``dump``,
one more compile dumps what Mosaic GPU produced (its module as Pallas lowered it, the LLVM
dialect after its passes, PTX, the ptxas log, SASS) into ``OUT_DIR/<point>/``. One JSON line
per point goes to ``OUT_DIR/results.jsonl`` as soon as it is done, so a killed run keeps
what it had. Nothing runs on a GPU.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from .toolchain import TARGET_CONFIG

DUMP_FILES = {"ptx": ".ptx", "ptxas": ".ptxas", "sass": ".sass_ctrl"}
# The kernel's gpu.module in the LLVM dialect: the last IR Mosaic GPU's passes print before
# it is handed to LLVM's NVPTX backend.
_BEFORE_ASSEMBLY = "IR Dump Before GpuModuleToAssemblyPass"


def _topology_mesh() -> Any:
    from jax.experimental import topologies
    from jax.sharding import Mesh

    topology = topologies.get_topology_desc(platform="cuda", target_config=TARGET_CONFIG, topology="1x1x1")
    return Mesh(topology.devices, ("x",))


def _placed(specs: tuple, mesh: Any) -> list:
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    sharding = NamedSharding(mesh, PartitionSpec())
    return [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding) for s in specs]


def _build(point: dict[str, Any], name: str) -> tuple[Any, tuple]:
    if "factory" in point:  # a reader's kernel (jaxperf.loops.factory): a fresh trace, no cache
        import jax

        from ...loops.factory import load

        jax.clear_caches()
        return load(point["factory"]).build(point["form"], point["T"], compiler="mosaic_gpu")

    # a builder "module:function" takes the point's own keywords and a kernel name of its own
    module, _, function = point["builder"].partition(":")
    build = getattr(importlib.import_module(module), function)
    return build(**{k: v for k, v in point.items() if k != "builder"}, name=name)


def compile_once(point: dict[str, Any], mesh: Any, name: str) -> tuple[float, float, Any]:
    """Build, lower and compile under kernel name ``name``: (lower ms, compile ms, the module text)."""
    from ... import private_api

    modules: list[str] = []
    fn, specs = _build(point, name)
    started = time.perf_counter()
    with private_api.mosaic_lowering_hook("mosaic_gpu", lambda m: modules.append(str(m.operation))):
        lowered = fn.trace(*_placed(specs, mesh)).lower()
    lowered_at = time.perf_counter()
    lowered.compile()
    done = time.perf_counter()
    return (lowered_at - started) * 1e3, (done - lowered_at) * 1e3, modules[-1] if modules else ""


def _llvm_dialect(passes_log: str) -> str:
    """The kernel's gpu.module from the last dump before Mosaic GPU hands it to LLVM."""
    at = passes_log.rfind(_BEFORE_ASSEMBLY)
    if at < 0:
        return ""
    module = passes_log[passes_log.index("\n", at) + 1 :]
    end = module.find("// -----// IR Dump")
    module = module[:end] if end >= 0 else module
    start = module.find("gpu.module @")
    return module[start:] if start >= 0 else module


def dump_once(point: dict[str, Any], mesh: Any, name: str, where: Path) -> dict[str, int]:
    """Compile once more with Mosaic GPU's dumps on; keep its texts under ``where``."""
    where.mkdir(parents=True, exist_ok=True)
    leftovers = set(Path(tempfile.gettempdir()).glob("mosaic-gpu-*"))
    with tempfile.TemporaryDirectory(prefix="jaxperf-mgpu-dump-") as tmp:
        os.environ["MOSAIC_GPU_DUMP_TO"] = tmp
        try:
            _, _, module = compile_once(point, mesh, name)
        finally:
            del os.environ["MOSAIC_GPU_DUMP_TO"]
        (where / "mosaic.mlir").write_text(module)
        sizes = {"mosaic": len(module)}
        for kind, suffix in DUMP_FILES.items():
            found = sorted(Path(tmp).glob(f"*{suffix}"))
            text = found[-1].read_text() if found else ""
            (where / f"{kind}.txt").write_text(text)
            sizes[kind] = len(text)
        passes = sorted(Path(tmp).glob("*.mlir-passes.log"))
        llvm = _llvm_dialect(passes[-1].read_text()) if passes else ""
        (where / "llvm.mlir").write_text(llvm)
        sizes["llvm"] = len(llvm)
    # Mosaic GPU's SASS dump leaves its cubin in /tmp/mosaic-gpu-XXXXXX: remove the ones made here.
    for path in set(Path(tempfile.gettempdir()).glob("mosaic-gpu-*")) - leftovers:
        shutil.rmtree(path, ignore_errors=True)
    return sizes


def point_id(point: dict[str, Any]) -> str:
    form = point["form"] if "factory" in point else f"{point['loop_form']}_u{point['unroll']}"
    return re.sub(r"[^A-Za-z0-9_]+", "_", f"{form}_T{point['T']}")


def run(request: dict[str, Any], out_dir: Path) -> None:
    started = time.perf_counter()
    mesh = _topology_mesh()
    budget_s = float(request.get("budget_s", float("inf")))
    # The process' first Mosaic GPU compile pays one-off set-up (LLVM's NVPTX target, the passes).
    if request["points"]:
        compile_once(request["points"][0], mesh, "warm_up")
    with (out_dir / "results.jsonl").open("a") as results:
        for index, point in enumerate(request["points"]):
            row: dict[str, Any] = dict(point)
            spent = time.perf_counter() - started
            if spent > budget_s:
                row.update(
                    status="over budget", error=f"the worker had run {spent:.0f} s > budget_s={budget_s:g}"
                )
            else:
                row.update(_measure(point, mesh, index, request, out_dir))
            results.write(json.dumps(row) + "\n")
            results.flush()


def _measure(point: dict[str, Any], mesh: Any, index: int, request: dict[str, Any], out_dir: Path) -> dict:
    lower_ms: list[float] = []
    compile_ms: list[float] = []
    if "factory" in point and request.get("dump"):
        return _measure_dumped(point, mesh, out_dir)
    try:
        for repeat in range(int(request.get("repeats", 1))):
            low, comp, module = compile_once(point, mesh, f"seed_p{index}_r{repeat}")
            lower_ms.append(low)
            compile_ms.append(comp)
            if repeat == 0 and comp > 1e3 * float(request.get("repeat_below_s", float("inf"))):
                break
        row: dict[str, Any] = dict(status="ok", error="", lower_ms=lower_ms, compile_ms=compile_ms)
        row["mosaic_lines"] = module.count("\n") + 1
        if request.get("dump"):
            where = out_dir / point_id(point)
            row["dump_dir"] = where.name
            row["dump_sizes"] = dump_once(point, mesh, f"seed_p{index}_dump", where)
        return row
    except Exception as err:  # noqa: BLE001 - a point that does not compile is a result
        first = str(err).strip().splitlines()[0][:400] if str(err).strip() else ""
        frame = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
        site = f" (raised at {Path(frame.filename).name}:{frame.lineno})" if frame and not first else ""
        return dict(
            status="failed",
            error=f"{type(err).__name__}: {first}{site}",
            lower_ms=lower_ms,
            compile_ms=compile_ms,
        )


def _measure_dumped(point: dict[str, Any], mesh: Any, out_dir: Path) -> dict:
    """A reader's kernel keeps its own name, so a second compile would be served by Mosaic GPU's
    cache: one compile, dumps on, timed (the times include writing the dumps)."""
    where = out_dir / point_id(point)
    try:
        started = time.perf_counter()
        sizes = dump_once(point, mesh, "", where)
        total_ms = (time.perf_counter() - started) * 1e3
    except Exception as err:  # noqa: BLE001 - a point that does not compile is a result
        first = str(err).strip().splitlines()[0][:400] if str(err).strip() else ""
        return dict(status="failed", error=f"{type(err).__name__}: {first}", lower_ms=[], compile_ms=[])
    return dict(
        status="ok", error="", lower_ms=[0.0], compile_ms=[total_ms], dump_dir=where.name, dump_sizes=sizes
    )


def use_own_cuda_tools() -> dict[str, str]:
    """Put the environment's ptxas, libdevice and nvdisasm (``nvidia.cu13``, from PyPI) before
    any other CUDA on this machine; call before JAX starts. Returns what was found."""
    import importlib.util
    import subprocess

    spec = importlib.util.find_spec("nvidia.cu13")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    cuda = next((r for r in roots if (r / "bin" / "ptxas").exists()), None)
    if cuda is None:
        return {"cuda_root": "", "ptxas": "not found in the environment: the machine's CUDA is used"}
    os.environ["PATH"] = os.pathsep.join([str(cuda / "bin"), os.environ.get("PATH", "")])
    os.environ["CUDA_ROOT"] = str(cuda)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_gpu_cuda_data_dir={cuda}".strip()
    version = subprocess.run([str(cuda / "bin" / "ptxas"), "--version"], capture_output=True, text=True)
    return {
        "cuda_root": str(cuda),
        "ptxas": version.stdout.strip().splitlines()[-1] if version.stdout else "",
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m jaxperf.compilers.mosaic_gpu.aot REQUEST.json OUT_DIR", file=sys.stderr)
        return 2
    request = json.loads(Path(args[0]).read_text())
    out_dir = Path(args[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    tools = use_own_cuda_tools()
    import jax

    (out_dir / "toolchain.json").write_text(json.dumps(dict(tools, jax=jax.__version__)))
    run(request, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
