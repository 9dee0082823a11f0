"""The lowering matrix: does each (kernel, loop form, unroll) lower on each
Pallas GPU/TPU compiler, and how big is the kernel IR? No accelerator needed.

Each variant is exported with ``jax.export`` for a platform this machine does
not have: ``platforms=['tpu']`` for Mosaic TPU; ``platforms=['cuda']`` inside
an abstract mesh whose abstract device is an H100 for Triton and Mosaic GPU
(Pallas' Triton lowering asks the device for its compute capability). Mosaic
GPU goes through JAX's Mosaic GPU ``pallas_call`` shim, since jax 0.12's
``pl.pallas_call`` registers no Mosaic GPU lowering rule. The
kernel's own module (Triton's ``tt`` IR, Mosaic's ``tpu`` IR) is what the
exported program carries as opaque bytes; it is captured as text while the
lowering rule runs, to count its lines and its loop ops (``scf.for``,
``scf.while``). An error is recorded with its type and exact message.
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .errors import check_choice
from .loops import kernels as pallas_kernels
from .loops import vocab
from .triton_compile import TARGETS, TRITON_CUSTOM_CALL, _cuda_export, _hook_triton_lowering, _raise_frame

COMPILERS = ("triton", "mosaic_gpu", "mosaic_tpu")
ABSTRACT_GPU = TARGETS["sm_90"][1]  # an H100: the device kind the GPU compilers see
_LOOP_OP = re.compile(r"\bscf\.(for|while)\b")
_LATE_UNROLL = re.compile(r"tpu\.late_unroll")


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


@contextlib.contextmanager
def _capture_kernel_ir(compiler: str) -> Iterator[list[str]]:
    """Collect the kernel module's text while Pallas lowers it (restored after)."""
    captured: list[str] = []
    if compiler == "triton":
        with _hook_triton_lowering(lambda result, _seconds: captured.append(str(result.module.operation))):
            yield captured
        return
    if compiler == "mosaic_tpu":
        from jax._src.pallas.mosaic import pallas_call_registration as mod

        name = "_lower_to_custom_call"
        original = getattr(mod, name)

        def hook(*args, **kwargs):
            captured.append(str(kwargs["mosaic_module"].operation))
            return original(*args, **kwargs)
    else:
        from jax._src.pallas.mosaic_gpu import pallas_call_registration as mod

        name = "_emit_mosaic_gpu_custom_call"
        original = getattr(mod, name)

        def hook(ctx, args, lowering_result, *rest, **kwargs):
            captured.append(str(lowering_result.module.operation))
            return original(ctx, args, lowering_result, *rest, **kwargs)

    setattr(mod, name, hook)
    try:
        yield captured
    finally:
        setattr(mod, name, original)


def export_variant(fn, args: tuple, compiler: str):
    """``jax.export`` ``fn`` for ``compiler``'s platform (no such device needed)."""
    from jax import export

    check_choice("compiler", compiler, COMPILERS)
    if compiler == "mosaic_tpu":
        return export.export(fn, platforms=["tpu"])(*args)
    with _cuda_export(ABSTRACT_GPU, (TRITON_CUSTOM_CALL, "mosaic_gpu", "mosaic_gpu_v2")) as cuda_export:
        return cuda_export(fn)(*args)


def _error_text(err: BaseException) -> str:
    text = str(err).strip()
    if text:
        return text.splitlines()[0][:400]
    # A bare exception (Triton's unroll, Mosaic GPU's missing rule): name where it was raised.
    frame = _raise_frame(err)
    path = frame.filename.split("site-packages/")[-1]
    return f"(no message) raised at {path}:{frame.lineno} in {frame.name}: {frame.line}"


def _first_warning(caught: list) -> str:
    return f"{caught[0].category.__name__}: {caught[0].message}"[:300] if caught else ""


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
    block_rows: int = pallas_kernels.SEED_BLOCK_ROWS,
    out_rows: int = pallas_kernels.SEED_OUT_ROWS,
) -> Lowered:
    """Lower one variant for ``compiler``; never raises for a lowering failure."""
    check_choice("compiler", compiler, COMPILERS)
    fn, args = pallas_kernels.build(
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
    with _capture_kernel_ir(compiler) as captured, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exported = export_variant(fn, args, compiler)
        except Exception as err:  # noqa: BLE001 - the error text is the result
            return Lowered(
                kernel,
                loop_form,
                unroll,
                compiler,
                T,
                False,
                type(err).__name__,
                _error_text(err),
                time.perf_counter() - start,
                0,
                0,
                0,
                0,
                _first_warning(caught),
            )
    elapsed = time.perf_counter() - start
    ir = captured[-1] if captured else ""
    return Lowered(
        kernel,
        loop_form,
        unroll,
        compiler,
        T,
        True,
        "",
        "",
        elapsed,
        ir_lines=len(ir.splitlines()),
        loop_ops=len(_LOOP_OP.findall(ir)),
        late_unroll=len(_LATE_UNROLL.findall(ir)),
        export_lines=len(exported.mlir_module().splitlines()),
        warning=_first_warning(caught),
    )


def variants(
    loop_forms: Iterable[str], unrolls: Iterable[int], kernel: str | None = None
) -> list[tuple[str, int]]:
    """(loop form, unroll) pairs for ``kernel``: see :func:`jaxperf.loops.vocab.variants`."""
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


def warning_lines(df: pd.DataFrame) -> str:
    """Markdown bullets: each distinct warning a compiler raised while lowering."""
    warned = df[df["warning"] != ""].drop_duplicates(["compiler", "warning"])
    return "\n".join(f"- {w.compiler} warns: `{w.warning}`" for w in warned.itertuples())
