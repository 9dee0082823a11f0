"""What the Mosaic GPU port of the reporter's kernel accepts beyond any
:class:`~.variant.KernelVariant`, checked with the standard library only (the options check runs
it before any environment exists); the port, :mod:`jaxperf_study.jax20909.mosaic_gpu_kernel`,
checks with it and builds the kernel."""

from __future__ import annotations

from jaxperf.errors import bad_value, check_choice

from .variant import KernelVariant
from .vocab import ROW_BLOCK_KERNELS, SEED_BLOCK_ROWS, SEED_OUT_ROWS

#: Forms whose ``unroll`` Mosaic GPU's ``fori_loop`` lowering applies (and so must divide the steps).
FORI_UNROLLED = ("fori", "pl_loop")


def divisors(n: int) -> list[int]:
    """The unrolls Mosaic GPU accepts for a loop of ``n`` steps."""
    return [k for k in range(1, n + 1) if n % k == 0]


def check(variant: KernelVariant, *, check_unroll: bool = True) -> KernelVariant:
    """``variant`` if the port builds it: a row-block kernel (``seed``, ``data_carry``) at the
    reporter's block sizes (64-row steps, 128-row programs: the block a program copies), and
    (``check_unroll``) for ``fori``/``pl_loop`` an unroll that divides the trip count ``T / 64``,
    Mosaic GPU's own rule (ValueError naming the divisors allowed). Imports no JAX."""
    check_choice("kernel", variant.kernel, ROW_BLOCK_KERNELS)
    for name, seed in (("block_rows", SEED_BLOCK_ROWS), ("out_rows", SEED_OUT_ROWS)):
        if getattr(variant, name) != seed:
            raise bad_value(
                name, getattr(variant, name), f"{seed} (the reporter's, which the port is written for)"
            )
    steps = variant.steps
    if check_unroll and variant.loop_form in FORI_UNROLLED and steps % variant.unroll:
        raise bad_value(
            "unroll",
            variant.unroll,
            f"a divisor of the trip count T/{SEED_BLOCK_ROWS}={steps} for loop_form={variant.loop_form!r} on "
            f"Mosaic GPU (one of {divisors(steps)}), or a hand-unrolled form (any unroll)",
        )
    return variant
