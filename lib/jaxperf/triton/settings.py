"""Notebook 04's settings: one frozen, typed object, with the quick preset in plain sight.

The full run is sized for about three minutes on a quiet 2-core CPU: the reporter's kernel
(``seed``) at the reporter's own T (so every growth compares with his over the same range),
every loop form at unroll 1 and 4 (``scalar_carry``, the fix that closed the gap on XLA:CPU,
at unroll 1 only); every point compiled ``repeats`` times after one discarded warm-up
compile (a process' first compile pays Triton's and ptxas' start-up); a sweep budget
(``budget_s``) after which points are recorded "over budget", not measured. The other kernels'
work per loop step is notebook 02's (its engine); they can be added here by name. Field names
are the notebook's parameters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..compilers.cuda import TARGETS, check_target
from ..errors import bad_value, check_choice, check_int, check_ints
from ..jax20909 import vocab
from ..settings import StudySettings
from .plan import Shape, Variant, check_sizes, plan

REPORTER_SIZES = tuple(row[0] for row in vocab.SEED_ROWS)
CARRY_DTYPES = ("input", "float32")


def _per_kernel(name: str, value: Any, kernels: tuple[str, ...], check: Any) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, Mapping):
        raise bad_value(name, value, "a dict {kernel: [values]}")
    missing = [k for k in kernels if k not in value]
    if missing:
        raise bad_value(
            name, dict(value), f"an entry for every kernel swept, {list(kernels)} (missing {missing})"
        )
    return {k: tuple(check(f"{name}[{k!r}]", v)) for k, v in value.items() if k in kernels}


def _seconds(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_value(name, value, "a number of seconds > 0")


@dataclasses.dataclass(frozen=True)
class TritonSettings(StudySettings):
    """The Triton compile study's parameters.

    ``sizes``/``unrolls`` are per kernel. The sweep compiles for ``target``;
    the static estimate for every ``estimate_targets`` (sm_86 is the reporter's
    A6000 generation) at ``estimate_sizes``, with ``hand_unrolled`` at
    ``estimate_unroll`` (reusing the sweep's compiles for ``target``; the rest within
    ``estimate_budget_s``); the mechanism at the two ``mechanism_sizes``. The forms in
    ``unroll_one_forms`` are compiled at unroll 1 only (``scalar_carry``: the fix is a plain
    ``fori_loop(unroll=1)`` over one scalar; ptxas unrolls that loop itself on sm_90).
    ``seed_carry_dtype="input"`` keeps the reporter's fp16 carry (nothing runs,
    so its overflow at large T does not matter). A point is compiled ``repeats`` times when its
    first compile took under ``repeat_below_s`` (once otherwise), after one warm-up compile.
    """

    target: str = "sm_90"
    kernels: tuple[str, ...] = ("seed",)
    loop_forms: tuple[str, ...] = vocab.LOOP_FORMS
    unroll_one_forms: tuple[str, ...] = ("scalar_carry",)
    sizes: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=lambda: {"seed": REPORTER_SIZES})
    unrolls: Mapping[str, tuple[int, ...]] = dataclasses.field(default_factory=lambda: {"seed": (1, 4)})
    repeats: int = 3
    repeat_below_s: float = 2.0
    max_compile_s: float = 30.0
    budget_s: float = 180.0
    estimate_budget_s: float = 60.0
    estimate_targets: tuple[str, ...] = ("sm_86", "sm_90")
    estimate_sizes: tuple[int, ...] = REPORTER_SIZES
    estimate_unroll: int = 4
    mechanism_sizes: tuple[int, ...] = (8192, 16384)
    seed_carry_dtype: str = "input"

    # A smoke run: every code path once, in under a minute on 2 cores. Its summary judges nothing.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "sizes": {"seed": (256, 2048)},
        "unrolls": {"seed": (1, 2)},
        "repeats": 1,
        "budget_s": 40.0,
        "estimate_budget_s": 30.0,
        "estimate_sizes": (256, 2048),  # sm_90 reuses the sweep's compiles: only sm_86 compiles
    }

    def validate(self) -> None:
        check_target(self.target)
        for name in ("kernels", "loop_forms", "estimate_targets"):
            value = getattr(self, name)
            if isinstance(value, str) or not value:
                raise bad_value(name, value, "a non-empty list")
        for kernel in self.kernels:
            check_choice("kernels[...]", kernel, vocab.KERNELS)
        for form in self.loop_forms:
            check_choice("loop_forms[...]", form, vocab.LOOP_FORMS)
        if isinstance(self.unroll_one_forms, str):
            raise bad_value("unroll_one_forms", self.unroll_one_forms, "a list of loop forms (may be empty)")
        for form in self.unroll_one_forms:
            check_choice("unroll_one_forms[...]", form, vocab.UNROLLED_FORMS)
        for target in self.estimate_targets:
            check_choice("estimate_targets[...]", target, TARGETS)
        object.__setattr__(self, "sizes", _per_kernel("sizes", self.sizes, self.kernels, check_sizes))
        object.__setattr__(self, "unrolls", _per_kernel("unrolls", self.unrolls, self.kernels, check_ints))
        check_int("repeats", self.repeats, minimum=1)
        if self.repeats > 5:
            raise bad_value("repeats", self.repeats, "an integer from 1 to 5 (each compile costs seconds)")
        for name in ("repeat_below_s", "max_compile_s", "budget_s", "estimate_budget_s"):
            _seconds(name, getattr(self, name))
        check_sizes("estimate_sizes", self.estimate_sizes)
        check_int("estimate_unroll", self.estimate_unroll, minimum=1)
        mech = check_sizes("mechanism_sizes", self.mechanism_sizes)
        if len(mech) != 2:
            raise bad_value("mechanism_sizes", self.mechanism_sizes, "two different T, e.g. [8192, 16384]")
        check_choice("seed_carry_dtype", self.seed_carry_dtype, CARRY_DTYPES)

    @property
    def shape(self) -> Shape:
        """The reporter's sizes (B=512, D=64, fp16), with this run's seed carry dtype."""
        return Shape(seed_carry_dtype=self.seed_carry_dtype)

    def plan(self) -> list[Variant]:
        """Every (kernel, loop form, unroll) the sweep compiles, the reporter's kernel first."""
        return plan(self.kernels, self.loop_forms, self.unrolls, self.unroll_one_forms)

    def points(self) -> int:
        """(variant, T) points of the sweep, for a progress bar."""
        return sum(len(self.sizes[v.kernel]) for v in self.plan())

    def estimate_plan(self) -> list[Variant]:
        """The forms the static estimate compares, on the reporter's kernel: the reporter's two
        loops, the portable unroll, the hoisted sum and the scalar carry (the XLA:CPU fix)."""
        forms = [
            ("python", 1),
            ("fori", 1),
            ("hand_unrolled", self.estimate_unroll),
            ("hoisted", 1),
            ("scalar_carry", 1),
        ]
        return [Variant("seed", f, u) for f, u in forms if f in self.loop_forms]

    def mechanism_plan(self) -> list[Variant]:
        """The forms the mechanism reads, on the reporter's kernel."""
        return self.estimate_plan()
