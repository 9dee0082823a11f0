"""Exporting a kernel for CUDA without a GPU, shared by Triton and Mosaic GPU: an abstract
one-device mesh of an NVIDIA device kind stands in for the hardware (Pallas' GPU lowerings ask it
for its compute capability). :data:`TARGETS` names the NVIDIA generations the study compiles for."""

from __future__ import annotations

import contextlib
import functools
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import check_choice

# Target name -> (compute capability, a device kind JAX's Pallas lowering maps
# to that capability). sm_86 is the reporter's RTX A6000 generation (JAX knows
# the A10, same sm_86); sm_90 is an H100.
TARGETS: dict[str, tuple[int, str]] = {
    "sm_90": (90, "NVIDIA H100 80GB HBM3"),
    "sm_86": (86, "NVIDIA A10"),
    "sm_80": (80, "NVIDIA A100-SXM4-80GB"),
}
DEFAULT_TARGET = "sm_90"
TRITON_CUSTOM_CALL = "__gpu$xla.gpu.triton"


def check_target(target: str) -> int:
    """The compute capability for ``target``; ValueError naming what is allowed."""
    check_choice("target", target, TARGETS)
    return TARGETS[target][0]


@contextlib.contextmanager
def cuda_export(
    device_kind: str, custom_calls: Sequence[str] = (TRITON_CUSTOM_CALL,)
) -> Iterator[Callable[..., Any]]:
    """Inside an abstract one-device mesh of ``device_kind`` (no GPU needed), yield
    ``jax.export.export`` bound to CUDA with ``custom_calls`` allowed. The caller
    calls it, so the exported module's source locations stay the caller's."""
    import jax
    from jax.sharding import AbstractDevice, AbstractMesh

    device = AbstractDevice(device_kind=device_kind, num_cores=None, platform="cuda")
    mesh = AbstractMesh((1,), ("x",), abstract_device=device)
    checks = [jax.export.DisabledSafetyCheck.custom_call(name) for name in custom_calls]
    with jax.sharding.use_abstract_mesh(mesh):
        yield functools.partial(jax.export.export, platforms=["cuda"], disabled_checks=checks)


def raise_site(err: BaseException) -> traceback.FrameSummary | None:
    """The frame where ``err`` was raised (JAX raises some NotImplementedErrors bare)."""
    frames = traceback.extract_tb(err.__traceback__)
    return frames[-1] if frames else None
