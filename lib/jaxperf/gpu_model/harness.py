"""The reporter's harness's own work, besides his kernel: random normals in, a mean out.

Each step of his jitted ``lax.scan`` runs three kernels one after the other
(the Pallas kernel is a custom call, which XLA cannot fuse with its
neighbours): XLA's fusion that makes ``jax.random.normal(key, (B, T, D),
float16)`` (threefry2x32 counters, the uniform bits, ``erf_inv`` in float32),
his kernel, and the reduction of its output to ``.mean()``. (On this machine's
XLA:CPU the compiled scan keeps the random numbers inside the loop body, though
his key is the same each step: XLA's loop-invariant code motion leaves
size-inflating ops in place by default. The model assumes the GPU's XLA does the same.)

XLA's own GPU kernels cannot be compiled without a GPU here, so the two
neighbours are **analogues**: Pallas kernels computing the same arithmetic,
compiled by Triton and ptxas to SASS. :func:`reference_normal` is the random
numbers' arithmetic in plain ``jax.numpy`` (the tests check it bit for bit
against ``jax.random.normal``); :func:`rng_kernel` runs that arithmetic on
blocks of elements. Two counter schemes: JAX >= 0.5 (``jax_threefry_partitionable``
on, the device run's JAX 0.11.2) hashes one threefry call per element; the
reporter's JAX 0.4.25 (the flag off) one call per two 32-bit words, i.e. per four
fp16 numbers. The mean's analogue sums blocks in float32. Their memory: the random
numbers written once, the kernel's output read once.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from ..errors import check_choice, check_int
from . import compiled
from .model import KernelWork

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))  # threefry2x32's, as in JAX and Random123
KEY = (0, 0)  # the raw key of jax.random.PRNGKey(0), his key
RNG_BLOCK = 1024  # threefry calls per program of the analogue
MEAN_BLOCK = 4096  # elements per program of the mean's analogue
REF_PROGRAMS = 4  # the analogues are compiled once at this grid; their per-program code does not depend on it


def threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32 with 20 rounds, as ``jax.random``'s (uint32 arrays in, two out)."""
    import jax.numpy as jnp

    def rotl(x: Any, d: int) -> Any:
        return (x << jnp.uint32(d)) | (x >> jnp.uint32(32 - d))

    ks = (k0, k1, k0 ^ k1 ^ jnp.uint32(0x1BD11BDA))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = x0 ^ rotl(x1, r)
        x0, x1 = x0 + ks[(i + 1) % 3], x1 + ks[(i + 2) % 3] + jnp.uint32(i + 1)
    return x0, x1


def normal_from_bits(bits16: Any) -> Any:
    """``jax.random.normal``'s float16 transform of 16 random bits: uniform in (-1, 1), then
    ``sqrt(2) * erf_inv`` (``erf_inv`` in float32, as XLA upcasts float16 for it)."""
    import jax.numpy as jnp
    from jax import lax

    lo = jnp.float16(np.nextafter(np.float16(-1), np.float16(0)))
    one = jnp.float16(1)
    mantissa = (bits16 >> jnp.uint16(6)) | jnp.uint16(15360)
    u = jnp.maximum(lo, (lax.bitcast_convert_type(mantissa, jnp.float16) - one) * (one - lo) + lo)
    return jnp.float16(np.sqrt(2)) * lax.erf_inv(u.astype(jnp.float32)).astype(jnp.float16)


