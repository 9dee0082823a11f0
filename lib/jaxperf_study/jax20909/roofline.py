"""The physical limit beside every timing: bytes a kernel must move (:func:`kernel_bytes`,
:func:`harness_bytes`) over the memory bandwidth measured in the same run on the same device
(:func:`measure_bandwidth`); each form's distance from that floor is ``ms_per_call / roofline_ms``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from jaxperf.errors import check_int

from .inputs import input_shapes, output_shape
from .variant import KernelVariant


def _median_gbs(fn: Any, x: Any, repeats: int, feed_back: bool) -> float:
    import jax

    warm = jax.block_until_ready(fn(x))  # compile, and the first touch of the output's pages
    x = warm if feed_back else x
    del warm
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        y = jax.block_until_ready(fn(x))
        seconds.append(time.perf_counter() - start)
        if feed_back:
            x = y
        del y
    return 2 * x.nbytes / float(np.median(seconds)) / 1e9


def measure_bandwidth(megabytes: int = 256, repeats: int = 7) -> dict[str, float]:
    """Copy bandwidth of the default device: median GB/s of ``x + 1`` over a float32 array of
    ``megabytes`` (well beyond the caches; 2 x its size moved per call), after one warm-up call.
    ``gb_per_s`` donates the input (the memory system's speed, the roofline's denominator);
    ``gb_per_s_fresh_output`` allocates a new output per call, as a kernel's call does (on XLA:CPU
    the first touch of fresh pages can cost more than the copy)."""
    import jax
    import jax.numpy as jnp

    check_int("megabytes", megabytes, minimum=1)
    check_int("repeats", repeats, minimum=1)
    x = jnp.zeros(megabytes * 2**20 // 4, jnp.float32)
    fresh = _median_gbs(jax.jit(lambda a: a + 1.0), x, repeats, feed_back=False)
    donated = _median_gbs(jax.jit(lambda a: a + 1.0, donate_argnums=0), x, repeats, feed_back=True)
    return dict(gb_per_s=donated, gb_per_s_fresh_output=fresh, megabytes=float(megabytes))


def kernel_bytes(variant: KernelVariant, out_dtype: Any = "float32") -> int:
    """Bytes one call of the variant's kernel must move at least: every input read once, the
    output written once."""
    inputs = sum(int(np.prod(s)) for s in input_shapes(variant))
    out = int(np.prod(output_shape(variant)))
    return inputs * np.dtype(variant.dtype).itemsize + out * np.dtype(out_dtype).itemsize


def harness_bytes(*, T: int, D: int, batch: int, dtype: Any, out_dtype: Any = "float32") -> int:
    """Bytes per scan step of the reporter's harness around the seed kernel: the random
    batch written and read, the output written and read by ``.mean()``."""
    return 2 * batch * T * D * (np.dtype(dtype).itemsize + np.dtype(out_dtype).itemsize)


def attach(
    head: pd.DataFrame, gb_per_s: float, *, D: int, batch_of: dict[str, int], dtype: Any, out_rows: int = 128
) -> pd.DataFrame:
    """``head`` with ``bytes``, ``roofline_ms`` and ``ms_vs_roofline`` per row; ``batch_of``
    maps each mode to its batch (harness modes count the harness' bytes)."""
    rows = []
    for row in head.itertuples(index=False):  # a device's batch per T, where the row holds it
        batch = int(row.batch) if pd.notna(getattr(row, "batch", None)) else batch_of[row.mode]
        shape = dict(T=int(row.T), D=D, batch=batch, dtype=dtype)
        if str(row.mode).endswith("_harness"):
            moved = harness_bytes(**shape)
        else:  # what a call moves depends on its kernel and sizes, not on its loop (1-row steps: any T)
            call = KernelVariant(row.kernel, "fori", block_rows=1, out_rows=out_rows, **shape)
            moved = kernel_bytes(call)
        rows.append(moved)
    out = head.assign(bytes=rows)
    out["roofline_ms"] = out["bytes"] / (gb_per_s * 1e9) * 1e3
    out["ms_vs_roofline"] = out["ms_per_call"] / out["roofline_ms"]
    return out
