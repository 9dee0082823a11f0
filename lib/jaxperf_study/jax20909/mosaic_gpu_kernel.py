"""The reporter's jax#20909 kernel written the way Mosaic GPU (Hopper and newer) needs it.

Mosaic GPU stages what a program reads in shared memory, so a port that hands every
program the whole ``[T, D]`` input (as the reporter's Triton kernel does, and
:func:`jaxperf_study.jax20909.kernels.build` with ``lowering="mosaic_gpu"``) is refused from
T=1024 (``smem_bytes=395272 > max_smem_bytes=232448``). Here each program copies its own
128-row block into shared memory (``plgpu.copy_gmem_to_smem``, then waits on a barrier),
runs the reporter's loop on it, ``carry += X_i.sum() + j`` for ``T / 64`` steps on a
``[128, D]`` carry (:func:`jaxperf_study.jax20909.kernels.seed_block`, every loop form; with
``kernel="data_carry"`` the elementwise ``carry += X_i + j`` instead), and
copies its block of the ``[T, D]`` output back. The grid has ``T / 128`` programs per batch
element; the batch is vmapped, as the reporter vmapped his ``pallas_call``. Only public
``plgpu`` names are used, so the port runs on jax 0.11.2 (the lent GPU's) as on 0.12.

``interpret=True`` runs it in Mosaic GPU's own interpreter on the CPU
(``plgpu.InterpretGPUParams``: shared memory, barriers and the copies simulated): it
proves the arithmetic, never the speed.

Mosaic GPU unrolls ``fori_loop(unroll=k)`` only when ``k`` divides the trip count; that
and the other bad inputs raise ValueError here, before anything is traced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxperf.errors import bad_value, check_choice

from .inputs import example_args
from .kernels import SEED_BLOCK_ROWS, SEED_OUT_ROWS, carry_dtype_of, check_params, row_block
from .mosaic_gpu_rules import FORI_UNROLLED, check_divides, divisors
from .vocab import ROW_BLOCK_KERNELS, check_carry_dtype, variant_name

__all__ = ["FORI_UNROLLED", "build", "check", "check_divides", "divisors"]


def check(
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int = 64,
    batch: int = 1,
    dtype: Any = "float16",
    carry_dtype: str = "float32",
    check_unroll: bool = True,
    kernel: str = "seed",
) -> np.dtype:
    """Validate a variant of the port; the carry's dtype. ValueError names the parameter, the
    value and what is allowed: an unknown form or dtype, ``T`` not a multiple of 128 (the
    block a program copies), or (``check_unroll``) a ``fori``/``pl_loop`` unroll that does not
    divide the trip count ``T / 64``; ``kernel`` is ``"seed"`` or ``"data_carry"``.
    (:func:`jaxperf_study.jax20909.mosaic_gpu_rules.check` is the same check with the standard
    library only, for dtypes given by name.)"""
    check_choice("kernel", kernel, ROW_BLOCK_KERNELS)
    check_carry_dtype(kernel, carry_dtype)
    check_params(
        kernel,
        loop_form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        block_rows=SEED_BLOCK_ROWS,
        out_rows=SEED_OUT_ROWS,
    )
    if check_unroll:
        check_divides(loop_form, unroll, T)
    return carry_dtype_of(kernel, dtype, carry_dtype)


def build(
    loop_form: str,
    unroll: int,
    *,
    T: int,
    D: int = 64,
    batch: int = 1,
    dtype: Any = "float16",
    interpret: bool = False,
    carry_dtype: str = "float32",
    check_unroll: bool = True,
    name: str | None = None,
    kernel: str = "seed",
) -> tuple[Any, tuple[Any, ...]]:
    """The jitted port (``[batch, T, D]`` -> ``[batch, T, D]``) and ShapeDtypeStructs of its input.

    See the module docstring; :func:`check` lists what raises. ``check_unroll=False`` leaves
    the unroll rule to Mosaic GPU itself (the lowering matrix records its own error).
    ``name`` names the kernel (a compile under a new name is a new kernel to every cache).
    """
    import jax
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import mosaic_gpu as plgpu

    if not isinstance(interpret, bool):
        raise bad_value("interpret", interpret, "True or False")
    acc = check(
        loop_form,
        unroll,
        T=T,
        D=D,
        batch=batch,
        dtype=dtype,
        carry_dtype=carry_dtype,
        check_unroll=check_unroll,
        kernel=kernel,
    )
    loop_body = row_block(kernel)
    rows, steps = SEED_OUT_ROWS, T // SEED_BLOCK_ROWS
    (spec,) = example_args(kernel, T=T, D=D, batch=batch, dtype=dtype, out_rows=rows)
    options: dict[str, Any] = {"interpret": plgpu.InterpretGPUParams()} if interpret else {}

    def program(x_gmem, y_gmem, x_smem, y_smem, loaded):
        block = pl.ds(lax.axis_index("i") * rows, rows)
        plgpu.copy_gmem_to_smem(x_gmem.at[block], x_smem, loaded)
        plgpu.barrier_wait(loaded)
        y_smem[...] = loop_body(x_smem[...], steps=steps, loop_form=loop_form, unroll=unroll, acc=acc)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(y_smem, y_gmem.at[block])
        plgpu.wait_smem_to_gmem(0)

    call = plgpu.kernel(
        program,
        out_type=jax.ShapeDtypeStruct((T, D), acc),
        grid=(T // rows,),
        grid_names=("i",),
        scratch_types=[plgpu.SMEM((rows, D), spec.dtype), plgpu.SMEM((rows, D), acc), plgpu.Barrier()],
        kernel_name=name or f"{kernel}_{variant_name(loop_form, unroll).replace(' u=', '_u')}",
        **options,
    )
    return jax.jit(jax.vmap(call)), (spec,)
