"""The one vocabulary of the jax#20909 loop studies (XLA, Pallas interpret, Triton, Mosaic).

Every study of jax-ml/jax#20909 names kernels, loop forms and variants from here, orders them
the same way, and quotes the reporter's numbers from the same table. Nothing here imports JAX.

Kernels (built by :mod:`jaxperf_study.jax20909.kernels`):

``seed``
    The reporter's kernel, ported faithfully: a grid over ``T / 128`` row
    blocks per batch element (vmapped); program ``i`` loads its own block
    ``X_i`` once, before the loop; the loop runs ``T / 64`` steps, each
    ``carry += X_i.sum() + j`` on a ``[128, D]`` carry; output ``[T, D]``.
    The body is loop-invariant apart from ``j``.
``data_carry``
    The reporter's kernel with a carry that depends on the loaded data: each step adds
    ``X_i + j`` elementwise, so no compiler can fold the steps into scalar work ("does a
    real kernel pay?" beside the reporter's toy).
``streaming``
    One program per batch element reads block ``j`` at step ``j`` and adds its sum;
    output ``[128, D]``: a body that streams new data every step.
``attention``
    Online-softmax attention over key blocks: each step depends on the
    step's data and on the carry, so nothing can be hoisted.

Loop forms (run by :mod:`jaxperf.fixes._kernel_loop`):

``python``   a Python ``for`` loop, traced once per step (the reporter's "scanless");
``fori``     ``lax.fori_loop(..., unroll=k)``;
``pl_loop``  ``pl.loop(..., unroll=k)``, a wrapper over ``fori_loop``;
``hand_unrolled``  :func:`jaxperf.hand_unrolled_fori`: ``fori_loop(unroll=1)``
             over ``trip // k`` with ``k`` body copies, then the remainder;
``hoisted``  the kernel's loop invariant (``X_i.sum()``) computed once before
             the loop, then the hand-unrolled loop (``k = 1``: a plain
             ``fori_loop``, the fix a user can apply without unrolling).
``scalar_carry``  hoisted, and since every element of the ``[128, D]`` carry
             receives the same scalar additions, the loop carries that scalar
             and broadcasts it once after the loop: the same additions in the
             same order (bitwise the same output), a one-element carry.
             Only kernels in :data:`HOISTABLE` have an invariant to hoist.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KERNELS = ("seed", "data_carry", "streaming", "attention")
#: Kernels whose grid is the reporter's: T / 128 row blocks per batch element, output [T, D].
ROW_BLOCK_KERNELS = ("seed", "data_carry")
LOOP_FORMS = ("python", "fori", "pl_loop", "hand_unrolled", "hoisted", "scalar_carry")
# Forms whose ``unroll`` is a number of body copies per iteration (python is fully unrolled).
UNROLLED_FORMS = ("fori", "pl_loop", "hand_unrolled", "hoisted", "scalar_carry")
# Forms that lower on every Pallas backend at every unroll (only fori_loop(unroll=1) inside).
PORTABLE_FORMS = ("hand_unrolled", "hoisted", "scalar_carry")
# Kernels with a loop-invariant value in their body, so that "hoisted" differs from "hand_unrolled".
HOISTABLE = ("seed",)
# Forms that rewrite the kernel around its invariant: only for HOISTABLE kernels.
HOISTING_FORMS = ("hoisted", "scalar_carry")

SEED_PROGRAM_ROWS = 128  # the reporter's fwd_blk_i: rows per program, and the carry's rows
SEED_STEP_ROWS = 64  # the reporter's fwd_blk_j: the loop runs T / 64 steps
SEED_BLOCK_ROWS = SEED_STEP_ROWS  # rows a loop step reads
SEED_OUT_ROWS = SEED_PROGRAM_ROWS  # rows a program writes
#: input dtypes every kernel is built for (the reporter's fp16, TPU's bf16, and fp32)
DTYPES = ("float16", "bfloat16", "float32")
#: the carry's dtype: float32, or the input's (the reporter's fp16 carry)
CARRY_DTYPES = ("float32", "input")
#: a row-block program's input: the reporter's ``whole`` ``[T, D]`` ref, or a BlockSpec's ``[out_rows, D]``
#: ``blocks`` (the same rows; on Mosaic TPU the whole slab overflows the scoped VMEM from T=16384)
TILINGS = ("whole", "blocks")
TPU_DTYPE = "float32"  # what Mosaic TPU v5e compiles his kernel in, and why:
TPU_WHY = "float16 fails every load: 'Invalid vector type for load'; bfloat16 his scalar X_i.sum() + j: 'failed to legalize operation arith.addf (bf16, bf16) -> bf16'"


def tpu_batch(T: int, largest: int = 512) -> int:
    """His batch on a TPU v5e at ``T``: 512 to T=2048, then fori_loop's work of T=2048 (B x T/128 programs,
    run one after another, x T/64 steps), at least 1024 programs (fewer compile to other code)."""
    return max(1, min(largest, max(1024 * SEED_PROGRAM_ROWS // T, largest * 2048**2 // T**2)))


SEED_N = 16  # the reporter's harness: a lax.scan over 16 fresh batches

SEED_SETUP = (
    "RTX A6000, jax 0.4.25, fp16, N=16 scanned batches of B=512 x T x D=64; "
    "compile = first call - second call, ms per kernel call = second call / N "
    "(jax-ml/jax#20909, reporter jbuckman)"
)
# The reporter's numbers: T, then compile ms and ms per kernel call, Python loop and fori_loop.
SEED_ROWS = (
    (256, 177, 0.317, 193, 0.318),
    (2048, 242, 2.247, 200, 2.255),
    (8192, 473, 8.946, 194, 9.281),
    (16384, 776, 18.177, 198, 22.288),
    (32768, 1460, 36.009, 200, 58.552),
    (65536, 2978, 71.313, 195, 172.925),
)
SEED_COLUMNS = ("T", "python_compile_ms", "python_ms", "fori_compile_ms", "fori_ms")


def seed_records() -> list[dict[str, Any]]:
    """The reporter's table as records (numbers, with the fori/Python ratio)."""
    rows = [dict(zip(SEED_COLUMNS, row)) for row in SEED_ROWS]
    for row in rows:
        row["ratio"] = row["fori_ms"] / row["python_ms"]
    return rows


