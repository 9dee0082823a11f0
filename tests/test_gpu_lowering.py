"""Every kernel variant a GPU pass of notebook 02 plans is lowered for CUDA here, without a GPU, with the
lock's JAX (the device run's dry run does the same with the image's, 0.11.2: tools/gpu_lowering.py).

Covered here, to keep CI short: every (part, variant) of the GPU preset's plan at its smallest planned
T, and every form but the Python loop also at its largest (a loop form's program does not change with
T; the Python loop's grows, so it is lowered up to T=2048 here and at every T in the dry run); compiled
for Triton sm_90 (the ``triton`` extra) each at its smallest T, and the Mosaic GPU port for sm_90a where
its environment is built (tools/make_mosaic_gpu_env.sh)."""

from __future__ import annotations

import sys

import jax
import pytest

from jaxperf.compilers.mosaic_gpu import toolchain as mgpu_env
from jaxperf.compilers.triton import toolchain
from jaxperf.paths import PROJECT_ROOT
from jaxperf_study.jax20909.settings import LoopSettings, triton_refuses

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

import gpu_lowering  # noqa: E402

SETTINGS = LoopSettings.on_device("gpu")
PLAN = SETTINGS.gpu_plan()
TS = {(p, v): [T for q, w, T in PLAN if (q, w) == (p, v)] for p, v, _ in PLAN}


def _keep(part: str, variant: str, T: int) -> bool:
    Ts = TS[(part, variant)]
    return T == min(Ts) or (variant != "python" and T == max(Ts)) or (variant == "python" and T <= 2048)


@pytest.fixture(scope="module")
def rows():
    return gpu_lowering.lower_plan(SETTINGS, _keep, lambda part, variant, T: T == min(TS[(part, variant)]))


def test_every_planned_variant_is_lowered_for_cuda_with_this_jax(rows):
    lowered = {(p, v) for parts, v in zip(rows.parts, rows.variant) for p in parts.split(",")}
    assert lowered == set(TS)  # every part's every variant
    assert set(rows.jax) == {jax.__version__}
    refused = rows[rows.lowered != "ok"]
    assert sorted(set(refused.variant)) == ["fori u=16", "fori u=2", "fori u=4", "fori u=8"]
    assert refused.variant.map(triton_refuses).all() and (refused.compiler == "triton").all()
    assert refused.lowered.str.contains("NotImplementedError.*_scan_lowering_rule").all()
    assert {T for v, T in zip(rows.variant, rows["T"]) if v == "hoisted u=1"} >= {256, 65536}


def test_each_lowered_variant_compiles_where_its_compiler_is_here(rows):
    tried = rows[(rows.lowered == "ok") & (rows.compiled != "")]
    assert len(tried) >= 12
    triton = tried[tried.compiler == "triton"]
    if toolchain.status().available:
        assert triton.compiled.str.startswith("ok (triton ").all(), triton.compiled.tolist()
        assert (triton.compile_ms > 0).all()
    else:
        assert triton.compiled.str.startswith("not present here").all()
    port = tried[tried.compiler == "mosaic_gpu"]
    assert len(port) == len(SETTINGS.mosaic_gpu_variants)
    want = "ok (jax " if mgpu_env.status().available else "not measured"
    assert port.compiled.str.startswith(want).all(), port.compiled.tolist()
