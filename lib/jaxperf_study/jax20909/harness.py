"""The reporter's own harness (jax-ml/jax#20909), ported, so his table compares 1:1.

``heavyweight`` jits a ``lax.scan`` over ``N`` batches, each made inside the scan (``prepare_data``:
the same key every step, as he wrote it, so XLA may hoist it) and reduced with ``.mean()``. Compile
time is the first call minus the second; ms per kernel call the second call / ``N`` (beside it, the
median of ``repeats`` further calls). Changed from his script: only the kernel (``pl.load`` is gone),
which comes from :mod:`.kernels` and is checked against the float64 reference first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from jaxperf.errors import check_choice, check_int

from . import inputs, kernels, reference, vocab
from .settings import LoopSettings
from .variant import KernelVariant

HARNESS_MODES = {
    "xla": "xla_harness",
    "pallas_interpret": "pallas_interpret_harness",
    "pallas": "pallas_harness",
}


def prepare_data(batch: int, T: int, D: int, dtype: Any) -> Any:
    """His ``prepare_data``: standard normal ``[batch, T, D]`` from key 0."""
    import jax

    return jax.random.normal(jax.random.PRNGKey(0), (batch, T, D), dtype)


def heavyweight(f: Callable[[Any], Any], n: int, batch: int, T: int, D: int, dtype: Any) -> Callable[[], Any]:
    """His ``heavyweight``: a jitted ``lax.scan`` of ``n`` steps, each ``f(prepare_data(...)).mean()``."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def heavy_f() -> Any:
        def scanner(_: Any, __: Any) -> tuple[None, Any]:
            return None, f(prepare_data(batch, T, D, dtype)).mean()

        _, means = jax.lax.scan(scanner, None, jnp.arange(n))
        return means

    return heavy_f


class CacheHits:
    """Compiles JAX's persistent compilation cache served in this process (its monitoring events)."""

    count, _heard = 0, False

    @classmethod
    def now(cls) -> int:
        if not cls._heard:
            from jax import monitoring

            monitoring.register_event_listener(lambda event, **_: cls._add(event))
            cls._heard = True
        return cls.count

    @classmethod
    def _add(cls, event: str) -> None:
        cls.count += event == "/jax/compilation_cache/cache_hits"


def _build(mode: str, variant: KernelVariant) -> Callable[[Any], Any]:
    if mode == "xla":
        return kernels.build_xla(variant)[0]
    return kernels.build(variant, interpret=mode == "pallas_interpret")[0]


def measure(
    variants: Sequence[str],
    kernel: KernelVariant,
    *,
    n: int = vocab.SEED_N,
    mode: str = "xla",
    repeats: int = 3,
) -> pd.DataFrame:
    """Time the seed ``kernel``'s ``variants`` (each loop form in place of the kernel's own) in his
    harness: as he did, every variant's first call, then every second call, then ``repeats`` more,
    interleaved. One row per variant with ``first_call_ms``, ``second_call_ms``,
    ``first_minus_second_ms``, ``compile_ms`` (that difference; NaN where it is no compile time,
    ``compile_note`` saying why), ``ms_per_call`` (second / n, his number) and
    ``ms_per_call_median``. AssertionError when a variant's output differs from the reference.
    """
    import jax

    check_choice("mode", mode, tuple(HARNESS_MODES))
    check_choice("kernel", kernel.kernel, ("seed",))
    check_int("n", n, minimum=1)
    check_int("repeats", repeats, minimum=0)
    T, batch, D, dtype = kernel.T, kernel.batch, kernel.D, kernel.dtype
    one = kernel.replace(batch=1)
    check = tuple(np.asarray(a) for a in inputs.make_inputs(one, 1))
    heavy: dict[str, Callable[[], Any]] = {}
    rows: list[dict[str, Any]] = []
    for name in variants:
        form, unroll = vocab.parse_variant(name)
        reference.check_close(one, _build(mode, one.replace(loop_form=form, unroll=unroll))(*check), check)
        variant = kernel.replace(loop_form=form, unroll=unroll)
        heavy[name] = heavyweight(_build(mode, variant), n, batch, T, D, dtype)
        rows.append(
            dict(
                mode=HARNESS_MODES[mode],
                kernel="seed",
                T=T,
                loop_form=form,
                unroll=unroll,
                variant=name,
                N=n,
                batch=batch,
            )
        )
    calls: dict[str, list[float]] = {name: [] for name in heavy}
    cached: dict[str, bool] = {}
    for call in range(2 + repeats):
        for name, fn in heavy.items():
            hits, start = CacheHits.now(), time.perf_counter()
            jax.block_until_ready(fn())
            calls[name].append((time.perf_counter() - start) * 1e3)
            cached[name] = cached.get(name, False) or (call == 0 and CacheHits.now() > hits)
    for row in rows:
        first, second, *more = calls[row["variant"]]
        noise = "first - second < 0: not a compile time (noise)" if first <= second else ""
        served = cached[row["variant"]]
        note = "the persistent compilation cache served it: not a compile time" if served else noise
        row.update(
            first_call_ms=first,
            second_call_ms=second,
            first_minus_second_ms=first - second,
            compile_ms=float("nan") if note else first - second,
            compile_note=note,
            ms_per_call=second / n,
            ms_per_call_median=float(np.median([second, *more])) / n,
        )
    return pd.DataFrame(rows)


