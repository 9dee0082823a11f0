"""The model's inputs read from real machine code: kernels compiled on this CPU for a GPU target.

:func:`kernel_work` exports a jitted function holding one Triton
``pallas_call`` (:func:`jaxperf.compilers.triton.capture.capture`), compiles it to a
cubin for the target (:func:`jaxperf.compilers.triton.compile.compile_ttir`), and reads
the SASS into a :class:`~jaxperf.gpu_model.model.KernelWork`.
:func:`seed_point` does that for the reporter's kernel in one loop form at one
T (its bytes: the ``[B, T, D]`` input read once, the output written once). A
form Pallas' Triton lowering rejects (``fori_loop(unroll>1)``) is a result:
status "does not lower", no work. Needs the optional ``triton`` extra.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..compilers.triton.capture import DoesNotLower, capture
from ..compilers.triton.compile import compile_ttir
from ..jax20909 import vocab
from .counts import warp_counts
from .model import KernelWork

# The reporter's sizes (vocab.SEED_SIZES), typed.
BATCH = cast(int, vocab.SEED_SIZES["batch"])
D_FEATURES = cast(int, vocab.SEED_SIZES["D"])
DTYPE = cast(str, vocab.SEED_SIZES["dtype"])


@dataclass(frozen=True)
class Compiled:
    work: KernelWork
    sass: str
    triton_version: str
    ptxas_log: str


def kernel_work(
    name: str,
    fn: Callable[..., Any],
    args: Sequence[Any],
    *,
    target: str,
    bytes_read: float,
    bytes_written: float,
) -> Compiled:
    """Compile ``fn(*args)`` for ``target`` and count its SASS (raises DoesNotLower, ValueError)."""
    captured = capture(fn, args, target=target)
    result = compile_ttir(
        captured.ttir, target=target, num_warps=captured.num_warps, num_stages=captured.num_stages
    )
    work = KernelWork(
        name=name,
        counts=warp_counts(result.sass),
        warps_per_program=captured.num_warps,
        programs=captured.programs,
        bytes_read=float(bytes_read),
        bytes_written=float(bytes_written),
        registers=max(result.sass_stats.registers, 0),
        shared_bytes_per_program=int(result.sass_stats.shared_bytes or 0),
    )
    import triton

    return Compiled(work, result.sass, triton.__version__, result.ptxas_log)


@dataclass(frozen=True)
class SeedPoint:
    """The reporter's kernel in one form at one T for one target: its work, or why there is none."""

    variant: str
    T: int
    target: str
    carry_dtype: str  # "input" (his fp16 carry) or "float32" (as the device run times it)
    status: str  # "ok" or "does not lower: ..."
    compiled: Compiled | None = None

    @property
    def work(self) -> KernelWork | None:
        return None if self.compiled is None else self.compiled.work


@functools.lru_cache(maxsize=256)
def seed_point(
    variant: str,
    T: int,
    *,
    target: str,
    carry_dtype: str,
    batch: int = BATCH,
    D: int = D_FEATURES,
    dtype: str = DTYPE,
) -> SeedPoint:
    """Compile the seed kernel's ``variant`` (e.g. ``"fori u=1"``) at ``T`` (cached per process)."""
    from ..jax20909 import kernels

    form, unroll = vocab.parse_variant(variant)
    fn, args = kernels.build(
        "seed",
        form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        interpret=False,
        lowering="triton",
        carry_dtype=carry_dtype,
    )
    elements = batch * T * D
    out_bytes = np.dtype(dtype if carry_dtype == "input" else carry_dtype).itemsize
    try:
        compiled = kernel_work(
            f"seed {variant}",
            fn,
            args,
            target=target,
            bytes_read=elements * np.dtype(dtype).itemsize,
            bytes_written=elements * out_bytes,
        )
    except DoesNotLower as err:
        return SeedPoint(variant, T, target, carry_dtype, f"does not lower: {err}")
    return SeedPoint(variant, T, target, carry_dtype, "ok", compiled)
