"""Notebook 02's settings: one frozen, typed object, with the quick preset in plain sight.

The full run is sized for about seven minutes on a quiet 2-core CPU: XLA:CPU T up to 16384 for
the reporter's kernel (the Python loops of the step-dependent kernels capped by
``python_max_steps``, since their compile grows fastest), the interpreter at small T, the
reporter's harness to T=8192, and the engine (:mod:`jaxperf.loops.engine`) compiling each
kernel of the family at two T per compiler present, then the reader's ``kernel``.

On a lent GPU or TPU, :attr:`LoopSettings.DEVICE_PRESETS` replaces the sizes (shown beside
``QUICK``): the compiled kernel is timed at the reporter's T, ``scan_N`` calls per timed call.

**The TPU run's budget** (one command of at most 9 minutes on a TPU v5e, 13 host cores). Measured
there at 2b842c2: opening the chip took 7-9 s per process, a kernel compile 0.2-1 s, his harness's
compile about 16 s; the measuring processes took 322 s (``quoted`` in 3 processes 180 s, ``rest``
142 s), and with 75 s per ``quoted`` process the first one did not reach T=8192, 16384 and 32768.
So ``quoted`` runs in 2 processes of up to 110 s each (the second loads the first's compiles from the
run's persistent cache), ``rest`` in one of up to 170 s; a notebook run twice (two commands,
tools/device/unpack.sh merges them) gives 4 processes: 15 s (papermill, the notebook) + 12 s (the
chip described) + 2 x (12 + 110) + (12 + 170) + 25 s (analysis, figures) = 478 s at most, inside
the 540 s tools/device/run.sh leaves. ``quoted_budget_s`` and ``rest_budget_s`` stop a process's
points predicted to overrun ("not reached"; the T come extremes first, so a cut loses a middle T).

**The GPU pass's budget** (an H200 window: 15 device-minutes, at most 10 a command; notebook 02 and
the loops tool on the seed kernel share one command with about 5, :meth:`LoopSettings.planned_seconds`;
no GPU has run it yet: each cost is a bound read from a record, the constants below). Quoted, in one
process of up to 60 s: his kernel as he wrote it (the ``gpu`` preset) in his harness at his six T, the
Python loop and ``fori_loop``, each checked and compiled (Triton, up to 3.9 s) with 2 x 16 calls at his
A6000's ms, 56 s. The rest, in one process of up to 125 s: the seed's static counts (15 s), the sweep of
his form at his six T (``fori u>1``, which Triton's lowering refuses, as rows) compiled once and timed
call by call (``scan_N=0``: his 0.3 ms call is many dispatches) in 1 + 6 rounds (90 s), the Mosaic GPU
port at T=2048 and 16384 (15 s). So 15 s (papermill, the notebook) + (12 + 56) + (12 + 2 + 15 + 90 + 15)
+ 25 s (analysis, figures) for the notebook, and
12 + 40 s for ``python -m jaxperf loops jaxperf_study.jax20909.factories:seed --T 2048,8192 --budget
40`` = 294 s.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from jaxperf.errors import bad_value, check_choice, check_int, check_ints

from ..settings import StudySettings
from . import vocab
from .vocab import (
    CARRY_DTYPES,
    DTYPES,
    FIX,
    KERNELS,
    LOOP_FORMS,
    SEED_N,
    SEED_PROGRAM_ROWS,
    SEED_STEP_ROWS,
    parse_variant,
)

DEFAULT_DTYPE = {
    "cpu": "float16",
    "gpu": "float16",
    "tpu": vocab.TPU_DTYPE,
}  # the reporter's fp16 (v5e: float32)
TS_FIELDS = ("xla_Ts", "interpret_Ts", "device_Ts", "harness_Ts", "compile_Ts", "mosaic_gpu_Ts")
OPTIONAL_TS = ("xla_Ts", "harness_Ts", "compile_Ts", "mosaic_gpu_Ts")  # empty: that part is not run
#: The compilers the engine reads (jaxperf.loops.targets.TARGETS, named here without importing it).
TARGETS = ("triton sm_86", "triton sm_90", "mosaic_gpu sm_90a", "mosaic_tpu v5e")
#: The reader's kernels shown by default: two written the way Pallas' docs write them.
EXAMPLES = ("jaxperf.loops.examples.matmul:make", "jaxperf.loops.examples.flash_attention:make")


REPORTER_TS = (256, 65536, 2048, 8192, 32768, 16384)  # his table's T, extremes first (a cut loses a middle T)
PORT_PYTHON_STEPS = (
    128  # the Mosaic GPU port's Python loop: longer ones lower for minutes, 1024 steps not at all
)
_SWEEP = ("python", "fori u=1", "fori u=2", "fori u=4", "fori u=8", "fori u=16")  # the unroll sweep
#: what both devices' presets replace: the compiled kernel at his T, 3 variants quoted, no plain jit
_DEVICE = {
    "device_Ts": REPORTER_TS,
    "quoted_variants": ("python", "fori u=1", "scalar_carry u=1"),
    **dict(repeats=2, rest_repeats=3, scan_N=SEED_N, xla_Ts=(), kernel="", compile_Ts=()),
}


# Costs on a GPU, each a bound read from a committed record (tests/test_device_budget.py holds them to it).
#: Seconds to build, lower and compile the reporter's kernel at T, (Python loop, any other form), for
#: Triton sm_90 and for the Mosaic GPU port (sm_90a): results/cpu/loops/compiles.csv and
#: family_points.csv, this 2-core CPU (export, then ttir -> cubin or XLA:GPU; the H200's host has 16
#: cores); a form they lack (hand_unrolled u=8) took up to 0.6 s in the dry run (jax 0.11.2, triton 3.6.0).
COMPILE_S = {
    "triton": {256: (0.3, 0.7), 2048: (0.6, 0.7), 8192: (1.0, 0.7), 16384: (1.2, 0.7)}
    | {32768: (2.2, 0.7), 65536: (3.9, 0.7)},
    "mosaic_gpu": {256: (0.8, 1.1), 2048: (1.0, 1.1), 8192: (2.4, 1.1), 16384: (5.3, 1.1)},
}
#: XLA's own compile of a program around one kernel: the port's whole deviceless XLA:GPU compile at
#: T=256 took 0.57-0.67 s, its kernel's included (compiles.csv)
XLA_S = 0.7
#: a form checked in Pallas' interpreter: the TPU's loops run checked 4 forms at T=1024 in under 3 s
#: (results/tpu/logs/run-20261206T123456Z-1c7c72b8.log)
CHECK_S = 1.0
#: a measuring process's start (JAX and the device), papermill with the notebook, the analysis and
#: figures: the TPU run's (module docstring; measured there at 2b842c2); the bandwidth copy, assumed
START_S, PAPERMILL_S, ANALYSIS_S, BANDWIDTH_S = 12.0, 15.0, 25.0, 2.0
#: ms per kernel call: the reporter's A6000 (vocab.SEED_ROWS; an H200 exceeds it in every resource
#: his kernel uses), every form but the Python loop at his fori_loop's, the port at his kernel's
GPU_MS = {row[0]: (row[2], row[4]) for row in vocab.SEED_ROWS}
#: the loops tool on the seed kernel in a GPU pass, an --exec of notebook 02's command:
#: python -m jaxperf loops jaxperf_study.jax20909.factories:seed --T 2048,8192 --budget 40 (the engine
#: stops at its budget, JAX's start counted; its forms are the command's default)
GPU_LOOPS_TS, GPU_LOOPS_FORMS, GPU_LOOPS_BUDGET_S = (
    (2048, 8192),
    ("python", "fori", "fori u=4", "hand_unrolled u=4"),
    40.0,
)


def triton_refuses(variant: str) -> bool:
    """Whether Pallas' Triton lowering refuses ``variant``: ``fori_loop(unroll>1)`` raises a bare
    NotImplementedError (jax/_src/pallas/triton/lowering.py, ``_scan_lowering_rule``)."""
    form, _, unroll = variant.partition(" u=")
    return form in ("fori", "pl_loop") and int(unroll or 1) > 1


def _family_Ts(value: Any, kernels: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, Mapping):
        raise bad_value("family_Ts", value, "a dict {kernel: [T, T, ...]}")
    missing = [k for k in kernels if k not in value]
    if missing:
        raise bad_value(
            "family_Ts", dict(value), f"two T or more for every kernel in {list(kernels)} (missing {missing})"
        )
    out = {}
    for kernel in kernels:
        Ts = tuple(sorted(set(check_ints(f"family_Ts[{kernel!r}]", value[kernel]))))
        if len(Ts) < 2:
            raise bad_value(
                f"family_Ts[{kernel!r}]", list(value[kernel]), "two T or more (work per step is a difference)"
            )
        out[kernel] = Ts
    return out


def _forms(name: str, forms: Any) -> None:
    if (
        isinstance(forms, str)
        or not forms
        or not ({"fori", "fori u=1"} & set(forms))
        or "python" not in forms
    ):
        raise bad_value(
            name,
            forms,
            "a list of loop forms holding 'python' and 'fori', e.g. ['python', 'fori', 'fori u=4']",
        )
    for form in forms:
        base, sep, unroll = str(form).partition(" u=")
        if base not in LOOP_FORMS or (sep and not unroll.isdigit()):
            raise bad_value(
                f"{name}[...]", form, f"a loop form ({', '.join(LOOP_FORMS)}) with an optional ' u=<k>'"
            )


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

    ``timed_loop_forms`` are timed; ``xla_Ts`` time plain jit, ``interpret_Ts`` Pallas interpret mode,
    ``device_Ts`` a compiled kernel on a GPU/TPU, ``harness_Ts`` the reporter's own harness
    (``harness_N`` scanned batches of ``harness_batch``; ``harness_variants`` by name;
    ``harness_repeats`` calls after his two), ``family_Ts`` the two T (or more) the engine compiles
    each kernel at in ``family_forms`` (the reporter's kernel also in ``fix_forms``, the advice's
    candidates), ``kernel`` the readers' factories (``"package.module:factory"``) it then runs in
    ``kernel_forms`` at ``kernel_Ts``, every form checked against fori at ``check_T`` (the smallest
    T where that is larger) and compiled for ``targets`` (the readers' kernels for
    ``kernel_targets``: a Python loop of matrix products compiles for seconds per target),
    ``mechanism_T`` the size whose optimized HLO is read, ``bandwidth_megabytes`` the copy that
    measures memory bandwidth. ``dtype="auto"`` picks the reporter's fp16 (float32 on a TPU).
    Python loops of more steps than ``python_max_steps[kernel]`` (``device_python_max_steps`` on a
    GPU/TPU) are reported as not measured. The timed steps run ``repeats`` (``harness_repeats``)
    rounds in each of ``processes`` processes. ``compile_Ts`` are the reporter's T, where the engine
    compiles his kernel in ``compile_forms`` for ``compile_targets`` (within ``compile_budget_s``).

    On a GPU or TPU the reporter's kernel is timed compiled at ``device_Ts`` in ``device_variants``
    (every timed form x unroll when empty), batch ``device_batches[T]`` (else ``device_batch``);
    ``quoted_variants`` (all when empty) in ``processes`` fresh processes, the rest in one in
    ``rest_repeats`` rounds (``repeats x processes`` when 0); ``mosaic_gpu_Ts`` the Mosaic GPU port
    too (Hopper). ``scan_N`` > 0 times ``scan_N`` calls at a time in one jitted scan
    (:func:`jaxperf.timing.amortised`). ``quoted_budget_s``/``rest_budget_s`` (0: none) stop each
    process's points predicted to end past them ("not reached"). ``carry_dtype`` is the compiled
    kernel's and his harness's carry (``"input"``: his float16, overflowing from T=32768 as his did);
    ``quoted_in="harness"`` quotes his harness alone and times the whole sweep in the rest.
    """

    kernels: tuple[str, ...] = KERNELS
    timed_loop_forms: tuple[str, ...] = ("python", "fori", "hand_unrolled", "scalar_carry")
    unrolls: tuple[int, ...] = (1, 8)
    xla_Ts: tuple[int, ...] = (256, 2048, 8192, 16384)
    interpret_Ts: tuple[int, ...] = (256, 1024)
    device_Ts: tuple[int, ...] = (256, 2048, 8192, 16384, 32768, 65536)
    harness_Ts: tuple[int, ...] = (256, 2048, 8192)
    D: int = 64
    cpu_batch: int = 8
    interpret_batch: int = 2
    device_batch: int = 512
    harness_batch: int = 8
    harness_N: int = SEED_N
    harness_variants: tuple[str, ...] = ("python", "fori u=1", "scalar_carry u=1")
    harness_repeats: int = 1
    family_Ts: Mapping[str, tuple[int, ...]] = dataclasses.field(
        default_factory=lambda: {
            "seed": (4096, 8192),
            "data_carry": (2048, 4096),
            "streaming": (1024, 2048),
            "attention": (512, 1024),
        }
    )
    family_forms: tuple[str, ...] = ("python", "fori")
    fix_forms: tuple[str, ...] = ("python", "fori", "fori u=4", "hand_unrolled u=4", "scalar_carry u=1")
    kernel: str = ",".join(EXAMPLES)
    kernel_Ts: tuple[int, ...] = (512, 1024)
    kernel_forms: tuple[str, ...] = ("python", "fori", "fori u=4", "hand_unrolled u=4")
    check_T: int = 512
    targets: tuple[str, ...] = TARGETS
    kernel_targets: tuple[str, ...] = ("triton sm_90", "mosaic_tpu v5e")
    mechanism_T: int = 1024
    bandwidth_megabytes: int = 256
    dtype: str = "auto"
    block_rows: int = SEED_STEP_ROWS
    out_rows: int = SEED_PROGRAM_ROWS
    python_max_steps: Mapping[str, int] = dataclasses.field(
        default_factory=lambda: {"data_carry": 128, "streaming": 64, "attention": 16}
    )
    device_python_max_steps: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"attention": 256})
    repeats: int = 2
    compile_repeats: int = 1
    processes: int = 3
    compile_Ts: tuple[int, ...] = (256, 2048, 8192, 16384, 32768, 65536)
    compile_forms: tuple[str, ...] = ("python", "fori", "scalar_carry u=1")
    compile_targets: tuple[str, ...] = ("triton sm_90", "mosaic_gpu sm_90a", "mosaic_tpu v5e")
    compile_budget_s: int = 240
    device_batches: Mapping[int, int] = dataclasses.field(default_factory=dict)
    device_variants: tuple[str, ...] = ()
    quoted_variants: tuple[str, ...] = ()
    rest_repeats: int = 0
    mosaic_gpu_Ts: tuple[int, ...] = ()
    mosaic_gpu_variants: tuple[str, ...] = ("python", "fori u=1", "scalar_carry u=1", "hoisted u=1")
    scan_N: int = 0
    quoted_budget_s: int = 0
    rest_budget_s: int = 0
    carry_dtype: str = "float32"
    quoted_in: str = "sweep"

    # A lent device's sizes (tools/device/run.sh; the TPU's budget in the module docstring).
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "tpu": _DEVICE
        | {
            "device_batches": {T: vocab.tpu_batch(T) for T in REPORTER_TS},
            "device_variants": (*_SWEEP, "hand_unrolled u=8", "hoisted u=1", "scalar_carry u=1"),
            "harness_Ts": (2048,),
            "harness_variants": ("python", "fori u=1"),
            # the reporter's at the sweep's T (its static counts beside its times), and 512: a close pair
            # for a count per step (from T=256 to 2048, T squared predicted 26 s with 22 s left at
            # e970208, so no count was read; it compiled in under a second)
            "family_Ts": {"seed": (256, 512, 2048, 8192, 65536), "data_carry": (1024, 8192, 65536)}
            | {"streaming": (1024, 4096, 16384), "attention": (512, 1024, 2048)},
            "family_forms": ("python", "fori", "fori u=8"),
            "fix_forms": ("python", "fori", "fori u=8", "hand_unrolled u=8", "scalar_carry u=1"),
            "device_python_max_steps": {"attention": 32},
            "targets": ("mosaic_tpu v5e",),
            "processes": 2,
            "quoted_budget_s": 110,
            "rest_budget_s": 170,
        },
        "gpu": _DEVICE  # his kernel as he wrote it, on Triton (a GPU's default); the budget in the module docstring
        | {
            "carry_dtype": "input",  # his float16 carry and output
            "quoted_in": "harness",  # his harness first: his T, his forms, his batch, his two calls
            **dict(harness_Ts=REPORTER_TS, harness_variants=("python", "fori u=1"), harness_repeats=0),
            "device_variants": (*_SWEEP, "hand_unrolled u=4", "hand_unrolled u=8", "hoisted u=1", FIX),
            **dict(processes=1, scan_N=0, rest_repeats=5, mosaic_gpu_Ts=(2048, 16384)),
            **dict(kernels=("seed",), family_Ts={"seed": (2048, 8192)}, targets=("triton sm_90",)),
            "fix_forms": ("python", "fori", "hand_unrolled u=4", "hand_unrolled u=8", "hoisted u=1", FIX),
            "quoted_budget_s": 60,
            "rest_budget_s": 125,
        },
    }

    # A smoke run: every code path once, in a few minutes on 2 cores. Its summary judges no goal.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "xla_Ts": (256, 1024),
        "interpret_Ts": (256,),
        "device_Ts": (256, 2048),
        "harness_Ts": (256, 1024),
        "harness_repeats": 1,
        "unrolls": (1, 4),
        "repeats": 2,
        "compile_repeats": 1,
        "processes": 2,
        "compile_Ts": (256, 512),
        "compile_targets": ("triton sm_90",),
        "bandwidth_megabytes": 64,
        "family_Ts": dict.fromkeys(KERNELS, (256, 512)),
        "fix_forms": ("python", "fori", "scalar_carry u=1"),
        "kernel": EXAMPLES[0],
        "kernel_Ts": (256, 512),
        "kernel_forms": ("python", "fori"),
        "check_T": 256,
        "targets": ("triton sm_86",),
        "kernel_targets": ("triton sm_86",),
        "kernels": ("seed", "data_carry"),
    }

    def validate(self) -> None:
        listed: list[tuple[str, Sequence[str]]] = [("kernels", KERNELS), ("timed_loop_forms", LOOP_FORMS)]
        listed += [(name, list(TARGETS)) for name in ("targets", "kernel_targets", "compile_targets")]
        for name, allowed in listed:
            values = getattr(self, name)
            if isinstance(values, str) or not values:
                raise bad_value(name, values, f"a non-empty list of {allowed}")
            for value in values:
                check_choice(f"{name}[...]", value, allowed)
        check_ints("unrolls", self.unrolls)
        for variant in self.harness_variants:
            parse_variant(variant)
        for name in ("device_variants", "quoted_variants", "mosaic_gpu_variants"):
            if isinstance(getattr(self, name), str):
                raise bad_value(name, getattr(self, name), "a list of variants, e.g. ['python', 'fori u=1']")
            [parse_variant(v) for v in getattr(self, name)]
        if not isinstance(self.device_batches, Mapping):
            raise bad_value("device_batches", self.device_batches, "a dict {T: batch}")
        [check_int(f"device_batches[{T}]", b, minimum=1) for T, b in self.device_batches.items()]
        [
            check_int(n, getattr(self, n), minimum=0)
            for n in "rest_repeats scan_N quoted_budget_s rest_budget_s".split()
        ]
        check_int("harness_repeats", self.harness_repeats, minimum=0)  # 0: his two calls alone
        check_choice("carry_dtype", self.carry_dtype, CARRY_DTYPES)
        check_choice("quoted_in", self.quoted_in, ("sweep", "harness"))
        counts = "D cpu_batch interpret_batch device_batch harness_batch harness_N bandwidth_megabytes"
        counts += " block_rows out_rows repeats compile_repeats check_T processes compile_budget_s"
        for name in counts.split():
            check_int(name, getattr(self, name), minimum=1)
        object.__setattr__(self, "family_Ts", _family_Ts(self.family_Ts, self.kernels))
        for name in ("family_forms", "fix_forms", "kernel_forms", "compile_forms"):
            _forms(name, getattr(self, name))
        if not isinstance(self.kernel, str):
            raise bad_value(
                "kernel", self.kernel, "'package.module:factory', several separated by commas, or ''"
            )
        for path in self.readers_kernels():
            if path.count(":") != 1 or not all(path.split(":")):
                raise bad_value("kernel", path, "'package.module:factory' (several separated by commas)")
        object.__setattr__(self, "kernel_Ts", tuple(check_ints("kernel_Ts", self.kernel_Ts)))
        multiple = math.lcm(self.block_rows, self.out_rows)
        for name in (*TS_FIELDS, "mechanism_T"):
            value = getattr(self, name)
            if name in OPTIONAL_TS and isinstance(value, tuple) and not value:
                continue  # that part is not run
            for T in check_ints(name, [value] if isinstance(value, int) else value):
                if T % multiple:
                    raise bad_value(f"{name}[...]", T, f"a multiple of block_rows and out_rows ({multiple})")
        if self.dtype != "auto":
            check_choice("dtype", self.dtype, DTYPES)
        for name in ("python_max_steps", "device_python_max_steps"):
            object.__setattr__(self, name, _steps_map(name, getattr(self, name)))

    def readers_kernels(self) -> tuple[str, ...]:
        """The factories of ``kernel``, in order ('' runs none)."""
        return tuple(p.strip() for p in self.kernel.split(",") if p.strip())

    def batch_at(self, T: int) -> int:
        """The batch a GPU/TPU runs the reporter's kernel at, at ``T``."""
        return int(self.device_batches.get(T, self.device_batch))

    def gpu_plan(self) -> list[tuple[str, str, int]]:
        """Every kernel a GPU run of these settings builds, in the order it runs, as (part, variant, T):
        ``harness`` (his form in his harness: the quoted processes), ``sweep`` (his form, the rest),
        ``port`` (the Mosaic GPU port), ``family`` and ``loops`` (the engine's factory,
        :data:`GPU_LOOPS_TS`; Triton's forms named as the engine names them)."""
        sweep = self.device_variants or vocab.variant_order(
            vocab.variants(self.timed_loop_forms, self.unrolls)
        )
        port = [v for v in self.mosaic_gpu_variants if v != "python"]
        plan = [("harness", v, T) for T in self.harness_Ts for v in self.harness_variants]
        plan += [("sweep", v, T) for T in self.device_Ts for v in sweep]
        plan += [
            ("port", v, T)
            for T in self.mosaic_gpu_Ts
            for v in ([] if T // self.block_rows > PORT_PYTHON_STEPS else ["python"]) + port
        ]
        family = dict.fromkeys([*self.family_forms, *self.fix_forms])
        plan += [
            ("family", f, T) for T in self.family_Ts.get("seed", ()) if "seed" in self.kernels for f in family
        ]
        return plan + [("loops", f, T) for T in GPU_LOOPS_TS for f in GPU_LOOPS_FORMS]

    def planned_seconds(self, backend: str) -> dict[str, float] | None:
        """A GPU pass's seconds (notebook 02, then the loops tool on the seed kernel in the same command)
        from the costs above, item by item; the quoted and rest items are also held to their budgets by
        tests/test_device_budget.py (a case planned past them would be "not reached"). None elsewhere."""
        if backend != "gpu":
            return None

        def compile_s(part: str, variant: str, T: int) -> float:
            table = COMPILE_S["mosaic_gpu" if part == "port" else "triton"][T]
            return table[0] if variant == "python" else table[1]

        def ms(variant: str, T: int) -> float:
            return GPU_MS[T][0] if variant == "python" else GPU_MS[T][1]

        plan, spent = self.gpu_plan(), dict.fromkeys(["harness", "sweep", "port", "family", "loops"], 0.0)
        for part, v, T in plan:
            if part == "harness":  # its check's kernel, then his first (compile) and second call, and repeats
                spent[part] += (
                    2 * (compile_s(part, v, T) + XLA_S)
                    + (2 + self.harness_repeats) * self.harness_N * ms(v, T) / 1e3
                )
            elif part in ("sweep", "port") and not (part == "sweep" and triton_refuses(v)):
                slowest = max(ms(w, T) for p, w, t in plan if p == part and t == T) / 1e3
                number = self.scan_N or min(max(int(0.1 / slowest), 1), 20)  # sweep.measure_group's calls
                builds = 2 if self.scan_N else 1  # the kernel, then its scan
                spent[part] += (
                    builds * (compile_s(part, v, T) + XLA_S)
                    + (1 + (1 + self.rest_repeats) * number) * ms(v, T) / 1e3
                )
            elif part == "family":  # compiled, not timed (the sweep times the seed kernel)
                spent[part] += compile_s(part, v, T) + CHECK_S * (T == self.family_Ts["seed"][0])
            elif part == "sweep":  # refused while it lowers
                spent[part] += compile_s(part, v, T)
        quoted = self.processes * (START_S + spent["harness"])
        rest = START_S + BANDWIDTH_S + spent["family"] + spent["sweep"] + spent["port"]
        return {
            "papermill and the notebook": PAPERMILL_S,
            f"quoted: his harness, {self.processes} process(es)": quoted,
            "rest: family counts, the sweep, the Mosaic GPU port": rest,
            "analysis and figures": ANALYSIS_S,
            "loops on the seed kernel": START_S + GPU_LOOPS_BUDGET_S,
        }

    def resolved_dtype(self, backend: str) -> str:
        """``dtype``, with ``"auto"`` resolved for ``backend``."""
        if self.dtype != "auto":
            return self.dtype
        return DEFAULT_DTYPE[check_choice("backend", backend, tuple(DEFAULT_DTYPE))]
