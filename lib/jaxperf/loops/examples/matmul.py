"""A blocked matmul with a k-loop, as Pallas' GPU docs write one (jax#20909's question on a kernel
whose every step does real work): each program owns a ``[bm, bn]`` block of ``z = x @ y`` and walks
K (the factory's ``T``) in ``bk`` steps, adding one ``[bm, bk] @ [bk, bn]`` product to a float32
accumulator per step."""

from __future__ import annotations

import functools
from typing import Any

import jaxperf
from jaxperf.errors import bad_value, check_int

BLOCK_M = BLOCK_N = BLOCK_K = 128  # 128 lanes: the block shapes every Pallas backend tiles
M = N = 256  # a 2 x 2 grid of programs when compiled; one program when checked (interpret)


def matmul_kernel(x_ref: Any, y_ref: Any, z_ref: Any, *, bk: int, form: str) -> None:
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def body(k: Any, acc: Any) -> Any:
        x = x_ref[:, pl.ds(k * bk, bk)]
        y = y_ref[pl.ds(k * bk, bk), :]
        return acc + jnp.dot(x, y, preferred_element_type=jnp.float32)

    acc = jnp.zeros(z_ref.shape, jnp.float32)
    z_ref[...] = jaxperf.kernel_loop(0, x_ref.shape[1] // bk, body, acc, form=form).astype(z_ref.dtype)


def matmul(
    x: Any,
    y: Any,
    *,
    form: str = "fori",
    bm: int = BLOCK_M,
    bn: int = BLOCK_N,
    bk: int = BLOCK_K,
    interpret: bool = False,
) -> Any:
    import jax
    from jax.experimental import pallas as pl

    (m, k), (_, n) = x.shape, y.shape
    return pl.pallas_call(
        functools.partial(matmul_kernel, bk=bk, form=form),
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)), pl.BlockSpec((k, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
        interpret=interpret,
    )(x, y)


def make(form: str, T: int, *, interpret: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """The matmul with a k-loop of ``T / 128`` steps (``K = T``) in loop ``form``; its inputs as
    ShapeDtypeStructs (bfloat16, ``[M, T]`` and ``[T, N]``). ``interpret=True``: one 128 x 128
    output block, for checking. ValueError for a T the 128-wide k blocks cannot tile."""
    import jax
    import jax.numpy as jnp

    check_int("T", T, minimum=BLOCK_K)
    if T % BLOCK_K:
        raise bad_value("T", T, f"a multiple of the k block, {BLOCK_K}")
    m, n = (BLOCK_M, BLOCK_N) if interpret else (M, N)
    args = (jax.ShapeDtypeStruct((m, T), jnp.bfloat16), jax.ShapeDtypeStruct((T, n), jnp.bfloat16))
    return jax.jit(functools.partial(matmul, form=form, interpret=interpret)), args
