"""What the Triton compile study sweeps: its variants, the kernel's shape, the checked sizes.

Standard library only, so that :class:`~jaxperf.triton.settings.TritonSettings` can be checked
before any environment exists; :mod:`.sweep` compiles the plan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import bad_value, check_ints
from ..jax20909 import vocab


@dataclass(frozen=True)
class Variant:
    kernel: str
    loop_form: str
    unroll: int

    @property
    def name(self) -> str:
        return vocab.variant_name(self.loop_form, self.unroll)


@dataclass(frozen=True)
class Shape:
    """Kernel sizes: the reporter's (fp16 input, D=64, B=512, 64-row steps, 128-row programs).

    ``seed_carry_dtype="input"`` keeps the reporter's fp16 carry in the ``seed`` kernel
    (nothing runs, so its overflow at large T does not matter here); ``streaming`` and
    ``attention`` carry float32.
    """

    D: int = 64
    batch: int = 512
    dtype: str = "float16"
    block_rows: int = vocab.SEED_STEP_ROWS
    seed_carry_dtype: str = "input"


def plan(
    kernels: Iterable[str],
    loop_forms: Iterable[str],
    unrolls: Mapping[str, Sequence[int]],
    unroll_one: Collection[str] = (),
) -> list[Variant]:
    """Every applicable (kernel, loop form, unroll); the Python loop once, and the forms in
    ``unroll_one`` at unroll 1 only. ``fori``/``pl_loop`` with unroll > 1 stay in the plan:
    the sweep records that they do not lower."""
    forms = list(loop_forms)
    out = []
    for kernel in kernels:
        if kernel not in vocab.KERNELS:
            raise bad_value("kernels[...]", kernel, f"one of {vocab.KERNELS}")
        each = sorted(set(check_ints("unrolls", unrolls[kernel])))
        for form in forms:
            pairs = vocab.variants([form], [1] if form in unroll_one else each, kernel)
            out += [Variant(kernel, f, u) for f, u in pairs]
    return out


def check_sizes(name: str, sizes: Any, multiple: int = vocab.SEED_PROGRAM_ROWS) -> list[int]:
    """Sorted distinct T, each a multiple of ``multiple`` (the seed's 128-row programs)."""
    checked = check_ints(name, sizes, minimum=multiple)
    for T in checked:
        if T % multiple:
            raise bad_value(f"{name}[...]", T, f"a multiple of {multiple}")
    return sorted(set(checked))
