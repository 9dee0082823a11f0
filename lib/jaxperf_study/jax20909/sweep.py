"""The loop study's timed sweep: lower, compile, check against float64, then time interleaved.

A *mode* says what is timed (:data:`MODES`): ``xla`` the kernels' math in plain ``jax.jit``
(on XLA:CPU the loop question is real, cf. jax-ml/jax#402); ``pallas_interpret`` Pallas' interpreter
(its own timings); ``pallas`` the compiled kernel, only where a GPU or TPU is; ``mosaic_gpu`` the
reporter's kernel written for Mosaic GPU (Hopper). A device's timed call may run ``scan`` calls in
one jitted scan (:func:`jaxperf.timing.amortised`); every timed compile runs under a name of its
own, so JAX's persistent compilation cache never serves it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from jaxperf import timing
from jaxperf.compilers.lowering import error_text
from jaxperf.errors import bad_value, check_choice, check_int, check_ints

from . import inputs, kernels, mosaic_gpu_kernel, reference, vocab
from .settings import PORT_PYTHON_STEPS, LoopSettings
from .variant import KernelVariant
from .vocab import SEED_BLOCK_ROWS, SEED_OUT_ROWS

MODES = ("xla", "pallas_interpret", "pallas", "mosaic_gpu")
MODE_LABELS = {
    "xla": "plain jax.jit (XLA)",
    "pallas_interpret": "Pallas interpret mode (interpreter timings)",
    "pallas": "compiled Pallas kernel",
    "mosaic_gpu": "the kernel written for Mosaic GPU, compiled",
    "xla_harness": "plain jax.jit (XLA) in the reporter's harness",
    "pallas_interpret_harness": "Pallas interpret mode in the reporter's harness",
    "pallas_harness": "compiled Pallas kernel in the reporter's harness",
}


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """What one mode sweeps (validated on construction); built by :func:`plan`."""

    mode: str
    Ts: tuple[int, ...]
    kernels: tuple[str, ...] = vocab.KERNELS
    loop_forms: tuple[str, ...] = vocab.LOOP_FORMS
    unrolls: tuple[int, ...] = (1, 2, 4, 8, 16)
    D: int = 64
    batch: int = 8
    dtype: str = "float16"
    block_rows: int = SEED_BLOCK_ROWS
    out_rows: int = SEED_OUT_ROWS
    repeats: int = 5
    target_s_per_batch: float = 0.1  # calls per repeat: enough for about this many seconds
    check_batch: int = 2  # batch elements checked against the float64 reference
    compile_repeats: int = 3  # compile time: median of up to this many fresh compiles ...
    compile_budget_s: float = 1.0  # ... stopping once a variant's compiles took this long
    python_max_steps: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # "default": Pallas picks the compiler (Triton on a GPU); "mosaic_gpu": the reporter's kernel
    # written for Mosaic GPU (jaxperf_study.jax20909.mosaic_gpu_kernel), "seed" only.
    lowering: str = "default"
    listed: tuple[str, ...] = ()  # when given: exactly these variants (by name), in this order
    scan: int = 0  # calls per timed call in one jitted scan (timing.amortised); 0: one call
    batches: Mapping[int, int] = dataclasses.field(default_factory=dict)  # batch per T, else ``batch``
    tiling: str = "whole"  # the row-block kernels' (KernelVariant.tiling)
    carry_dtype: str = "float32"  # the seed's (KernelVariant.carry_dtype; "input": his float16)

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES)
        check_choice("lowering", self.lowering, ("default", "mosaic_gpu"))
        if self.lowering == "mosaic_gpu" and (
            set(self.kernels) != {"seed"}
            or self.mode == "xla"
            or (self.block_rows, self.out_rows) != (64, 128)
        ):
            raise bad_value(
                "lowering",
                self.lowering,
                "'mosaic_gpu' only for kernels=('seed',) in a Pallas mode at the reporter's block sizes",
            )
        object.__setattr__(self, "Ts", tuple(check_ints("Ts", self.Ts)))
        object.__setattr__(self, "unrolls", tuple(check_ints("unrolls", self.unrolls)))
        for name in ("compile_repeats", "repeats", "check_batch"):
            check_int(name, getattr(self, name), minimum=1)
        for k in self.kernels:
            check_choice("kernels[...]", k, vocab.KERNELS)
        for form in self.loop_forms:
            check_choice("loop_forms[...]", form, vocab.LOOP_FORMS)
        for T in self.Ts:
            for k in self.kernels:
                self.variant(k, "fori", 1, T)

    def variant(self, kernel: str, loop_form: str, unroll: int, T: int) -> KernelVariant:
        """The :class:`~.variant.KernelVariant` this sweep builds for (kernel, loop form, unroll, T)."""
        return KernelVariant(
            kernel,
            loop_form,
            unroll,
            T=T,
            D=self.D,
            batch=int(self.batches.get(T, self.batch)),
            dtype=self.dtype,
            block_rows=self.block_rows,
            out_rows=self.out_rows,
            tiling=self.tiling if kernel in vocab.ROW_BLOCK_KERNELS else "whole",
            carry_dtype=self.carry_dtype if kernel == "seed" else "float32",
        )

    def variants(self, kernel: str, T: int) -> list[tuple[str, int]]:
        """(loop form, unroll) pairs timed for (kernel, T); over-long Python loops left out (:meth:`skipped`)."""
        every = [vocab.parse_variant(v) for v in self.listed] or vocab.variants(
            self.loop_forms, self.unrolls, kernel
        )
        return [v for v in every if vocab.applies(kernel, v[0]) and not self._too_long(kernel, v[0], T)]

    def _too_long(self, kernel: str, loop_form: str, T: int) -> bool:
        limit = self.python_max_steps.get(kernel)
        return (
            loop_form == "python" and limit is not None and self.variant(kernel, "python", 1, T).steps > limit
        )

    def skipped(self) -> pd.DataFrame:
        """The variants left out, and why: reported as not measured."""
        rows = [
            dict(
                mode=self.mode,
                kernel=k,
                T=T,
                variant="python",
                status="not measured",
                reason=f"a Python loop of {self.variant(k, 'python', 1, T).steps} steps exceeds "
                f"python_max_steps[{k!r}]={self.python_max_steps[k]} (its compile would dominate the run)",
            )
            for k in self.kernels
            for T in self.Ts
            if self._too_long(k, "python", T)
        ]
        return pd.DataFrame(rows, columns=["mode", "kernel", "T", "variant", "status", "reason"])


def build(cfg: SweepConfig, variant: KernelVariant) -> tuple[Any, tuple[Any, ...]]:
    """The jitted variant for ``cfg.mode`` and its ShapeDtypeStructs."""
    if cfg.mode == "xla":
        return kernels.build_xla(variant)
    if cfg.lowering == "mosaic_gpu":
        return mosaic_gpu_kernel.build(variant, interpret=cfg.mode == "pallas_interpret")
    return kernels.build(variant, interpret=cfg.mode == "pallas_interpret")


def uncached(fn: Callable[..., Any]) -> Any:
    """``fn`` jitted under a new name: the persistent cache keys a program by its name first, so never serves it."""
    import jax

    def call(*args: Any) -> Any:
        return fn(*args)

    call.__name__ = call.__qualname__ = f"{getattr(fn, '__name__', 'kernel')}_{uuid.uuid4().hex[:12]}"
    return jax.jit(call)


def compile_fresh(
    make: Callable[[], tuple[Any, tuple[Any, ...]]], repeats: int, budget_s: float
) -> tuple[Any, dict[str, float]]:
    """Lower and compile a freshly built function up to ``repeats`` times (a jitted
    function caches its executable, so each repeat builds anew, :func:`uncached`), stopping once
    the compiles took ``budget_s``; returns the executable and the median lower/compile ms."""
    lower_s: list[float] = []
    compile_s: list[float] = []
    exe: Any = None
    while len(compile_s) < repeats and (not compile_s or sum(compile_s) < budget_s):
        fn, args = make()
        t0 = time.perf_counter()
        lowered = uncached(fn).lower(*args)
        t1 = time.perf_counter()
        exe = lowered.compile()
        lower_s.append(t1 - t0)
        compile_s.append(time.perf_counter() - t1)
    stats = dict(lower_ms=float(np.median(lower_s)) * 1e3, compile_ms=float(np.median(compile_s)) * 1e3)
    return exe, stats | {"compiles": len(compile_s)}


def measure_group(
    cfg: SweepConfig, kernel: str, T: int, *, rng_seed: int = 0, progress: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lower, compile, check and time every variant of (kernel, T) together: (variants, timings), one
    row per variant with lower_ms, compile_ms and the worst error over the tolerance (status "timed",
    else "does not lower: ..."), one per (variant, repeat) with ms_per_call. AssertionError when a
    variant's output is wrong."""
    import jax

    base = cfg.variant(kernel, "fori", 1, T)  # what every variant of (kernel, T) takes and must give
    arrays = inputs.make_inputs(base, rng_seed)
    check_inputs = tuple(np.asarray(a[: cfg.check_batch]) for a in arrays)
    compiled: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for loop_form, unroll in cfg.variants(kernel, T):
        name = vocab.variant_name(loop_form, unroll)
        row: dict[str, Any] = dict(
            mode=cfg.mode, kernel=kernel, T=T, loop_form=loop_form, unroll=unroll, variant=name
        ) | ({"lowering": cfg.lowering} if cfg.lowering != "default" else {})
        variant = cfg.variant(kernel, loop_form, unroll, T)
        try:
            make = lambda v=variant: build(cfg, v)  # noqa: E731
            exe, stats = compile_fresh(make, cfg.compile_repeats, cfg.compile_budget_s)
            # the timed call: cfg.scan calls in one jitted scan (its compile apart, not timed)
            timed = timing.amortised(make()[0], cfg.scan).lower(*arrays).compile() if cfg.scan else exe
        except Exception as err:  # noqa: BLE001 - e.g. Triton's unroll: recorded, not timed
            rows.append(row | {"status": f"does not lower: {type(err).__name__}: {error_text(err)}"})
        else:
            t0 = time.perf_counter()
            out = jax.block_until_ready(exe(*arrays))
            first_ms = (time.perf_counter() - t0) * 1e3
            worst = reference.check_close(base, out[: cfg.check_batch], check_inputs)
            compiled[name] = timed
            done = {"status": "timed", "first_call_ms": first_ms, "error_vs_tolerance": worst}
            rows.append(row | stats | done | {"batch": variant.batch})
        if progress is not None:
            progress.update(1)
    if not compiled:
        raise RuntimeError(f"no variant of kernel={kernel!r} at T={T} lowered in mode={cfg.mode!r}: {rows}")
    slowest_s = max(r["first_call_ms"] for r in rows if r["status"] == "timed") / 1e3
    number = 1 if cfg.scan else int(np.clip(cfg.target_s_per_batch / max(slowest_s, 1e-6), 1, 20))
    tconf = timing.TimingConfig(warmup=1, repeats=cfg.repeats, number=number, dispatch_only=False)
    calls = {name: (lambda exe=exe: exe(*arrays)) for name, exe in compiled.items()}
    times = timing.compare(calls, tconf, mode=cfg.mode, kernel=kernel, T=T)
    times["ms_per_call"] = times["wall_s_per_call"] * 1e3 / max(cfg.scan, 1)
    meta = pd.DataFrame(rows)
    return meta, times.merge(meta[["variant", "loop_form", "unroll"]], on="variant")


