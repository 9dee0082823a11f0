"""What the Mosaic GPU port of the reporter's kernel accepts, checked with the standard library
only (the options check runs it before any environment exists); the port,
:mod:`jaxperf_study.jax20909.mosaic_gpu_kernel`, checks with these and builds the kernel."""

from __future__ import annotations

from typing import Any

from jaxperf.errors import bad_value

from .vocab import SEED_BLOCK_ROWS, SEED_OUT_ROWS, check_carry_dtype, check_dtype_name, check_variant

#: Forms whose ``unroll`` Mosaic GPU's ``fori_loop`` lowering applies (and so must divide the steps).
FORI_UNROLLED = ("fori", "pl_loop")


def divisors(n: int) -> list[int]:
    """The unrolls Mosaic GPU accepts for a loop of ``n`` steps."""
    return [k for k in range(1, n + 1) if n % k == 0]


def check_divides(loop_form: str, unroll: int, T: int) -> None:
    """Mosaic GPU's unroll rule, before any compile: for ``fori``/``pl_loop`` the unroll must
    divide the trip count ``T / 64`` (ValueError naming the divisors allowed). Imports no JAX."""
    steps = T // SEED_BLOCK_ROWS
    if loop_form in FORI_UNROLLED and steps % unroll:
        raise bad_value(
            "unroll",
            unroll,
            f"a divisor of the trip count T/{SEED_BLOCK_ROWS}={steps} for loop_form={loop_form!r} on "
            f"Mosaic GPU (one of {divisors(steps)}), or a hand-unrolled form (any unroll)",
        )


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
) -> None:
    """Validate a variant of the port. ValueError names the parameter, the value and what is
    allowed: an unknown form or dtype, ``T`` not a multiple of 128 (the block a program copies),
    or (``check_unroll``) a ``fori``/``pl_loop`` unroll that does not divide the trip count ``T / 64``."""
    check_carry_dtype("seed", carry_dtype)
    check_variant(
        "seed", loop_form, unroll, T=T, D=D, batch=batch, block_rows=SEED_BLOCK_ROWS, out_rows=SEED_OUT_ROWS
    )
    check_dtype_name(dtype)
    if check_unroll:
        check_divides(loop_form, unroll, T)
