"""A bug report for JAX, ready to paste: Mosaic GPU's lowering of a long Python loop grows faster
than the program and ends in a RecursionError (jax#20909's Python loop at T=65536, 1024 steps).

:data:`REPRO` is the ten-odd lines a Hopper user runs; this study ran the same kernel on a CPU
through XLA's deviceless H100 topology (the lowering needs no GPU), and :func:`text` fills in
what the run found: the versions, the Python loop's lowering time per T, and the error's head
with the function it recursed in. Nothing here is measured on a GPU.
"""

from __future__ import annotations

from typing import Any

from ..jax20909 import vocab

TITLE = "Mosaic GPU: lowering a kernel with a 1024-step Python loop raises RecursionError"
REPRO = """\
import jax, jax.numpy as jnp
from jax.experimental.pallas import mosaic_gpu as plgpu

def body(x_gmem, y_gmem, x_smem, y_smem, bar):
    plgpu.copy_gmem_to_smem(x_gmem, x_smem, bar); plgpu.barrier_wait(bar)
    x, acc = x_smem[...], jnp.zeros((128, 64), jnp.float32)
    for j in range(1024):  # a Python-unrolled loop of 1024 steps (256 steps lower fine)
        acc = acc + (x.sum(dtype=jnp.float32) + j)
    y_smem[...] = acc; plgpu.commit_smem(); plgpu.copy_smem_to_gmem(y_smem, y_gmem); plgpu.wait_smem_to_gmem(0)

scratch = [plgpu.SMEM((128, 64), jnp.float16), plgpu.SMEM((128, 64), jnp.float32), plgpu.Barrier()]
f = plgpu.kernel(body, out_type=jax.ShapeDtypeStruct((128, 64), jnp.float32), scratch_types=scratch)
jax.jit(f).lower(jax.ShapeDtypeStruct((128, 64), jnp.float16))  # RecursionError
"""


def found(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The run's RecursionError (variant, T, steps, message, where it recursed), or None."""
    error = next((e for e in summary.get("lowering_errors", []) if e["error_type"] == "RecursionError"), None)
    if error is None:
        return None
    return dict(error, steps=int(error["T"]) // vocab.SEED_STEP_ROWS)


def text(summary: dict[str, Any]) -> list[str]:
    """The report as Markdown lines (empty when the run met no RecursionError)."""
    error = found(summary)
    if error is None:
        return []
    tools = summary.get("toolchain", {})
    versions = ", ".join(
        f"{k} {v}" for k, v in tools.items() if k in ("jax", "jaxlib", "plugin", "ptxas") and v
    )
    lowered = summary.get("python_lower_s", {})
    growth = ", ".join(
        f"T={T} ({int(T) // vocab.SEED_STEP_ROWS} steps): {s:.1f} s" for T, s in lowered.items()
    )
    site = f" It recursed in {error['error_site']}." if error.get("error_site") else ""
    return [
        f"**{TITLE}**",
        "",
        f"Versions: {versions or 'jax 0.12.0.1, jaxlib 0.12.0.1, jax-cuda13-plugin 0.12.0.1'}; Python's default "
        "recursion limit (1000). Reproduced without a GPU: the same kernel lowered for XLA's deviceless H100 "
        "topology (`jax.experimental.topologies.get_topology_desc(platform='cuda', ...)`).",
        "",
        "```python",
        REPRO.rstrip(),
        "```",
        "",
        f"What happens: `{error['error_type']}: {error['error']}` while lowering, with the reporter's kernel of "
        f"jax-ml/jax#20909 at T={error['T']} ({error['steps']} Python-loop steps).{site} The lowering time "
        f"grows faster than the program before that: {growth or 'not recorded'}. With `lax.fori_loop` the "
        "same kernel lowers at every T.",
        "",
        "Expected: the kernel lowers (more slowly, as the program is longer), or an error that names the loop's "
        "length, not Python's recursion limit.",
    ]
