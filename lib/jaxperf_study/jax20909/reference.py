"""Float64 answers of the jax#20909 kernels, and the check every timed variant passes first."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .variant import KernelVariant


def _block_sums(x: np.ndarray, out_rows: int) -> np.ndarray:
    batch, T, D = x.shape
    return x.reshape(batch, T // out_rows, out_rows * D).sum(axis=2)  # [batch, blocks]


def _broadcast(per_block: np.ndarray, kernel: str, shape: tuple[int, int, int], out_rows: int) -> np.ndarray:
    """Per-block (seed: [batch, blocks]) or per-batch (streaming: [batch]) values to the output shape."""
    if kernel == "seed":
        return np.repeat(per_block, out_rows, axis=1)[:, :, None].repeat(shape[2], axis=2)
    return np.broadcast_to(per_block[:, None, None], shape).copy()


def reference(variant: KernelVariant, inputs: tuple[Any, ...]) -> np.ndarray:
    """The variant's kernel's answer in float64 NumPy from the (dtype-rounded) inputs (a few batch
    elements do): seed's block i is ``steps * sum(X_i) + steps (steps - 1) / 2``; data_carry's
    element ``steps * x + steps (steps - 1) / 2``; streaming's ``sum(X) + steps (steps - 1) / 2``;
    attention softmax(q k^T / sqrt(D)) v."""
    kernel, out_rows = variant.kernel, variant.out_rows
    if kernel == "attention":
        q, k, v = (np.asarray(a, np.float64) for a in inputs)
        s = np.einsum("bqd,bkd->bqk", q, k) / math.sqrt(q.shape[-1])
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return np.einsum("bqk,bkd->bqd", p / p.sum(axis=-1, keepdims=True), v)
    x = np.asarray(inputs[0], np.float64)
    batch, T, D = x.shape
    steps = T // variant.block_rows
    offsets = steps * (steps - 1) / 2.0
    if kernel == "data_carry":
        return steps * x + offsets
    if kernel == "seed":
        return _broadcast(steps * _block_sums(x, out_rows) + offsets, kernel, (batch, T, D), out_rows)
    return _broadcast(x.reshape(batch, -1).sum(axis=1) + offsets, kernel, (batch, out_rows, D), out_rows)


def tolerance(
    variant: KernelVariant, inputs: tuple[Any, ...], *, carry_dtype: Any = np.float32
) -> np.ndarray:
    """Elementwise absolute tolerance that allows for any summation order. Summing n terms in the
    carry's dtype errs by at most about ``n * eps * sum|terms|``: with ``steps`` adds of block sums
    (each a tree of ``rows * D`` terms), ``(steps + log2(rows * D) + 4) * eps * (sum|x| + sum j)``
    over what the kernel sums (seed: its block ``steps`` times; streaming: all of x; data_carry: its
    own element). attention rounds the probabilities to the input dtype before ``p @ v`` (as flash
    attention does): ``16 * eps(dtype) * max|v|`` plus a float32 part.
    """
    kernel, block_rows, out_rows = variant.kernel, variant.block_rows, variant.out_rows
    eps32 = float(np.finfo(np.float32).eps)
    if kernel == "attention":
        q, k, v = inputs
        eps = (
            2.0**-8 if str(v.dtype) == "bfloat16" else float(np.finfo(v.dtype).eps)
        )  # np.finfo lacks bfloat16
        vmax = np.abs(np.asarray(v, np.float64)).max(axis=(1, 2))[:, None, None]
        bound = (16 * eps + (k.shape[1] // block_rows + 64) * eps32) * vmax
        return np.broadcast_to(bound, (q.shape[0], out_rows, q.shape[2])).copy()
    x = np.abs(np.asarray(inputs[0], np.float64))
    batch, T, D = x.shape
    steps = T // block_rows
    eps = 2.0**-8 if str(np.dtype(carry_dtype)) == "bfloat16" else float(np.finfo(carry_dtype).eps)
    if kernel == "data_carry":  # steps additions of x + j per element, nothing else
        return (steps + 4) * eps * (steps * x + steps * (steps - 1) / 2.0) + 1e-6
    if kernel == "seed":
        scale, shape, terms = steps * _block_sums(x, out_rows), (batch, T, D), out_rows * D
    else:
        scale, shape, terms = x.reshape(batch, -1).sum(axis=1), (batch, out_rows, D), block_rows * D
    factor = (steps + math.log2(terms) + 4) * eps
    return _broadcast(factor * (scale + steps * (steps - 1) / 2.0) + 1e-6, kernel, shape, out_rows)


def check_close(variant: KernelVariant, out: Any, inputs: tuple[Any, ...]) -> float:
    """Raise AssertionError unless ``out`` matches the float64 reference (the tolerance of ``out``'s
    dtype, the carry's); return the worst error over its tolerance. Where a float16 carry cannot hold
    the answer (his, from T=32768), the element must have overflowed to an infinity of its sign; one
    within its rounding of 65504 may have. Pass a few batch elements (attention's reference holds a
    float64 ``[batch, out_rows, T]`` array)."""
    kernel = variant.kernel
    inputs = tuple(np.asarray(a) for a in inputs)
    want = reference(variant, inputs)
    carry = np.asarray(out).dtype
    tol = tolerance(variant, inputs, carry_dtype=carry)
    got = np.asarray(out, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{kernel}: output shape {got.shape}, expected {want.shape}")
    # rounding in a float16 carry grows a sum by at most steps * eps of it on its way (before the end)
    half = np.finfo(np.float16)
    limit = half.max / (1 + variant.steps * half.eps) if carry == np.float16 else np.inf
    overflowed = np.isinf(got) & (np.sign(got) == np.sign(want)) & (np.abs(want) > limit)
    err = np.where(overflowed, 0.0, np.abs(got - want))
    ratio = float(np.max(err / tol)) if err.size else 0.0
    if not np.all(np.isfinite(got) | overflowed) or not ratio <= 1.0:
        over = np.where(np.isfinite(err), err / tol, np.inf)
        worst = np.unravel_index(int(np.nanargmax(over)), err.shape) if err.size else ()
        raise AssertionError(
            f"{kernel}: output differs from the float64 reference by {ratio:.3g}x the tolerance "
            f"(worst at {worst}: got {got[worst]!r}, want {want[worst]!r}, tol {tol[worst]!r})"
        )
    return ratio
