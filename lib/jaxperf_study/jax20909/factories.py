"""The study's jax#20909 kernels as factories for the loop study's engine
(:mod:`jaxperf.loops.engine`): ``make(form, T, *, interpret=False, compiler=None) -> (fn, args)``,
so they go through the same code as a reader's kernel (``python -m jaxperf loops
jaxperf_study.jax20909.factories:seed``).

Sizes: the reporter's (fp16 input, D=64, float32 carry, 64-row steps, 128-row programs), batch 512
compiled, 1 interpreted (the check). ``compiler="mosaic_gpu"`` builds the row-block kernels' Mosaic
GPU port (:mod:`.mosaic_gpu_kernel`); ``"mosaic_tpu"`` the kernel a TPU v5e holds (float32, a
BlockSpec per program, :func:`.vocab.tpu_batch`). Forms: every loop form that applies to the kernel.
"""

from __future__ import annotations

import functools
from typing import Any

from jaxperf.errors import bad_value, check_choice

from . import kernels, mosaic_gpu_kernel, vocab
from .variant import KernelVariant

BATCH, CHECK_BATCH, D = 512, 1, 64


def _parse(kernel: str, form: str) -> tuple[str, int]:
    name, sep, unroll = str(form).partition(" u=")
    allowed = [f for f in vocab.LOOP_FORMS if vocab.applies(kernel, f)]
    if name not in allowed or (sep and not unroll.isdigit()):
        raise bad_value("form", form, f"one of {allowed} for kernel={kernel!r}, with an optional ' u=<k>'")
    return name, int(unroll) if sep else 1


def make(
    kernel: str, form: str, T: int, *, interpret: bool = False, compiler: str | None = None
) -> tuple[Any, tuple[Any, ...]]:
    """``kernel`` (one of :data:`jaxperf_study.jax20909.vocab.KERNELS`) in loop ``form`` at ``T``."""
    check_choice("kernel", kernel, vocab.KERNELS)
    loop_form, unroll = _parse(kernel, form)
    if compiler is not None:
        check_choice("compiler", compiler, ("triton", "mosaic_gpu", "mosaic_tpu"))
    tpu = compiler == "mosaic_tpu"
    batch = CHECK_BATCH if interpret else vocab.tpu_batch(T, BATCH) if tpu else BATCH
    dtype, tiling = (vocab.TPU_DTYPE, "blocks") if tpu else ("float16", "whole")
    tiling = tiling if kernel in vocab.ROW_BLOCK_KERNELS else "whole"
    variant = KernelVariant(kernel, loop_form, unroll, T=T, D=D, batch=batch, dtype=dtype, tiling=tiling)
    if compiler == "mosaic_gpu" and variant.row_block and not interpret:
        # Mosaic GPU's own unroll rule is recorded as its error, not pre-empted (check_unroll=False).
        return mosaic_gpu_kernel.build(variant, check_unroll=False)
    lowering = "default" if compiler is None or interpret else compiler
    return kernels.build(variant, interpret=interpret, lowering=lowering)


def _factory(kernel: str) -> Any:
    fn = functools.partial(make, kernel)
    fn.forms = tuple(f for f in vocab.LOOP_FORMS if vocab.applies(kernel, f))  # type: ignore[attr-defined]
    fn.__doc__ = f"The {kernel!r} kernel as a factory: see :func:`make`."
    return fn


seed = _factory("seed")
data_carry = _factory("data_carry")
streaming = _factory("streaming")
attention = _factory("attention")
#: The study's kernels in the order the answer reads them: the reporter's, then real work.
FACTORIES = {k: f"jaxperf_study.jax20909.factories:{k}" for k in vocab.KERNELS}
