"""Notebook 05's settings: which TPU generations, kernels, loop forms and sizes to compile for."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..compilers.mosaic_tpu import topology
from ..errors import bad_value, check_choice, check_int, check_ints
from ..jax20909 import vocab
from ..settings import StudySettings

DTYPES = ("bfloat16", "float32", "float16")


def _check_names(name: str, values: Any, allowed: tuple[str, ...]) -> None:
    if isinstance(values, str) or not values:
        raise bad_value(name, values, "a non-empty list of " + ", ".join(repr(a) for a in allowed))
    for value in values:
        check_choice(f"{name}[...]", value, allowed)


@dataclasses.dataclass(frozen=True)
class TpuSettings(StudySettings):
    """The TPU compile study. Defaults are the full run (at most 5 minutes on a 2-core CPU).

    ``batch`` is the batch compiled for (the estimate is also given at the
    reporter's 512 by scaling the grid loop); ``dtype`` is the input's (the
    reporter's float16 is rejected by Mosaic TPU; bfloat16 is TPU's 16-bit
    float); ``vmem_limit_kib`` raises the scoped VMEM limit (kernels that need
    more than the chip's VMEM still fail, with the error recorded).
    """

    generations: tuple[str, ...] = ("v3", "v4", "v5e", "v6e")
    # data_carry's work per step is notebook 02's (its engine compiles it for Mosaic TPU too)
    kernels: tuple[str, ...] = ("seed", "streaming", "attention")
    loop_forms: tuple[str, ...] = vocab.LOOP_FORMS
    unrolls: tuple[int, ...] = (1, 2, 8)
    sizes: tuple[int, ...] = (256, 1024, 4096, 16384, 65536)
    batch: int = 8
    D: int = 64
    dtype: str = "bfloat16"
    repeats: int = 3
    repeat_below_s: float = 0.3
    max_compile_s: float = 15.0
    max_total_s: float = 210.0
    vmem_limit_kib: int = 98304
    dispatch_generation: str = "v3"
    dispatch_depth: int = 8
    dispatch_steps: tuple[str, ...] = ("noop", "train")

    QUICK: ClassVar[Mapping[str, Any]] = {
        "generations": ("v5e",),
        "kernels": ("seed",),
        "unrolls": (1, 4),
        "sizes": (256, 1024),
        "repeats": 1,
        "max_total_s": 30.0,
        "dispatch_depth": 2,
    }

    def validate(self) -> None:
        for generation in (*self.generations, self.dispatch_generation):
            topology.resolve(generation)
        _check_names("kernels", self.kernels, vocab.KERNELS)
        _check_names("loop_forms", self.loop_forms, vocab.LOOP_FORMS)
        _check_names("dispatch_steps", self.dispatch_steps, ("noop", "train"))
        check_ints("unrolls", self.unrolls)
        for T in check_ints("sizes", self.sizes, minimum=vocab.SEED_PROGRAM_ROWS):
            if T % vocab.SEED_PROGRAM_ROWS:
                raise bad_value(
                    "sizes[...]", T, f"a multiple of {vocab.SEED_PROGRAM_ROWS} (the seed's row block)"
                )
        for name in ("batch", "D", "repeats", "vmem_limit_kib", "dispatch_depth"):
            check_int(name, getattr(self, name))
        check_choice("dtype", self.dtype, DTYPES)
        for name in ("repeat_below_s", "max_compile_s", "max_total_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise bad_value(name, value, "a number of seconds > 0")
