"""The reporter's jax#20909 kernel written the way Mosaic GPU (Hopper and newer) needs it.

Mosaic GPU stages what a program reads in shared memory, so a port that hands every program the
whole ``[T, D]`` input (as the reporter's Triton kernel does) is refused from T=1024
(``smem_bytes=395272 > max_smem_bytes=232448``). Here each of the ``T / 128`` programs copies its
own 128-row block into shared memory, runs the row-block kernel's loop on it
(:func:`jaxperf_study.jax20909.kernels.row_block`, every loop form) and copies its block of the
output back; the batch is vmapped, as the reporter vmapped his ``pallas_call``. Only public
``plgpu`` names are used, so the port runs on jax 0.11.2 (the lent GPU's) as on 0.12.
``interpret=True`` runs Mosaic GPU's own interpreter on the CPU: the arithmetic, never the speed.
What the port cannot build (Mosaic GPU unrolls ``fori_loop(unroll=k)`` only for a ``k`` that
divides the trip count) raises ValueError before anything is traced (:mod:`.mosaic_gpu_rules`).
"""

from __future__ import annotations

from typing import Any

from jaxperf.errors import bad_value

from .inputs import example_args
from .kernels import row_block
from .mosaic_gpu_rules import check
from .variant import KernelVariant


def build(
    variant: KernelVariant, *, interpret: bool = False, check_unroll: bool = True, name: str | None = None
) -> tuple[Any, tuple[Any, ...]]:
    """The jitted port (``[batch, T, D]`` -> ``[batch, T, D]``) and ShapeDtypeStructs of its input;
    :func:`~.mosaic_gpu_rules.check` says what raises (``check_unroll=False``: the unroll rule left
    to Mosaic GPU itself). ``name`` names the kernel (a new name is a new kernel to every cache)."""
    import jax
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import mosaic_gpu as plgpu

    if not isinstance(interpret, bool):
        raise bad_value("interpret", interpret, "True or False")
    v = check(variant, check_unroll=check_unroll)
    acc = jax.numpy.dtype(v.carry)
    loop_body = row_block(v.kernel)
    rows = v.out_rows
    (spec,) = example_args(v)
    options: dict[str, Any] = {"interpret": plgpu.InterpretGPUParams()} if interpret else {}

    def program(x_gmem, y_gmem, x_smem, y_smem, loaded):
        block = pl.ds(lax.axis_index("i") * rows, rows)
        plgpu.copy_gmem_to_smem(x_gmem.at[block], x_smem, loaded)
        plgpu.barrier_wait(loaded)
        y_smem[...] = loop_body(x_smem[...], v, acc)
        plgpu.commit_smem()
        plgpu.copy_smem_to_gmem(y_smem, y_gmem.at[block])
        plgpu.wait_smem_to_gmem(0)

    call = plgpu.kernel(
        program,
        out_type=jax.ShapeDtypeStruct((v.T, v.D), acc),
        grid=(v.T // rows,),
        grid_names=("i",),
        scratch_types=[plgpu.SMEM((rows, v.D), spec.dtype), plgpu.SMEM((rows, v.D), acc), plgpu.Barrier()],
        kernel_name=name or f"{v.kernel}_{v.name.replace(' u=', '_u')}",
        **options,
    )
    return jax.jit(jax.vmap(call)), (spec,)