def headline(rows: pd.DataFrame) -> pd.DataFrame:
    """Harness rows in :func:`jaxperf_study.jax20909.analysis.headline`'s columns (ratios from the medians)."""
    if rows.empty:
        return rows
    out = rows.assign(ms_per_call=rows["ms_per_call_median"], reporter_ms_per_call=rows["ms_per_call"])
    group = ["mode", "kernel", "T"]
    by_variant = out.set_index([*group, "variant"])
    for base, value, column in (
        ("python", "ms_per_call", "ms_vs_python"),
        ("fori u=1", "compile_ms", "compile_vs_fori1"),
    ):
        if base in set(out.variant):
            ref = by_variant.xs(base, level="variant")[value].rename("_base")
            out = out.join(ref, on=group)
            out[column] = out[value] / out["_base"]
            out = out.drop(columns="_base")
    return out


def run(
    settings: LoopSettings, backend: str, *, budget_s: float = 0.0, missing: list[pd.DataFrame] | None = None
) -> pd.DataFrame:
    """:func:`measure` at every ``settings.harness_Ts``: plain jit on a CPU (``harness_batch``),
    the compiled kernel on a GPU/TPU (``settings.batch_at(T)``; on a TPU a BlockSpec per program), the
    carry ``settings.carry_dtype``. A T predicted past ``budget_s`` (:func:`.sweep.past_budget`) is a
    not-measured row in ``missing``."""
    from .sweep import past_budget

    mode, frames, started, last = "xla" if backend == "cpu" else "pallas", [], time.perf_counter(), None
    s = settings
    for T in s.harness_Ts:
        if missing is not None and (why := past_budget(budget_s, started, last, T)):
            missing.append(pd.DataFrame([dict(mode=HARNESS_MODES[mode], kernel="seed", T=T, variant=v,
                                              status="not measured", reason=why) for v in s.harness_variants]))  # fmt: skip
            continue
        began, batch = time.perf_counter(), s.harness_batch if backend == "cpu" else s.batch_at(T)
        kernel = KernelVariant("seed", "python", T=T, batch=batch, D=s.D, dtype=s.resolved_dtype(backend),
                               block_rows=s.block_rows, out_rows=s.out_rows, carry_dtype=s.carry_dtype,
                               tiling="blocks" if backend == "tpu" else "whole")  # fmt: skip
        frames.append(
            measure(s.harness_variants, kernel, n=s.harness_N, mode=mode, repeats=s.harness_repeats)
        )
        last = (T, time.perf_counter() - began)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def batches(rows: pd.DataFrame) -> dict[str, int]:
    """Each harness mode's batch size, from :func:`measure`'s rows (for the roofline)."""
    if not len(rows):
        return {}
    return {str(mode): int(batch) for mode, batch in rows.groupby("mode")["batch"].first().items()}