def _halves(words: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    return (words & jnp.uint32(0xFFFF)).astype(jnp.uint16), (words >> jnp.uint32(16)).astype(jnp.uint16)


def reference_normal(n: int, *, partitionable: bool) -> Any:
    """``jax.random.normal(PRNGKey(0), (n,), float16)`` rebuilt from :func:`threefry2x32` and
    :func:`normal_from_bits` (``partitionable``: the value of ``jax_threefry_partitionable``)."""
    import jax

    check_int("n", n)
    return jax.jit(_reference_normal, static_argnums=(0, 1))(n, partitionable)


def _reference_normal(n: int, partitionable: bool) -> Any:
    import jax.numpy as jnp

    k0, k1 = (jnp.uint32(k) for k in KEY)
    if partitionable:
        b0, b1 = threefry2x32(k0, k1, jnp.zeros(n, jnp.uint32), jnp.arange(n, dtype=jnp.uint32))
        return normal_from_bits((b0 ^ b1).astype(jnp.uint16))
    words = -(-n // 2)
    counts = jnp.arange(words + words % 2, dtype=jnp.uint32)  # an odd count is padded with a 0
    counts = counts.at[words:].set(0)
    b0, b1 = threefry2x32(k0, k1, *jnp.split(counts, 2))
    lo, hi = _halves(jnp.concatenate([b0, b1])[:words])
    return normal_from_bits(jnp.stack([lo, hi], axis=1).reshape(-1)[:n])


def rng_kernel(n: int, *, partitionable: bool) -> tuple[Any, tuple[Any, ...], int]:
    """The random numbers' analogue as a ``pallas_call`` making ``n`` float16 normals (``n`` a
    multiple of its block); returns (jitted fn, input structs, elements per program). Each program
    hashes :data:`RNG_BLOCK` counters: one number each (partitionable), or four (two words of
    two halves; stored block-wise, not interleaved as JAX does: the arithmetic is the same)."""
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl

    per_program = RNG_BLOCK if partitionable else 4 * RNG_BLOCK
    if n % per_program:
        raise ValueError(f"n={n!r} is not allowed: expected a multiple of {per_program}")
    half = n // 4

    def kernel(o_ref: Any) -> None:
        k0, k1 = (jnp.uint32(k) for k in KEY)
        first = (pl.program_id(0) * RNG_BLOCK).astype(jnp.uint32)
        i = first + lax.broadcasted_iota(jnp.uint32, (RNG_BLOCK,), 0)
        if partitionable:
            b0, b1 = threefry2x32(k0, k1, jnp.zeros_like(i), i)
            o_ref[...] = normal_from_bits((b0 ^ b1).astype(jnp.uint16))
            return
        for slot, word in enumerate(threefry2x32(k0, k1, i, i + jnp.uint32(half))):
            for part, bits in enumerate(_halves(word)):
                o_ref[pl.ds((2 * slot + part) * RNG_BLOCK, RNG_BLOCK)] = normal_from_bits(bits)

    call = pl.pallas_call(
        kernel,
        grid=(n // per_program,),
        out_specs=pl.BlockSpec((per_program,), lambda g: (g,)),
        out_shape=jax.ShapeDtypeStruct((n,), jnp.float16),
    )
    return jax.jit(call), (), per_program


def mean_kernel(n: int, dtype: str) -> tuple[Any, tuple[Any, ...], int]:
    """The mean's analogue: each program sums :data:`MEAN_BLOCK` elements of ``dtype`` in float32."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    if n % MEAN_BLOCK:
        raise ValueError(f"n={n!r} is not allowed: expected a multiple of {MEAN_BLOCK}")

    def kernel(x_ref: Any, o_ref: Any) -> None:
        o_ref[...] = jnp.sum(x_ref[...].astype(jnp.float32), keepdims=True)

    call = pl.pallas_call(
        kernel,
        grid=(n // MEAN_BLOCK,),
        in_specs=[pl.BlockSpec((MEAN_BLOCK,), lambda g: (g,))],
        out_specs=pl.BlockSpec((1,), lambda g: (g,)),
        out_shape=jax.ShapeDtypeStruct((n // MEAN_BLOCK,), jnp.float32),
    )
    return jax.jit(call), (jax.ShapeDtypeStruct((n,), np.dtype(dtype)),), MEAN_BLOCK


@functools.lru_cache(maxsize=16)
def _rng_reference(target: str, partitionable: bool) -> tuple[compiled.Compiled, int]:
    fn, args, per_program = rng_kernel(REF_PROGRAMS * 4 * RNG_BLOCK, partitionable=partitionable)
    name = f"random normals ({'partitionable' if partitionable else 'original'} threefry), analogue"
    return compiled.kernel_work(name, fn, args, target=target, bytes_read=0, bytes_written=0), per_program


@functools.lru_cache(maxsize=16)
def _mean_reference(target: str, dtype: str) -> tuple[compiled.Compiled, int]:
    fn, args, per_program = mean_kernel(REF_PROGRAMS * MEAN_BLOCK, dtype)
    name = f"mean over the {dtype} output, analogue"
    return compiled.kernel_work(name, fn, args, target=target, bytes_read=0, bytes_written=0), per_program


def harness_work(elements: int, *, target: str, out_dtype: str, partitionable: bool) -> dict[str, KernelWork]:
    """The harness's two neighbours for a batch of ``elements`` numbers: ``{"rng", "mean"}``,
    each the analogue's per-program work with the grid and bytes of that batch."""
    check_int("elements", elements)
    check_choice("out_dtype", out_dtype, ("float16", "float32"))
    rng, rng_per = _rng_reference(target, partitionable)
    mean, mean_per = _mean_reference(target, out_dtype)
    return {
        "rng": dataclasses.replace(
            rng.work, programs=math.ceil(elements / rng_per), bytes_written=2.0 * elements
        ),
        "mean": dataclasses.replace(
            mean.work,
            programs=math.ceil(elements / mean_per),
            bytes_read=float(np.dtype(out_dtype).itemsize * elements),
        ),
    }


def analogue_sass(target: str, *, partitionable: bool, out_dtype: str) -> dict[str, str]:
    """The analogues' SASS text (for inspection and the records)."""
    return {
        "rng": _rng_reference(target, partitionable)[0].sass,
        "mean": _mean_reference(target, out_dtype)[0].sass,
    }
