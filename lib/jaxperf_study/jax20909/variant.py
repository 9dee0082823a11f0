"""One jax#20909 kernel variant: which kernel, in which loop form, at which sizes and dtypes.

Every builder and checker of the study takes a :class:`KernelVariant` (the kernels in plain jit
and as a ``pallas_call``, the Mosaic GPU port, their inputs, the float64 reference, the
roofline's bytes); it is checked once, where it is made, with the standard library only (the
options check makes one before any environment exists)::

    variant = KernelVariant("seed", "fori", 4, T=8192, D=64, batch=512, dtype="float16")
    fn, args = kernels.build(variant, interpret=False)
    kernels.build_xla(variant.replace(loop_form="scalar_carry", unroll=1))
"""

from __future__ import annotations

import dataclasses
from dataclasses import KW_ONLY, dataclass
from typing import Any

from jaxperf.errors import bad_value, check_choice, check_int

from .vocab import (
    CARRY_DTYPES,
    DTYPES,
    KERNELS,
    LOOP_FORMS,
    ROW_BLOCK_KERNELS,
    SEED_BLOCK_ROWS,
    SEED_OUT_ROWS,
    TILINGS,
    applies,
    variant_name,
)


def dtype_name(dtype: Any) -> str:
    """A dtype's name (``"float16"``), whether given by name or as a NumPy/JAX dtype or type."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)
    if not isinstance(name, str):
        name = getattr(dtype, "__name__", None)
    return name if isinstance(name, str) else str(dtype)


@dataclass(frozen=True)
class KernelVariant:
    """A jax#20909 kernel (:data:`~.vocab.KERNELS`) in one loop form that applies to it, at one size:
    ``unroll`` body copies per iteration (1 for ``python``); ``T`` input rows, a multiple of
    ``block_rows`` (the rows a step reads) and, for the row-block kernels, of ``out_rows`` (the rows a
    program writes); ``D`` columns; ``batch`` elements; ``dtype`` the input's, by name;
    ``carry_dtype`` ``"float32"`` or ``"input"`` (not for attention); ``tiling`` a row-block
    program's input (:data:`~.vocab.TILINGS`). ValueError names the field, the value and what is allowed.
    """

    kernel: str
    loop_form: str
    unroll: int = 1
    _: KW_ONLY
    T: int
    D: int
    batch: int
    dtype: str
    block_rows: int = SEED_BLOCK_ROWS
    out_rows: int = SEED_OUT_ROWS
    carry_dtype: str = "float32"
    tiling: str = "whole"

    def __post_init__(self) -> None:
        check_choice("kernel", self.kernel, KERNELS)
        check_choice("loop_form", self.loop_form, LOOP_FORMS)
        if not isinstance(self.unroll, bool) and hasattr(self.unroll, "__index__"):
            object.__setattr__(self, "unroll", int(self.unroll))  # a NumPy integer, as fori_loop takes
        check_int("unroll", self.unroll, minimum=1)
        if self.loop_form == "python" and self.unroll != 1:
            raise bad_value(
                "unroll", self.unroll, "1 for loop_form='python' (a Python loop is fully unrolled)"
            )
        if not applies(self.kernel, self.loop_form):
            raise bad_value(
                "loop_form",
                self.loop_form,
                f"not a hoisting form for kernel={self.kernel!r} (no loop invariant)",
            )
        for name in ("T", "D", "batch", "block_rows", "out_rows"):
            check_int(name, getattr(self, name), minimum=1)
        if self.T % self.block_rows:
            raise bad_value("T", self.T, f"a multiple of block_rows={self.block_rows}")
        if self.kernel in ROW_BLOCK_KERNELS and self.T % self.out_rows:
            raise bad_value(
                "T",
                self.T,
                f"a multiple of out_rows={self.out_rows} (the seed's grid has T / out_rows programs)",
            )
        object.__setattr__(self, "dtype", check_choice("dtype", dtype_name(self.dtype), DTYPES))
        check_choice("carry_dtype", self.carry_dtype, CARRY_DTYPES)
        if self.carry_dtype == "input" and self.kernel == "attention":
            raise bad_value("carry_dtype", self.carry_dtype, "'float32' for kernel='attention'")
        check_choice("tiling", self.tiling, TILINGS)
        if self.tiling != "whole" and self.kernel not in ROW_BLOCK_KERNELS:
            raise bad_value("tiling", self.tiling, f"'whole' for kernel={self.kernel!r} (BlockSpecs already)")

    def replace(self, **changes: Any) -> KernelVariant:
        """The same variant with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    @property
    def name(self) -> str:
        """``"python"`` or ``"<form> u=<unroll>"`` (:func:`~.vocab.variant_name`)."""
        return variant_name(self.loop_form, self.unroll)

    @property
    def steps(self) -> int:
        """The loop's steps: ``T // block_rows``."""
        return self.T // self.block_rows

    @property
    def row_block(self) -> bool:
        """Whether the grid is the reporter's: ``T / out_rows`` row blocks per batch element,
        output ``[batch, T, D]`` (:data:`~.vocab.ROW_BLOCK_KERNELS`)."""
        return self.kernel in ROW_BLOCK_KERNELS

    @property
    def carry(self) -> str:
        """The carry's (and output's) dtype: ``"float32"``, or the input's for ``"input"``."""
        return self.dtype if self.carry_dtype == "input" else "float32"