def run(
    configs: Iterable[SweepConfig],
    *,
    progress: Any = None,
    budget_s: float = 0.0,
    missing: list[pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure_group` over every (config, kernel, T): (variants, timings). With ``missing`` (a
    list), a (kernel, T) that fails or is predicted past ``budget_s`` (0: none; :func:`past_budget`)
    is a not-measured frame appended there instead; a wrong result always raises."""
    metas, times = [], []
    started, last = time.perf_counter(), None
    for cfg in configs:
        for kernel in cfg.kernels:
            for T in cfg.Ts:
                keys = [
                    dict(mode=cfg.mode, kernel=kernel, T=T, variant=vocab.variant_name(*v))
                    for v in cfg.variants(kernel, T)
                ]
                why = past_budget(budget_s, started, last, T) if missing is not None else ""
                began = time.perf_counter()
                try:
                    meta, tm = (None, None) if why else measure_group(cfg, kernel, T, progress=progress)
                except Exception as err:  # noqa: BLE001 - one (kernel, T) that fails is a result; a wrong one raises
                    if missing is None or isinstance(err, AssertionError):
                        raise
                    why = f"failed: {type(err).__name__}: {error_text(err)}"
                finally:
                    last = (T, time.perf_counter() - began) if not why.startswith("not reached") else last
                if why:
                    missing.append(pd.DataFrame([k | dict(status="not measured", reason=why) for k in keys]))  # type: ignore[union-attr]
                    continue
                metas.append(meta)
                times.append(tm)
    if not metas:
        return pd.DataFrame(), pd.DataFrame()
    return pd.concat(metas, ignore_index=True), pd.concat(times, ignore_index=True)


def past_budget(budget_s: float, started: float, last: tuple[int, float] | None, T: int) -> str:
    """Why T is not reached ("" when it is): ``last`` (T, seconds) grown with T, up to 4x, past what
    is left of ``budget_s`` (0: none) since ``started``."""
    guess, left = last[1] * min(T / last[0], 4.0) if last else 0.0, budget_s - (time.perf_counter() - started)
    if not budget_s or guess <= left:
        return ""
    return f"not reached: predicted {guess:.0f} s, {max(left, 0):.0f} s of the budget ({budget_s:.0f} s) left"


def not_measured(mode: str, reason: str, kernel_names: Iterable[str] = vocab.KERNELS) -> pd.DataFrame:
    """Rows saying a mode was not measured here, and why (never simulated)."""
    return pd.DataFrame(
        [dict(mode=mode, kernel=k, status="not measured", reason=reason) for k in kernel_names]
    )


def plan(backend: str, settings: LoopSettings) -> tuple[list[SweepConfig], pd.DataFrame]:
    """The sweeps to run on ``backend`` and the rows for what is not measured here. CPU: plain jit and
    Pallas interpret mode (the compiled kernel not measured). GPU/TPU: the reporter's kernel compiled
    at his T (on a TPU in float32, a BlockSpec per program), plain jit at ``xla_Ts``, on a GPU the
    Mosaic GPU port at ``mosaic_gpu_Ts``; the family is timed by the engine."""
    check_choice("backend", backend, ("cpu", "gpu", "tpu"))
    s = settings
    common: dict[str, Any] = dict(
        kernels=s.kernels,
        loop_forms=s.timed_loop_forms,
        unrolls=s.unrolls,
        D=s.D,
        dtype=s.resolved_dtype(backend),
        block_rows=s.block_rows,
        out_rows=s.out_rows,
        repeats=s.repeats,
        compile_repeats=s.compile_repeats,
        python_max_steps=dict(s.python_max_steps if backend == "cpu" else s.device_python_max_steps),
        scan=s.scan_N,
    )
    if backend == "cpu":
        configs = [
            SweepConfig(mode=mode, Ts=Ts, batch=batch, **common)
            for mode, Ts, batch in (
                ("xla", s.xla_Ts, s.cpu_batch),
                ("pallas_interpret", s.interpret_Ts, s.interpret_batch),
            )
            if Ts
        ]
        missing = not_measured(
            "pallas",
            "no GPU or TPU on this machine: the compiled Triton / Mosaic kernels were not timed "
            "(the lowering matrix still covers them)",
            s.kernels,
        )
    else:
        device = dict(common, kernels=("seed",), batch=s.device_batch, batches=dict(s.device_batches))
        device |= dict(listed=s.device_variants, tiling="blocks" if backend == "tpu" else "whole")
        configs = [SweepConfig(mode="pallas", Ts=s.device_Ts, carry_dtype=s.carry_dtype, **device)]
        if backend == "gpu" and s.mosaic_gpu_Ts:
            # its Python loop's lowering grows faster than T; 1024 steps exceed Python's recursion limit
            port = dict(device, listed=s.mosaic_gpu_variants, lowering="mosaic_gpu")
            port["python_max_steps"] = {"seed": PORT_PYTHON_STEPS}
            configs.append(SweepConfig(mode="mosaic_gpu", Ts=s.mosaic_gpu_Ts, **port))
        other = "tpu" if backend == "gpu" else "gpu"
        missing = not_measured("pallas", f"no {other.upper()} on this machine", s.kernels).assign(
            mode=f"pallas ({other})"
        )
    if s.xla_Ts and backend != "cpu":
        configs.append(SweepConfig(mode="xla", Ts=s.xla_Ts, batch=s.device_batch, **common))
    return configs, pd.concat([missing, *(c.skipped() for c in configs)], ignore_index=True)


def batches(configs: Iterable[SweepConfig]) -> dict[str, int]:
    """Each mode's batch size (what :func:`jaxperf_study.jax20909.roofline.attach` needs)."""
    return {c.mode: c.batch for c in configs}