def seed_cell(compile_ms: float | None, ms_per_call: float | None) -> str:
    """One cell of the reporter's format: ``"<compile> ms / <exec> ms"`` (``n/a`` if missing)."""
    if compile_ms is None or ms_per_call is None or compile_ms != compile_ms or ms_per_call != ms_per_call:
        return "n/a"
    return f"{compile_ms:.0f} ms / {ms_per_call:.3f} ms"


def seed_issue_table() -> Any:
    """The reporter's table in its own format (a DataFrame: T, Python loop, fori_loop)."""
    import pandas as pd

    return pd.DataFrame(
        {
            "T": [r[0] for r in SEED_ROWS],
            "Python loop compile / exec": [seed_cell(r[1], r[2]) for r in SEED_ROWS],
            "fori_loop compile / exec": [seed_cell(r[3], r[4]) for r in SEED_ROWS],
        }
    )


def variant_name(loop_form: str, unroll: int) -> str:
    """``"python"`` or ``"<form> u=<unroll>"``: the one spelling of a variant."""
    return "python" if loop_form == "python" else f"{loop_form} u={unroll}"


#: The fix that closed jax#20909's gap on XLA:CPU, as every study spells it.
FIX = "scalar_carry u=1"


def parse_variant(name: str) -> tuple[str, int]:
    """Inverse of :func:`variant_name`."""
    if name == "python":
        return "python", 1
    form, _, unroll = name.partition(" u=")
    if form not in LOOP_FORMS or not unroll.isdigit():
        raise ValueError(f"variant={name!r} is not allowed: expected 'python' or '<loop form> u=<int>'.")
    return form, int(unroll)


def applies(kernel: str, loop_form: str) -> bool:
    """Whether ``loop_form`` is a distinct program for ``kernel`` (the hoisting forms need an invariant)."""
    return loop_form not in HOISTING_FORMS or kernel in HOISTABLE


def variants(
    loop_forms: Iterable[str], unrolls: Iterable[int], kernel: str | None = None
) -> list[tuple[str, int]]:
    """(loop form, unroll) pairs: the Python loop once, the others at every unroll;
    with ``kernel``, leaves out forms that do not apply to it (see :func:`applies`)."""
    unrolls = list(unrolls)
    out: list[tuple[str, int]] = []
    for form in loop_forms:
        if form not in LOOP_FORMS:
            raise ValueError(f"loop_form={form!r} is not allowed: expected one of {LOOP_FORMS}.")
        if kernel is not None and not applies(kernel, form):
            continue
        out += [(form, 1)] if form == "python" else [(form, u) for u in unrolls]
    return out


def variant_order(pairs: Iterable[tuple[str, int]]) -> list[str]:
    """Variant names of (loop form, unroll) pairs, de-duplicated, in the study's order: loop forms
    in :data:`LOOP_FORMS` order, then unroll."""
    unique = dict.fromkeys((str(f), int(u)) for f, u in pairs)
    return [variant_name(f, u) for f, u in sorted(unique, key=lambda p: (LOOP_FORMS.index(p[0]), p[1]))]


def frame_variant_order(df: Any) -> list[str]:
    """:func:`variant_order` of a DataFrame's ``loop_form``/``unroll`` columns."""
    return variant_order(zip(df["loop_form"], df["unroll"]))
