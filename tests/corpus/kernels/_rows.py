"""The row-block grid every row-wise corpus kernel shares (as Pallas' docs write a norm)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxperf.errors import bad_value

LANES, ROWS, M, CHECK_M = 128, 8, 32, 8


def check_T(T: int) -> None:
    if not isinstance(T, int) or T < LANES or T % LANES:
        raise bad_value("T", T, f"a multiple of {LANES}, at least {LANES}")


def row_call(kernel: Callable[..., None], out_cols: Callable[[int], int], dtype: Any = jnp.float32) -> Any:
    """A factory for ``kernel(x_ref, o_ref, *, form)`` over ``[ROWS, T]`` row blocks."""

    def make(form: str, T: int, *, interpret: bool = False) -> tuple[Any, tuple[Any, ...]]:
        check_T(T)
        m = CHECK_M if interpret else M
        cols = out_cols(T)

        def fn(x: Any) -> Any:
            return pl.pallas_call(
                functools.partial(kernel, form=form),
                out_shape=jax.ShapeDtypeStruct((m, cols), x.dtype),
                grid=(m // ROWS,),
                in_specs=[pl.BlockSpec((ROWS, T), lambda i: (i, 0))],
                out_specs=pl.BlockSpec((ROWS, cols), lambda i: (i, 0)),
                interpret=interpret,
            )(x)

        return jax.jit(fn), (jax.ShapeDtypeStruct((m, T), dtype),)

    return make
