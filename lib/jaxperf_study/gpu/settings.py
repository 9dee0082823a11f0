"""What one device call runs: the parts, their sizes, and each part's time budget.

One device call lasts at most 8 minutes (issue 15), so each part has its own budget
(``budgets``, seconds): a part stops starting points predicted to overrun it and records
them as "not measured"; ``tools/device/run_gpu.sh`` kills a part that overruns by more
than a grace period. ``QUICK`` is the dry run: every part at tiny sizes on a CPU.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from jaxperf.errors import bad_value, check_choice, check_int, check_ints

from ..jax20909 import mosaic_gpu_rules, vocab
from ..jax20909.variant import KernelVariant
from ..settings import StudySettings

# Run order: the reporter's own harness first (the seed-format GPU column), then his kernel
# in the loop sweep (Pallas' default, Triton), the same kernel written for Mosaic GPU (Hopper's
# Pallas backend), dispatch, and attention last. (Compiles need no GPU: notebook 02 makes them.)
PARTS = ("harness", "loops_seed", "loops_mosaic_gpu", "dispatch", "loops_attention")
# The reporter's T in the order a part measures them: the extremes first (his largest T
# holds the widest fori/Python gap), so that a budget cut loses a middle T.
REPORTER_TS_ORDER = (256, 65536, 8192, 2048, 32768, 16384)


@dataclasses.dataclass(frozen=True)
class GpuSettings(StudySettings):
    """The device run's parameters (the full run on a GPU; ``quick`` = the CPU dry run).

    Every list of T is measured in its order (the extremes first). Loop sweep (part a):
    ``seed_Ts``/``attention_Ts`` at ``batch`` x T x ``D`` in
    ``dtype``, forms ``loop_forms`` at ``unrolls`` (those in ``unroll_one_forms``, the
    scalar carry that closed the gap on XLA:CPU, at unroll 1 only), ``repeats`` timed batches,
    ``compile_repeats`` fresh compiles; attention's Python loop only up to
    ``attention_python_max_steps`` steps. Harness (part b): the reporter's
    ``heavyweight`` over ``harness_N`` batches at ``harness_Ts``.
    Dispatch (part c): a diagnosis of the seed's step, then notebook 01's cells (every path of
    ``eqx.filter_pmap`` and ``eqx.filter_jit``) on MLPs of ``mlp_depths`` (and
    ``transformer_layers``) for ``dispatch_steps``, each timed for up to
    ``dispatch_seconds_per_cell``. Mosaic GPU
    (part d): the reporter's kernel written for Mosaic GPU (``mosaic_gpu_variants``: his two
    loops, the scalar carry and ``hoisted u=1``, the portable form a static estimate put
    closest to the Python loop) at ``mosaic_gpu_Ts``, its Python loop only up to
    ``mosaic_gpu_python_max_steps`` steps (its lowering grows faster than T, and 1024 steps
    exceed Python's recursion limit in Mosaic GPU's layout inference).
    """

    backend: str = "gpu"
    host_devices: int = 1
    batch: int = 512  # the reporter's sizes (vocab.SEED_SIZES)
    D: int = 64
    dtype: str = "float16"
    loop_forms: tuple[str, ...] = ("python", "fori", "hand_unrolled", "hoisted", "scalar_carry")
    unroll_one_forms: tuple[str, ...] = ("scalar_carry",)
    unrolls: tuple[int, ...] = (1, 2, 4, 8, 16)
    seed_Ts: tuple[int, ...] = REPORTER_TS_ORDER
    attention_Ts: tuple[int, ...] = (256, 16384, 2048, 8192)
    attention_python_max_steps: int = 256
    repeats: int = 5
    compile_repeats: int = 2
    bandwidth_megabytes: int = 2048
    harness_Ts: tuple[int, ...] = REPORTER_TS_ORDER
    harness_N: int = vocab.SEED_N
    harness_repeats: int = 3
    # The reporter's two loops first, then the fix that closed the gap on XLA:CPU.
    harness_variants: tuple[str, ...] = (
        "python",
        "fori u=1",
        "scalar_carry u=1",
        "hoisted u=1",
        "hand_unrolled u=8",
    )
    mosaic_gpu_variants: tuple[str, ...] = ("python", "fori u=1", "scalar_carry u=1", "hoisted u=1")
    mosaic_gpu_Ts: tuple[int, ...] = REPORTER_TS_ORDER
    mosaic_gpu_python_max_steps: int = 128
    mlp_depths: tuple[int, ...] = (1, 64, 16, 4)
    transformer_layers: tuple[int, ...] = (2,)
    dispatch_steps: tuple[str, ...] = ("noop", "train")
    dispatch_seconds_per_cell: int = 4
    budgets: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {
            "harness": 80,
            "loops_seed": 100,
            "loops_mosaic_gpu": 50,
            "dispatch": 50,
            "loops_attention": 40,
        }
    )

    # The dry run: every part and code path once, at tiny sizes, on a CPU.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "backend": "cpu",
        "batch": 1,
        "unrolls": (1, 2),
        "seed_Ts": (128,),
        "attention_Ts": (128,),
        "repeats": 2,
        "compile_repeats": 1,
        "bandwidth_megabytes": 8,
        "harness_Ts": (128,),
        "harness_N": 2,
        "harness_repeats": 1,
        "harness_variants": ("python", "fori u=1", "scalar_carry u=1"),
        "mosaic_gpu_Ts": (128,),
        "mlp_depths": (1,),
        "transformer_layers": (),
        "dispatch_steps": ("noop",),
        "dispatch_seconds_per_cell": 1,
        "budgets": {part: 60 for part in PARTS},
    }

    def validate(self) -> None:
        positive = "batch D repeats compile_repeats bandwidth_megabytes harness_N harness_repeats "
        positive += "dispatch_seconds_per_cell attention_python_max_steps mosaic_gpu_python_max_steps"
        for name in positive.split():
            check_int(name, getattr(self, name), minimum=1)
        for T in check_ints("mosaic_gpu_Ts", self.mosaic_gpu_Ts):
            if T % vocab.SEED_PROGRAM_ROWS:
                raise bad_value(
                    "mosaic_gpu_Ts[...]", T, f"a multiple of {vocab.SEED_PROGRAM_ROWS} (a program's block)"
                )
            for variant in self.mosaic_gpu_variants:
                form, unroll = vocab.parse_variant(variant)
                port = KernelVariant("seed", form, unroll, T=T, D=self.D, batch=self.batch, dtype=self.dtype)
                mosaic_gpu_rules.check(port)
        for name in ("unrolls", "seed_Ts", "attention_Ts", "harness_Ts", "mlp_depths"):
            check_ints(name, getattr(self, name))
        if self.transformer_layers:
            check_ints("transformer_layers", self.transformer_layers)
        for form in self.loop_forms:
            check_choice("loop_forms[...]", form, vocab.LOOP_FORMS)
        for form in self.unroll_one_forms:
            check_choice("unroll_one_forms[...]", form, vocab.UNROLLED_FORMS)
        for variant in self.harness_variants:
            vocab.parse_variant(variant)
        for step in self.dispatch_steps:
            check_choice("dispatch_steps[...]", step, ("noop", "train"))
        if not isinstance(self.budgets, Mapping) or set(self.budgets) != set(PARTS):
            raise bad_value("budgets", self.budgets, f"a dict of seconds for exactly the parts {PARTS}")
        for part, seconds in self.budgets.items():
            check_int(f"budgets[{part!r}]", seconds, minimum=5)

    @property
    def mode(self) -> str:
        """The loop study's mode: the compiled kernel on a GPU, the interpreter in the dry run."""
        return "pallas" if self.backend == "gpu" else "pallas_interpret"

    def total_budget_s(self) -> int:
        return int(sum(self.budgets.values()))
