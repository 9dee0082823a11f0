"""Notebook 02's settings: one frozen, typed object, with the quick preset in plain sight.

The full run is sized for about five minutes on a 2-core CPU (XLA:CPU T up to
16384 for the reporter's kernel; the Python loops of the step-dependent
kernels capped by ``python_max_steps``, since their compile grows fastest).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import bad_value, check_choice, check_int, check_ints
from ..jax20909.vocab import (
    DTYPES,
    KERNELS,
    LOOP_FORMS,
    SEED_N,
    SEED_PROGRAM_ROWS,
    SEED_STEP_ROWS,
    parse_variant,
)
from ..settings import StudySettings

DEFAULT_DTYPE = {
    "cpu": "float16",
    "gpu": "float16",
    "tpu": "bfloat16",
}  # the reporter's fp16 (no fp16 on TPU)
TS_FIELDS = ("xla_Ts", "interpret_Ts", "device_Ts", "lowering_Ts", "harness_Ts")


def _steps_map(name: str, value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise bad_value(name, value, "a dict {kernel: steps}")
    for kernel, steps in value.items():
        check_choice(f"{name} key", kernel, KERNELS)
        check_int(f"{name}[{kernel!r}]", steps, minimum=1)
    return dict(value)


@dataclasses.dataclass(frozen=True)
class LoopSettings(StudySettings):
    """The jax#20909 loop study's parameters (field names = notebook 02's parameter names).

    ``loop_forms`` are lowered in the lowering matrix, ``timed_loop_forms``
    timed; ``xla_Ts`` time plain jit, ``interpret_Ts`` Pallas interpret mode,
    ``device_Ts`` a compiled kernel on a GPU/TPU, ``harness_Ts`` the
    reporter's own harness (``harness_N`` scanned batches of
    ``harness_batch``; ``harness_variants`` by name), ``mechanism_T`` the
    size whose optimized HLO is read, ``bandwidth_megabytes`` the copy that
    measures memory bandwidth. ``dtype="auto"`` picks the reporter's fp16 (bf16 on
    TPU). Python loops of more steps than ``python_max_steps[kernel]``
    (``device_python_max_steps`` on a GPU/TPU) are reported as not measured.
    """

    kernels: tuple[str, ...] = KERNELS
    loop_forms: tuple[str, ...] = LOOP_FORMS
    timed_loop_forms: tuple[str, ...] = ("python", "fori", "hand_unrolled", "hoisted", "scalar_carry")
    unrolls: tuple[int, ...] = (1, 2, 4, 8, 16)
    xla_Ts: tuple[int, ...] = (256, 2048, 8192, 16384)
    interpret_Ts: tuple[int, ...] = (256, 1024)
    device_Ts: tuple[int, ...] = (256, 2048, 8192, 16384, 32768, 65536)
    lowering_Ts: tuple[int, ...] = (256, 1024, 4096)
    harness_Ts: tuple[int, ...] = (256, 2048, 8192, 16384)
    D: int = 64
    cpu_batch: int = 8
    interpret_batch: int = 2
    device_batch: int = 512
    harness_batch: int = 8
    harness_N: int = SEED_N
    harness_variants: tuple[str, ...] = (
        "python",
        "fori u=1",
        "hoisted u=1",
        "hand_unrolled u=8",
        "scalar_carry u=1",
    )
    mechanism_T: int = 1024
    bandwidth_megabytes: int = 256
    dtype: str = "auto"
    block_rows: int = SEED_STEP_ROWS
    out_rows: int = SEED_PROGRAM_ROWS
    python_max_steps: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {"streaming": 64, "attention": 16}
    )
    device_python_max_steps: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"attention": 256})
    repeats: int = 5
    compile_repeats: int = 3

    # A smoke run: every code path once, in about a minute on 2 cores. Its summary judges no goal.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "xla_Ts": (256, 1024),
        "interpret_Ts": (256,),
        "device_Ts": (256, 2048),
        "lowering_Ts": (256,),
        "harness_Ts": (256, 1024),
        "unrolls": (1, 4),
        "repeats": 3,
        "compile_repeats": 1,
        "bandwidth_megabytes": 64,
    }

    def validate(self) -> None:
        for name in ("kernels", "loop_forms", "timed_loop_forms"):
            values, allowed = getattr(self, name), KERNELS if name == "kernels" else LOOP_FORMS
            if isinstance(values, str) or not values:
                raise bad_value(name, values, f"a non-empty list of {allowed}")
            for value in values:
                check_choice(f"{name}[...]", value, allowed)
        check_ints("unrolls", self.unrolls)
        for variant in self.harness_variants:
            parse_variant(variant)
        for name in (
            "D",
            "cpu_batch",
            "interpret_batch",
            "device_batch",
            "harness_batch",
            "harness_N",
            "bandwidth_megabytes",
        ):
            check_int(name, getattr(self, name), minimum=1)
        for name in ("block_rows", "out_rows", "repeats", "compile_repeats"):
            check_int(name, getattr(self, name), minimum=1)
        multiple = math.lcm(self.block_rows, self.out_rows)
        for name in (*TS_FIELDS, "mechanism_T"):
            value = getattr(self, name)
            for T in check_ints(name, [value] if isinstance(value, int) else value):
                if T % multiple:
                    raise bad_value(f"{name}[...]", T, f"a multiple of block_rows and out_rows ({multiple})")
        if self.dtype != "auto":
            check_choice("dtype", self.dtype, DTYPES)
        for name in ("python_max_steps", "device_python_max_steps"):
            object.__setattr__(self, name, _steps_map(name, getattr(self, name)))

    def resolved_dtype(self, backend: str) -> str:
        """``dtype``, with ``"auto"`` resolved for ``backend``."""
        return (
            DEFAULT_DTYPE[check_choice("backend", backend, tuple(DEFAULT_DTYPE))]
            if self.dtype == "auto"
            else self.dtype
        )
