"""The lowering matrix: does each (kernel, loop form, unroll) lower on each
Pallas GPU/TPU compiler, and how big is the kernel IR? No accelerator needed.

Each variant is exported with ``jax.export`` for a platform this machine does
not have: ``platforms=['tpu']`` for Mosaic TPU; ``platforms=['cuda']`` inside
an abstract mesh whose abstract device is an H100 for Triton and Mosaic GPU
(Pallas' Triton lowering asks the device for its compute capability). On Mosaic
GPU the reporter's kernel is the port each of whose programs copies its own 128-row
block into shared memory (:mod:`jaxperf.jax20909.mosaic_gpu_kernel`; the whole-input
original is refused from T=1024 for shared memory); the other kernels go through
JAX's Mosaic GPU ``pallas_call`` shim, since jax 0.12's ``pl.pallas_call``
registers no Mosaic GPU lowering rule. The
kernel's own module (Triton's ``tt`` IR, Mosaic's ``tpu`` IR) is what the
exported program carries as opaque bytes; it is captured as text while the
lowering rule runs, to count its lines and its loop ops (``scf.for``,
``scf.while``). An error is recorded with its type and exact message.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..compilers.lowering import COMPILERS, capture_kernel_ir, error_text, export_variant, first_warning
from ..errors import bad_value, check_choice
from ..jax20909 import kernels, mosaic_gpu_kernel, vocab

_LOOP_OP = re.compile(r"\bscf\.(for|while)\b")
_LATE_UNROLL = re.compile(r"tpu\.late_unroll")


_NO_IR: dict[str, Any] = dict(ir_lines=0, loop_ops=0, late_unroll=0, export_lines=0)


@dataclass
class Lowered:
    kernel: str
    loop_form: str
    unroll: int
    compiler: str
    T: int
    lowers: bool
    error_type: str
    error: str
    lower_s: float
    ir_lines: int  # lines of the kernel's own module (0 if it did not lower)
    loop_ops: int  # scf.for + scf.while in that module
    late_unroll: int  # loops Mosaic TPU marks tpu.late_unroll (unrolled after export)
    export_lines: int  # lines of the exported StableHLO wrapper
    warning: str = ""  # the first warning the lowering raised (e.g. Triton's deprecation)


def lower_one(
    kernel: str,
    loop_form: str,
    unroll: int,
    compiler: str,
    *,
    T: int,
    D: int = 64,
    batch: int = 4,
    dtype: Any = "float16",
    block_rows: int = kernels.SEED_BLOCK_ROWS,
    out_rows: int = kernels.SEED_OUT_ROWS,
) -> Lowered:
    """Lower one variant for ``compiler``; never raises for a lowering failure."""
    check_choice("compiler", compiler, COMPILERS)
    if compiler == "mosaic_gpu" and kernel == "seed":
        # The reporter's kernel written the way Mosaic GPU needs it (each program's block in shared
        # memory); Mosaic GPU's own unroll rule is recorded, not pre-empted (check_unroll=False).
        if (block_rows, out_rows) != (kernels.SEED_BLOCK_ROWS, kernels.SEED_OUT_ROWS):
            raise bad_value(
                "block_rows/out_rows",
                (block_rows, out_rows),
                f"the reporter's ({kernels.SEED_BLOCK_ROWS}, {kernels.SEED_OUT_ROWS}) for the Mosaic GPU port",
            )
        fn, args = mosaic_gpu_kernel.build(
            loop_form, unroll, T=T, D=D, batch=batch, dtype=dtype, check_unroll=False
        )
    else:
        fn, args = kernels.build(
            kernel,
            loop_form,
            unroll,
            T=T,
            D=D,
            batch=batch,
            dtype=dtype,
            block_rows=block_rows,
            interpret=False,
            out_rows=out_rows,
            lowering=compiler,
        )
    start = time.perf_counter()
    case: dict[str, Any] = dict(kernel=kernel, loop_form=loop_form, unroll=unroll, compiler=compiler, T=T)
    with capture_kernel_ir(compiler) as captured, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exported = export_variant(fn, args, compiler)
        except Exception as err:  # noqa: BLE001 - the error text is the result
            failed: dict[str, Any] = dict(
                error_type=type(err).__name__, error=error_text(err), lower_s=time.perf_counter() - start
            )
            return Lowered(**case, lowers=False, **failed, **_NO_IR, warning=first_warning(caught))
    elapsed = time.perf_counter() - start
    ir = captured[-1] if captured else ""
    return Lowered(
        **case,
        lowers=True,
        error_type="",
        error="",
        lower_s=elapsed,
        ir_lines=len(ir.splitlines()),
        loop_ops=len(_LOOP_OP.findall(ir)),
        late_unroll=len(_LATE_UNROLL.findall(ir)),
        export_lines=len(exported.mlir_module().splitlines()),
        warning=first_warning(caught),
    )


def variants(
    loop_forms: Iterable[str], unrolls: Iterable[int], kernel: str | None = None
) -> list[tuple[str, int]]:
    """(loop form, unroll) pairs for ``kernel``: see :func:`jaxperf.jax20909.vocab.variants`."""
    return vocab.variants(loop_forms, unrolls, kernel)


def matrix(
    kernels: Iterable[str] = vocab.KERNELS,
    loop_forms: Iterable[str] = vocab.LOOP_FORMS,
    unrolls: Iterable[int] = (1, 2, 4, 8),
    compilers: Iterable[str] = COMPILERS,
    Ts: Iterable[int] = (1024,),
    *,
    progress: Any = None,
    **shape: Any,
) -> pd.DataFrame:
    """One row per (kernel, T, loop form, unroll, compiler): see :class:`Lowered`.

    ``shape`` passes D, batch, dtype, block_rows, out_rows to :func:`lower_one`.
    Mosaic TPU gets bfloat16 where ``dtype`` is float16 (TPUs have no float16).
    """
    rows = []
    for kernel in kernels:
        for T in Ts:
            for form, unroll in variants(loop_forms, unrolls, kernel):
                for compiler in compilers:
                    kw = dict(shape)
                    if compiler == "mosaic_tpu" and np.dtype(kw.get("dtype", "float16")).name == "float16":
                        kw["dtype"] = "bfloat16"
                    rows.append(asdict(lower_one(kernel, form, unroll, compiler, T=T, **kw)))
                    if progress is not None:
                        progress.update(1)
    return pd.DataFrame(rows)


def verdicts(df: pd.DataFrame) -> pd.DataFrame:
    """The matrix at a glance, per (loop form, unroll) x compiler over kernels and T:
    'lowers' when every case lowers, else 'k/n lower' and the error types."""

    def cell(part: pd.DataFrame) -> str:
        ok, n = int(part["lowers"].sum()), len(part)
        if ok == n:
            return "lowers"
        errors = ", ".join(sorted(set(part.loc[~part["lowers"], "error_type"])))
        return f"{ok}/{n} lower ({errors})" if ok else f"fails ({errors})"

    rows = [
        {"loop_form": form, "unroll": unroll, "compiler": compiler, "cell": cell(part)}
        for (form, unroll, compiler), part in df.groupby(["loop_form", "unroll", "compiler"], sort=False)
    ]
    table = pd.DataFrame(rows).pivot(index=["loop_form", "unroll"], columns="compiler", values="cell")
    order = [c for c in COMPILERS if c in table.columns]
    return table[order].reset_index().rename_axis(columns=None)


def error_lines(df: pd.DataFrame) -> str:
    """Markdown bullets: each distinct lowering error once, with where it first occurred."""
    failed = df[~df["lowers"]].drop_duplicates(["compiler", "error"])
    return "\n".join(
        f"- {e.compiler}, {e.loop_form} unroll={e.unroll}: `{e.error_type}: {e.error}`"
        for e in failed.itertuples()
    )


def lowering_answer(df: pd.DataFrame) -> list[str]:
    """Bullets from the lowering matrix: where unroll > 1 fails, and whether the
    portable forms lower wherever fori_loop(unroll=1) does."""
    lines = []
    keys = ["kernel", "compiler", "T"]
    for compiler, g in df.groupby("compiler", sort=False):
        base = g[(g.loop_form == "fori") & (g.unroll == 1) & g.lowers][keys]
        # only failures caused by the unroll: where unroll=1 lowered for the same kernel and T
        failing = g[(g.unroll > 1) & ~g.lowers & g.loop_form.isin(["fori", "pl_loop"])].merge(base, on=keys)
        portable = g[g.loop_form.isin(vocab.PORTABLE_FORMS)].merge(base, on=keys)
        if len(failing):
            errors = ", ".join(sorted(set(failing.error_type)))
            unrolls = ", ".join(map(str, sorted(set(failing.unroll))))
            lines.append(
                f"- {compiler}: `fori_loop`/`pl.loop` fail with unroll in {{{unrolls}}} ({errors}) "
                f"in {len(failing)} of the cases where unroll=1 lowers; the portable loops (hand-unrolled, hoisted, scalar carry) "
                f"lower in {int(portable.lowers.sum())} of the {len(portable)} cases "
                "where `fori_loop(unroll=1)` does."
            )
        else:
            lines.append(f"- {compiler}: every unroll of `fori_loop`/`pl.loop` lowers where unroll=1 does.")
    return lines
