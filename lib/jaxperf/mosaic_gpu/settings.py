"""Notebook 09's settings: the Mosaic GPU study of jax#20909, one frozen, typed object.

The full run is sized for about four minutes on a quiet 2-core CPU, most of it the Python loop:
Mosaic GPU's layout inference makes its lowering grow faster than T (about 40 s at T=32768
here) until T=65536 exceeds Python's recursion limit. Field names are the notebook's
parameters; ``QUICK`` is the smoke run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import bad_value, check_choice, check_int, check_ints
from ..jax20909 import mosaic_gpu_rules, vocab
from ..settings import StudySettings

REPORTER_SIZES = tuple(row[0] for row in vocab.SEED_ROWS)
# The forms the compile, the estimate and the mechanism compare: the reporter's two loops first,
# Mosaic GPU's own unroll, the portable hand-unrolled loop, the hoisted sum and the scalar carry.
COMPILE_VARIANTS = ("python", "fori u=1", "fori u=4", "hand_unrolled u=4", "hoisted u=1", "scalar_carry u=1")


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_value(name, value, "a number of seconds > 0")
    return float(value)


@dataclasses.dataclass(frozen=True)
class MosaicGpuSettings(StudySettings):
    """The Mosaic GPU study's parameters.

    Interpret check: ``interpret_variants`` at ``interpret_Ts`` (batch ``interpret_batch``)
    against the float64 reference, within ``interpret_budget_s``. Lowering: every form of
    ``loop_forms`` at every ``unrolls`` (the Python loop once) at every T of ``sizes``
    (batch ``lowering_batch``), within ``lowering_budget_s``; a Python loop predicted over
    ``max_lower_s`` is recorded over budget. Compile (sm_90a, in the compile environment):
    ``compile_variants`` at ``sizes`` with the reporter's ``batch``, ``D``, ``dtype``,
    ``repeats`` fresh compiles (one when the first took over ``repeat_below_s``), within
    ``compile_budget_s``. Mechanism: the compile's dumps at the two ``mechanism_sizes``.
    """

    loop_forms: tuple[str, ...] = vocab.LOOP_FORMS
    unrolls: tuple[int, ...] = (1, 8)
    sizes: tuple[int, ...] = REPORTER_SIZES
    batch: int = 512
    D: int = 64
    dtype: str = "float16"
    carry_dtype: str = "float32"
    interpret_Ts: tuple[int, ...] = (256, 1024)
    interpret_batch: int = 2
    interpret_variants: tuple[str, ...] = (*COMPILE_VARIANTS, "pl_loop u=2")
    interpret_budget_s: float = 90.0
    lowering_batch: int = 4
    lowering_budget_s: float = 330.0
    max_lower_s: float = 150.0
    compile_variants: tuple[str, ...] = COMPILE_VARIANTS
    repeats: int = 2
    repeat_below_s: float = 3.0
    compile_budget_s: float = 330.0
    mechanism_sizes: tuple[int, ...] = (8192, 16384)

    # A smoke run: every code path once, in about a minute on 2 cores. Its summary judges nothing.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "loop_forms": ("python", "fori", "scalar_carry"),
        "unrolls": (1, 2),
        "sizes": (256, 512),
        "interpret_Ts": (256,),
        "interpret_batch": 1,
        "interpret_variants": ("python", "fori u=1"),
        "interpret_budget_s": 60.0,
        "lowering_budget_s": 60.0,
        "compile_variants": ("python", "fori u=1"),
        "repeats": 1,
        "compile_budget_s": 90.0,
        "mechanism_sizes": (256, 512),
    }

    def validate(self) -> None:
        for form in self.loop_forms:
            check_choice("loop_forms[...]", form, vocab.LOOP_FORMS)
        object.__setattr__(self, "unrolls", tuple(check_ints("unrolls", self.unrolls)))
        for name in ("batch", "D", "interpret_batch", "lowering_batch"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("repeats", self.repeats, minimum=1)
        if self.repeats > 5:
            raise bad_value(
                "repeats", self.repeats, "an integer from 1 to 5 (each compile costs a second or more)"
            )
        for name in ("sizes", "interpret_Ts", "mechanism_sizes"):
            Ts = tuple(check_ints(name, getattr(self, name)))
            for T in Ts:
                mosaic_gpu_rules.check(
                    "fori", 1, T=T, D=self.D, dtype=self.dtype, carry_dtype=self.carry_dtype
                )
            object.__setattr__(self, name, Ts)
        if len(set(self.mechanism_sizes)) != 2:
            raise bad_value("mechanism_sizes", self.mechanism_sizes, "two different T, e.g. [8192, 16384]")
        object.__setattr__(self, "mechanism_sizes", tuple(sorted(self.mechanism_sizes)))
        for name, Ts in (("interpret_variants", self.interpret_Ts), ("compile_variants", self.sizes)):
            for variant in getattr(self, name):
                form, unroll = vocab.parse_variant(variant)
                for T in Ts:  # e.g. "fori u=4" needs 4 to divide every T/64 it is compiled at
                    mosaic_gpu_rules.check(form, unroll, T=T, D=self.D, dtype=self.dtype)
        for name in (
            "interpret_budget_s",
            "lowering_budget_s",
            "max_lower_s",
            "repeat_below_s",
            "compile_budget_s",
        ):
            _seconds(name, getattr(self, name))
        missing = [T for T in self.mechanism_sizes if T not in self.sizes]
        if missing:
            raise bad_value(
                "mechanism_sizes",
                self.mechanism_sizes,
                f"T among sizes={list(self.sizes)} (missing {missing})",
            )

    def lowering_plan(self) -> list[tuple[str, int]]:
        """Every (loop form, unroll) lowered, in the study's order (the Python loop once)."""
        return vocab.variants(self.loop_forms, self.unrolls, "seed")

    def compile_plan(self) -> list[tuple[str, int]]:
        return [vocab.parse_variant(v) for v in self.compile_variants]

    def interpret_plan(self) -> list[tuple[str, int]]:
        return [vocab.parse_variant(v) for v in self.interpret_variants]
