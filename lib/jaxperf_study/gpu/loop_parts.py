"""The jax#20909 parts of the device run: the loop study on the GPU, through :mod:`jaxperf.loops`
(its sweep and the reporter's own harness), point by point inside the part's budget
(:func:`jaxperf_study.gpu.env.points`), the records rewritten after every point."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pandas as pd

from ..jax20909 import vocab
from .env import Budget, not_measured_rows, points, save_figure
from .settings import GpuSettings


@functools.cache
def _config_class() -> Any:
    """:class:`~jaxperf_study.jax20909.sweep.SweepConfig` whose ``unroll_one_forms`` run at unroll 1 only
    (built on first use: the loop study imports JAX, which the device run starts on CUDA first)."""
    from ..jax20909 import sweep

    @dataclasses.dataclass(frozen=True)
    class UnrollOneConfig(sweep.SweepConfig):
        unroll_one_forms: tuple[str, ...] = ()
        listed: tuple[str, ...] = ()  # when given: exactly these variants, in this order

        def variants(self, kernel: str, T: int) -> list[tuple[str, int]]:
            if self.listed:
                pairs = [vocab.parse_variant(v) for v in self.listed]
                return [v for v in pairs if not self._too_long(kernel, v[0], T)]
            every = super().variants(kernel, T)
            out: list[tuple[str, int]] = []
            for form in self.loop_forms:
                if form not in self.unroll_one_forms:
                    out += [v for v in every if v[0] == form]
                elif vocab.applies(kernel, form):
                    out.append((form, 1))
            return out

    return UnrollOneConfig


def _sizes(s: GpuSettings) -> dict[str, Any]:
    return dict(
        mode=s.mode, D=s.D, batch=s.batch, dtype=s.dtype, repeats=s.repeats, compile_repeats=s.compile_repeats
    )


def sweep_config(s: GpuSettings, kernel: str) -> Any:
    """The loop study's :class:`~jaxperf_study.jax20909.sweep.SweepConfig` for ``kernel`` at this run's sizes,
    the forms of ``unroll_one_forms`` at unroll 1 only."""
    return _config_class()(
        unroll_one_forms=s.unroll_one_forms,
        Ts=s.seed_Ts if kernel == "seed" else s.attention_Ts,
        kernels=(kernel,),
        loop_forms=s.loop_forms,
        unrolls=s.unrolls,
        **_sizes(s),
        python_max_steps={"attention": s.attention_python_max_steps},
    )


def mosaic_gpu_config(s: GpuSettings) -> Any:
    """The loop sweep for the reporter's kernel written for Mosaic GPU: ``mosaic_gpu_variants``
    at ``mosaic_gpu_Ts``, the Python loop only up to ``mosaic_gpu_python_max_steps`` steps."""
    forms = tuple(dict.fromkeys(vocab.parse_variant(v)[0] for v in s.mosaic_gpu_variants))
    return _config_class()(
        listed=s.mosaic_gpu_variants,
        lowering="mosaic_gpu",
        Ts=s.mosaic_gpu_Ts,
        kernels=("seed",),
        loop_forms=forms,
        unrolls=tuple(sorted({vocab.parse_variant(v)[1] for v in s.mosaic_gpu_variants})),
        **_sizes(s),
        python_max_steps={"seed": s.mosaic_gpu_python_max_steps},
    )


def mosaic_gpu_sweep(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """Part e: the Mosaic GPU port on the GPU (interpreted in the dry run), as part a; records
    ``mosaic_gpu_*``. A GPU Mosaic GPU cannot run on (before Hopper) is refused before any
    compile and every point recorded "not measured" with the reason."""
    cfg = mosaic_gpu_config(s)
    if s.mode == "pallas":
        import jax

        from jaxperf.compilers.mosaic_gpu import toolchain

        try:
            toolchain.check_device(jax.devices()[0])
        except ValueError as err:
            keys = [
                dict(mode=s.mode, kernel="seed", T=T, variant=vocab.variant_name(*v))
                for T in cfg.Ts
                for v in cfg.variants("seed", T)
            ]
            study.records(not_measured_rows(keys, f"not measured: {err}"), "mosaic_gpu_not_measured")
            return {"kernel": "seed", "lowering": "mosaic_gpu", "measured_Ts": [], "reason": str(err)}
    return loop_sweep(study, s, "seed", budget, cfg=cfg, name="mosaic_gpu")


def loop_sweep(
    study: Any, s: GpuSettings, kernel: str, budget: Budget, *, cfg: Any = None, name: str = ""
) -> dict[str, Any]:
    """Part a for ``kernel`` (or ``cfg``): writes ``<name>_variants``, ``_timings``, ``_headline``,
    ``_not_measured`` and ``bandwidth`` records (``name`` defaults to the kernel) and two
    figures; returns a summary dict."""
    from ..jax20909 import analysis, figures, roofline

    cfg = cfg or sweep_config(s, kernel)
    name = name or kernel
    bandwidth = roofline.measure_bandwidth(s.bandwidth_megabytes)
    study.records(pd.DataFrame([bandwidth]), f"{name}_bandwidth")
    metas: list[pd.DataFrame] = []
    times: list[pd.DataFrame] = []
    from ..jax20909 import sweep

    missing = [cfg.skipped()]

    def keys_of(T: int) -> list[dict[str, Any]]:
        return [
            dict(mode=s.mode, kernel=kernel, T=T, variant=vocab.variant_name(*v))
            for v in cfg.variants(kernel, T)
        ]

    measure = functools.partial(sweep.measure_group, cfg, kernel)
    for _, (meta, timing) in points(
        study, cfg.Ts, keys_of, measure, budget, missing, lambda T: f"{name} T={T}"
    ):
        metas.append(meta)
        times.append(timing)
        study.records(pd.concat(metas, ignore_index=True), f"{name}_variants")
        study.records(pd.concat(times, ignore_index=True), f"{name}_timings")
    skipped = pd.concat(missing, ignore_index=True)
    study.records(skipped, f"{name}_not_measured")
    if not metas:
        return {"kernel": kernel, "measured_Ts": [], "not_measured": len(skipped)}
    variants, timings = pd.concat(metas, ignore_index=True), pd.concat(times, ignore_index=True)
    head = analysis.headline(variants, timings)
    head = roofline.attach(head, bandwidth["gb_per_s"], D=s.D, batch_of={s.mode: s.batch}, dtype=s.dtype)
    study.records(head, f"{name}_headline")
    fig, data = figures.plot_ms_vs_T(timings, s.mode)
    save_figure(study, fig, f"{name}_ms_vs_T", data)
    fig, data = figures.plot_compile_vs_T(variants, s.mode)
    save_figure(study, fig, f"{name}_compile_vs_T", data)
    table = analysis.seed_table(head, s.mode, kernel) if kernel == "seed" else None
    return {
        "kernel": kernel,
        "lowering": cfg.lowering,
        "mode": s.mode,
        "measured_Ts": sorted({int(t) for t in timings["T"]}),
        "not_measured": len(skipped),
        "bandwidth_gb_per_s": bandwidth["gb_per_s"],
        "seed_table": None if table is None else table.to_dict(orient="records"),
    }


def seed_format(rows: pd.DataFrame) -> pd.DataFrame:
    """Harness rows in the reporter's format: per T, compile ms / ms per kernel call for the
    Python loop and fori_loop (and the scalar carry, the XLA:CPU fix, when measured), beside his
    own numbers (RTX A6000). "This run" is the device the records' provenance names (a CPU in
    the dry run)."""
    reporter = {r[0]: r for r in vocab.SEED_ROWS}
    shown = [("Python loop", "python"), ("fori_loop", "fori u=1")]
    shown += [("scalar carry", vocab.FIX)] if vocab.FIX in set(rows.variant) else []
    out = []
    for T, g in rows.groupby("T", sort=True):
        row: dict[str, Any] = {"T": int(T)}
        for label, variant in shown:
            hit = g[g.variant == variant]
            cell = vocab.seed_cell(*hit[["compile_ms", "ms_per_call"]].iloc[0]) if len(hit) else "n/a"
            row[f"{label} compile / exec (this run)"] = cell
        mine = g.set_index("variant")["ms_per_call"]
        for label, variant in shown[1:]:
            if {"python", variant} <= set(mine.index):
                ratio = round(float(mine[variant] / mine["python"]), 3)
                row[f"{label.removesuffix('_loop')}/Python (this run)"] = ratio
        if int(T) in reporter:
            r = reporter[int(T)]
            row["Python loop (reporter, A6000)"] = vocab.seed_cell(r[1], r[2])
            row["fori_loop (reporter, A6000)"] = vocab.seed_cell(r[3], r[4])
            row["fori/Python (reporter)"] = round(r[4] / r[2], 3)
        out.append(row)
    return pd.DataFrame(out)


def harness(study: Any, s: GpuSettings, budget: Budget) -> dict[str, Any]:
    """Part b: the reporter's harness at ``harness_Ts``; writes ``harness``, ``harness_headline``,
    ``seed_table`` and ``harness_not_measured`` records; returns a summary dict."""
    from ..jax20909 import harness as reporter_harness
    from ..jax20909.variant import KernelVariant

    frames: list[pd.DataFrame] = []
    missing: list[pd.DataFrame] = []
    options: dict[str, Any] = dict(n=s.harness_N, mode=s.mode, repeats=s.harness_repeats)
    for _, rows in points(
        study,
        s.harness_Ts,
        lambda T: [dict(mode=s.mode, kernel="seed", T=T, variant=v) for v in s.harness_variants],
        lambda T: reporter_harness.measure(
            s.harness_variants,
            KernelVariant("seed", "python", T=T, D=s.D, batch=s.batch, dtype=s.dtype),
            **options,
        ),
        budget,
        missing,
        lambda T: f"harness T={T}",
    ):
        frames.append(rows)
        study.records(pd.concat(frames, ignore_index=True), "harness")
    skipped = pd.concat(missing, ignore_index=True) if missing else pd.DataFrame(columns=["T", "status"])
    study.records(skipped, "harness_not_measured")
    if not frames:
        return {"measured_Ts": [], "not_measured": len(skipped)}
    rows = pd.concat(frames, ignore_index=True)
    study.records(reporter_harness.headline(rows), "harness_headline")
    table = seed_format(rows)
    study.records(table, "seed_table")
    return {
        "mode": f"{s.mode} in the reporter's harness",
        "measured_Ts": sorted({int(t) for t in rows["T"]}),
        "not_measured": len(skipped),
        "seed_table": table.to_dict(orient="records"),
    }
