"""The Pallas loop study (jax-ml/jax#20909): sweep, tables, recommendation, figures.

A *mode* says what is timed:

- ``xla``: the kernels' math and loop forms in plain ``jax.jit`` on the
  current backend (on XLA:CPU the loop question is real, cf. jax-ml/jax#402);
- ``pallas_interpret``: the ``pallas_call`` in Pallas' interpret mode (any
  machine; these are interpreter timings, not GPU/TPU speed);
- ``pallas``: the compiled ``pallas_call`` (Triton on GPU, Mosaic on TPU);
  only where such a device is present, never simulated.

For each (mode, kernel, T) every variant (loop form x unroll) is lowered,
compiled, checked against the float64 reference, then all are timed together,
interleaved (:func:`jaxperf.timing.compare`), warm-up excluded.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import lowering as _lowering
from . import plots, timing
from .errors import bad_value, check_choice, check_int, check_ints
from .loops import inputs as _inputs
from .loops import kernels as _kernels
from .loops import reference as _reference
from .loops import vocab as _vocab

MODES = ("xla", "pallas_interpret", "pallas")
MODE_LABELS = {
    "xla": "plain jax.jit (XLA)",
    "pallas_interpret": "Pallas interpret mode (interpreter timings)",
    "pallas": "compiled Pallas kernel",
}
WITHIN = 1.05  # "within 5% of the best"
COMPILE_BUDGET = 1.5  # "compile time within 1.5x of fori_loop(unroll=1)"
UNROLLED_FORMS = ("fori", "pl_loop", "hand_unrolled")


def variant_name(loop_form: str, unroll: int) -> str:
    return "python" if loop_form == "python" else f"{loop_form} u={unroll}"


@dataclass
class SweepConfig:
    """What one mode sweeps; validated on construction."""

    mode: str
    Ts: Sequence[int]
    kernels: Sequence[str] = _vocab.KERNELS
    loop_forms: Sequence[str] = _vocab.LOOP_FORMS
    unrolls: Sequence[int] = (1, 2, 4, 8, 16)
    D: int = 64
    batch: int = 8
    dtype: str = "float32"
    block_rows: int = _kernels.SEED_BLOCK_ROWS
    out_rows: int = _kernels.SEED_OUT_ROWS
    timing: timing.TimingConfig = field(
        default_factory=lambda: timing.TimingConfig(warmup=1, repeats=5, number=1, dispatch_only=False)
    )
    target_s_per_batch: float = 0.1  # calls per repeat: enough for ~this many seconds
    check_batch: int = 8  # batch elements checked against the float64 reference
    compile_repeats: int = 3  # compile time is a median of up to this many compiles ...
    compile_budget_s: float = 1.0  # ... stopping once a variant's compiles took this long
    # Per kernel: skip (and report as not measured) Python loops of more steps than this.
    python_max_steps: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice("mode", self.mode, MODES)
        check_int("compile_repeats", self.compile_repeats, minimum=1)
        if not isinstance(self.python_max_steps, dict):
            raise bad_value("python_max_steps", self.python_max_steps, "a dict {kernel: steps}")
        for k, steps in self.python_max_steps.items():
            check_choice("python_max_steps key", k, _vocab.KERNELS)
            check_int(f"python_max_steps[{k!r}]", steps, minimum=1)
        self.Ts = check_ints("Ts", self.Ts)
        self.unrolls = check_ints("unrolls", self.unrolls)
        for k in self.kernels:
            check_choice("kernels[...]", k, _vocab.KERNELS)
        for f in self.loop_forms:
            check_choice("loop_forms[...]", f, _vocab.LOOP_FORMS)
        for T in self.Ts:
            _kernels.check_params(
                self.kernels[0],
                "fori",
                1,
                T=T,
                D=self.D,
                batch=self.batch,
                dtype=self.dtype,
                block_rows=self.block_rows,
                out_rows=self.out_rows,
            )

    def variants(self, kernel: str, T: int) -> list[tuple[str, int]]:
        """(loop form, unroll) pairs timed for (kernel, T) (long Python loops left out, see skipped())."""
        return [
            v
            for v in _lowering.variants(self.loop_forms, self.unrolls, kernel)
            if not self._too_long(kernel, v[0], T)
        ]

    def _too_long(self, kernel: str, loop_form: str, T: int) -> bool:
        limit = self.python_max_steps.get(kernel)
        return loop_form == "python" and limit is not None and _kernels.trip_count(T, self.block_rows) > limit

    def skipped(self) -> pd.DataFrame:
        """The variants left out, and why: reported as not measured."""
        rows = [
            dict(
                mode=self.mode,
                kernel=k,
                T=T,
                variant="python",
                status="not measured",
                reason=f"a Python loop of {_kernels.trip_count(T, self.block_rows)} steps exceeds "
                f"python_max_steps[{k!r}]={self.python_max_steps[k]} (its compile would dominate the run)",
            )
            for k in self.kernels
            for T in self.Ts
            if self._too_long(k, "python", T)
        ]
        return pd.DataFrame(rows, columns=["mode", "kernel", "T", "variant", "status", "reason"])


def _build(cfg: SweepConfig, kernel: str, loop_form: str, unroll: int, T: int):
    shape = dict(
        T=T, D=cfg.D, batch=cfg.batch, dtype=cfg.dtype, block_rows=cfg.block_rows, out_rows=cfg.out_rows
    )
    if cfg.mode == "xla":
        return _kernels.build_xla(kernel, loop_form, unroll, **shape)
    return _kernels.build(kernel, loop_form, unroll, interpret=cfg.mode == "pallas_interpret", **shape)


def measure_group(
    cfg: SweepConfig, kernel: str, T: int, *, seed: int = 0, progress: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Lower, compile, check and time every variant of (kernel, T) together.

    Returns (variants, timings): one row per variant with lower_ms,
    compile_ms and the worst error as a fraction of the tolerance (status
    "timed"), or the error where it does not lower or compile (status "does
    not lower: ..."; not timed); one row per (variant, repeat) with
    ms_per_call. Raises AssertionError when a variant's output is wrong.
    """
    import jax

    device_inputs = _inputs.make_inputs(
        kernel, seed, T=T, D=cfg.D, batch=cfg.batch, dtype=cfg.dtype, out_rows=cfg.out_rows
    )
    # The reference is float64 NumPy: checking a few batch elements is enough to catch a wrong loop.
    check_inputs = tuple(np.asarray(a[: cfg.check_batch]) for a in device_inputs)
    compiled, rows = {}, []
    for loop_form, unroll in cfg.variants(kernel, T):
        # A jitted function caches its lowering and executable: each repeat builds
        # a fresh one, so that every lower and compile is really done again.
        lower_s, compile_s = [], []
        name = variant_name(loop_form, unroll)
        try:
            while len(compile_s) < cfg.compile_repeats and (
                not compile_s or sum(compile_s) < cfg.compile_budget_s
            ):
                fn, args = _build(cfg, kernel, loop_form, unroll, T)
                t0 = time.perf_counter()
                lowered = fn.lower(*args)
                t1 = time.perf_counter()
                exe = lowered.compile()
                t2 = time.perf_counter()
                lower_s.append(t1 - t0)
                compile_s.append(t2 - t1)
        except Exception as err:  # noqa: BLE001 - e.g. Triton's unroll: recorded, not timed
            rows.append(
                dict(
                    mode=cfg.mode,
                    kernel=kernel,
                    T=T,
                    loop_form=loop_form,
                    unroll=unroll,
                    variant=name,
                    status=f"does not lower: {type(err).__name__}: {_lowering._error_text(err)}",
                )
            )
            if progress is not None:
                progress.update(1)
            continue
        t2 = time.perf_counter()
        out = jax.block_until_ready(exe(*device_inputs))
        t3 = time.perf_counter()
        err = _reference.check_close(
            kernel, out[: cfg.check_batch], check_inputs, block_rows=cfg.block_rows, out_rows=cfg.out_rows
        )
        compiled[name] = exe
        rows.append(
            dict(
                mode=cfg.mode,
                kernel=kernel,
                T=T,
                loop_form=loop_form,
                unroll=unroll,
                variant=name,
                status="timed",
                lower_ms=float(np.median(lower_s)) * 1e3,
                compile_ms=float(np.median(compile_s)) * 1e3,
                compiles=len(compile_s),
                first_call_ms=(t3 - t2) * 1e3,
                error_vs_tolerance=err,
            )
        )
        if progress is not None:
            progress.update(1)
    if not compiled:
        raise RuntimeError(f"no variant of kernel={kernel!r} at T={T} lowered in mode={cfg.mode!r}: {rows}")
    slowest_s = max(r["first_call_ms"] for r in rows if r["status"] == "timed") / 1e3
    number = int(np.clip(cfg.target_s_per_batch / max(slowest_s, 1e-6), 1, max(cfg.timing.number, 1) * 20))
    tconf = timing.TimingConfig(
        warmup=cfg.timing.warmup,
        repeats=cfg.timing.repeats,
        number=number,
        dispatch_only=False,
        clock=cfg.timing.clock,
    )
    variants = {name: (lambda exe=exe: exe(*device_inputs)) for name, exe in compiled.items()}
    times = timing.compare(variants, tconf, mode=cfg.mode, kernel=kernel, T=T)
    times["ms_per_call"] = times["wall_s_per_call"] * 1e3
    meta = pd.DataFrame(rows)
    times = times.merge(meta[["variant", "loop_form", "unroll"]], on="variant")
    return meta, times


def sweep(cfg: SweepConfig, *, progress: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`measure_group` over every (kernel, T); returns (variants, timings)."""
    metas, times = [], []
    for kernel in cfg.kernels:
        for T in cfg.Ts:
            meta, tm = measure_group(cfg, kernel, T, progress=progress)
            metas.append(meta)
            times.append(tm)
    return pd.concat(metas, ignore_index=True), pd.concat(times, ignore_index=True)


def not_measured(mode: str, reason: str, kernels: Iterable[str] = _vocab.KERNELS) -> pd.DataFrame:
    """Rows saying a mode was not measured here, and why (never simulated)."""
    return pd.DataFrame([dict(mode=mode, kernel=k, status="not measured", reason=reason) for k in kernels])


def headline(variants: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """One row per (mode, kernel, T, loop form, unroll): medians and IQRs, ratios to python and fori u=1."""
    keys = ["mode", "kernel", "T", "loop_form", "unroll", "variant"]
    stats = timing.summarize(timings, "ms_per_call", keys).rename(
        columns={"median": "ms_per_call", "q25": "ms_q25", "q75": "ms_q75", "n": "repeats"}
    )
    out = stats.merge(variants[keys + ["lower_ms", "compile_ms", "error_vs_tolerance"]], on=keys)
    group = ["mode", "kernel", "T"]
    if "python" in set(timings["variant"]):
        ratios = timing.pair_ratios(timings, "python", "ms_per_call", by=group)
        med = ratios.groupby(group + ["variant"])["ratio"].median().rename("ms_vs_python").reset_index()
        out = out.merge(med, on=group + ["variant"], how="left")
        py = out[out.variant == "python"].set_index(group)["compile_ms"].rename("python_compile_ms")
        out = out.join(py, on=group)
    if "fori u=1" in set(timings["variant"]):
        f1 = out[out.variant == "fori u=1"].set_index(group)["compile_ms"].rename("fori1_compile_ms")
        out = out.join(f1, on=group)
        out["compile_vs_fori1"] = out["compile_ms"] / out["fori1_compile_ms"]
    return out


def seed_table(head: pd.DataFrame, mode: str, kernel: str = "seed") -> pd.DataFrame:
    """The seed's table: per T, compile ms / ms per kernel call, Python loop vs fori_loop."""
    part = head[(head["mode"] == mode) & (head["kernel"] == kernel)]
    rows = []
    for T, g in part.groupby("T", sort=True):
        row = {"T": int(T)}
        for label, variant in (("Python loop", "python"), ("fori_loop", "fori u=1")):
            hit = g[g.variant == variant]
            row[f"{label} compile / exec"] = (
                f"{hit.compile_ms.iloc[0]:.0f} ms / {hit.ms_per_call.iloc[0]:.3f} ms" if len(hit) else "n/a"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def seed_tables_markdown(head: pd.DataFrame, kernel: str = "seed") -> str:
    """:func:`seed_table` for every mode timed, as Markdown."""
    from .records import markdown_table

    return "\n\n".join(
        f"**{MODE_LABELS[mode]}**, kernel `{kernel}`\n\n" + markdown_table(seed_table(head, mode, kernel))
        for mode in dict.fromkeys(head["mode"])
    )


def recommend(
    head: pd.DataFrame, loop_forms: Sequence[str] = UNROLLED_FORMS, within: float = WITHIN
) -> pd.DataFrame:
    """Per (mode, kernel, T, loop form): the smallest unroll within ``within`` of that form's best.

    Also checks the issue's goals for that unroll: execution within 5% of
    the Python loop, compile time within 1.5x of fori_loop(unroll=1).
    """
    rows = []
    for (mode, kernel, T, form), g in head[head.loop_form.isin(loop_forms)].groupby(
        ["mode", "kernel", "T", "loop_form"]
    ):
        best = g.ms_per_call.min()
        ok = g[g.ms_per_call <= within * best].sort_values("unroll")
        pick = ok.iloc[0]
        row = dict(
            mode=mode,
            kernel=kernel,
            T=int(T),
            loop_form=form,
            unroll=int(pick.unroll),
            ms_per_call=pick.ms_per_call,
            best_unroll=int(g.loc[g.ms_per_call.idxmin(), "unroll"]),
            best_ms_per_call=best,
            compile_ms=pick.compile_ms,
        )
        # None where the comparison was not measured (no Python loop or fori u=1 at this T).
        vs_python = pick.get("ms_vs_python", np.nan)
        vs_fori1 = pick.get("compile_vs_fori1", np.nan)
        exec_ok = None if pd.isna(vs_python) else bool(vs_python <= within)
        compile_ok = None if pd.isna(vs_fori1) else bool(vs_fori1 <= COMPILE_BUDGET)
        row.update(
            {
                "ms_vs_python": vs_python,
                "exec_within_5pct_of_python": exec_ok,
                "compile_vs_fori1": vs_fori1,
                "compile_within_1.5x_of_fori1": compile_ok,
                "goal_met": None if exec_ok is None or compile_ok is None else exec_ok and compile_ok,
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


# --- summary -------------------------------------------------------------------

SEED_ISSUE_TABLE = pd.DataFrame(
    {
        "T": [256, 2048, 8192, 16384, 32768, 65536],
        "Python loop compile / exec": [
            "177 ms / 0.317 ms",
            "242 ms / 2.247 ms",
            "473 ms / 8.946 ms",
            "776 ms / 18.177 ms",
            "1460 ms / 36.009 ms",
            "2978 ms / 71.313 ms",
        ],
        "fori_loop compile / exec": [
            "193 ms / 0.318 ms",
            "200 ms / 2.255 ms",
            "194 ms / 9.281 ms",
            "198 ms / 22.288 ms",
            "200 ms / 58.552 ms",
            "195 ms / 172.925 ms",
        ],
    }
)


def summary_dict(
    head: pd.DataFrame,
    rec: pd.DataFrame,
    matrix: pd.DataFrame,
    not_measured_df: pd.DataFrame,
    variants_df: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """summary.json's content: headline numbers per variant, recommendations, the lowering verdicts,
    and the timed-mode variants that did not lower (``variants_df`` rows whose status is not "timed")."""
    cols = [
        "mode",
        "kernel",
        "T",
        "loop_form",
        "unroll",
        "lower_ms",
        "compile_ms",
        "ms_per_call",
        "ms_q25",
        "ms_q75",
        "ms_vs_python",
        "compile_vs_fori1",
        "error_vs_tolerance",
    ]
    goals = {}
    hand = rec[rec.loop_form == "hand_unrolled"] if len(rec) else rec
    for (mode, kernel), g in hand.groupby(["mode", "kernel"]) if len(hand) else []:
        goals[f"{mode}/{kernel}"] = {
            str(int(r["T"])): {
                k: r[k]
                for k in (
                    "unroll",
                    "ms_vs_python",
                    "compile_vs_fori1",
                    "exec_within_5pct_of_python",
                    "compile_within_1.5x_of_fori1",
                    "goal_met",
                )
            }
            for _, r in g.iterrows()
        }
    lowers = matrix.groupby(["compiler", "loop_form", "unroll"])["lowers"].all().reset_index()
    return {
        "headline": head[[c for c in cols if c in head]].to_dict(orient="records"),
        "recommendation": rec.to_dict(orient="records"),
        "goals_hand_unrolled": goals,
        "lowering": lowers.to_dict(orient="records"),
        "lowering_errors": matrix[~matrix.lowers]
        .drop_duplicates(["compiler", "error"])[["compiler", "loop_form", "unroll", "error_type", "error"]]
        .to_dict(orient="records"),
        "lowering_warnings": sorted(set(matrix.loc[matrix["warning"] != "", "warning"])),
        "not_measured": not_measured_df.to_dict(orient="records"),
        "did_not_lower": (
            []
            if variants_df is None
            else variants_df[variants_df["status"] != "timed"][
                ["mode", "kernel", "T", "variant", "status"]
            ].to_dict(orient="records")
        ),
    }


def lowering_answer(matrix: pd.DataFrame) -> list[str]:
    """Bullets from the lowering matrix: where unroll > 1 fails, and whether the
    hand-unrolled loop lowers wherever fori_loop(unroll=1) does."""
    lines = []
    keys = ["kernel", "compiler", "T"]
    for compiler, g in matrix.groupby("compiler", sort=False):
        base = g[(g.loop_form == "fori") & (g.unroll == 1) & g.lowers][keys]
        # only failures caused by the unroll: where unroll=1 lowered for the same kernel and T
        failing = g[(g.unroll > 1) & ~g.lowers & g.loop_form.isin(["fori", "pl_loop"])].merge(base, on=keys)
        hand = g[g.loop_form == "hand_unrolled"].merge(base, on=keys)
        if len(failing):
            errors = ", ".join(sorted(set(failing.error_type)))
            unrolls = ", ".join(map(str, sorted(set(failing.unroll))))
            lines.append(
                f"- {compiler}: `fori_loop`/`pl.loop` fail with unroll in {{{unrolls}}} ({errors}) "
                f"in {len(failing)} of the cases where unroll=1 lowers; "
                f"the hand-unrolled loop lowers in {int(hand.lowers.sum())} of the {len(hand)} cases "
                "where `fori_loop(unroll=1)` does."
            )
        else:
            lines.append(f"- {compiler}: every unroll of `fori_loop`/`pl.loop` lowers where unroll=1 does.")
    return lines


def answer_lines(head: pd.DataFrame, rec: pd.DataFrame) -> list[str]:
    """One bullet per (mode, kernel): the issue's comparison at the largest T with a Python
    loop, and how often the hand-unrolled loop met the goal."""
    lines = []
    for (mode, kernel), g in head.groupby(["mode", "kernel"], sort=False):
        with_python = g[g.variant == "python"]
        if with_python.empty or "fori u=1" not in set(g.variant):
            continue
        T = int(with_python["T"].max())
        at = g[g["T"] == T].set_index("variant")
        py, f1 = at.loc["python"], at.loc["fori u=1"]
        text = (
            f"- {MODE_LABELS[mode]}, `{kernel}`, T={T}: fori_loop(unroll=1) takes {_fmt(f1.ms_per_call)} ms "
            f"per call vs the Python loop's {_fmt(py.ms_per_call)} ms ({_fmt(f1.ms_vs_python)}x), and compiles "
            f"in {_fmt(f1.compile_ms)} ms vs {_fmt(py.compile_ms)} ms"
        )
        r = rec[(rec["mode"] == mode) & (rec["kernel"] == kernel) & (rec.loop_form == "hand_unrolled")]
        hit = r[r["T"] == T]
        if len(hit):
            h = hit.iloc[0]
            text += (
                f"; the hand-unrolled loop (unroll={int(h.unroll)}) takes {_fmt(h.ms_per_call)} ms "
                f"({_fmt(h.ms_vs_python)}x the Python loop), compiling in {_fmt(h.compile_vs_fori1)}x "
                f"fori_loop(unroll=1)'s time"
            )
        judged = [v for v in r["goal_met"] if v is not None and not pd.isna(v)]
        if judged:
            text += f". Goal (within 5% of the Python loop, within 1.5x the compile) met at {sum(map(bool, judged))} of {len(judged)} T"
        lines.append(text + ".")
    return lines


def _fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.3g}"


def summary_markdown(
    head: pd.DataFrame, rec: pd.DataFrame, matrix: pd.DataFrame, not_measured_df: pd.DataFrame, *, device: str
) -> str:
    """An issue-ready answer to jax-ml/jax#20909, with numbers."""
    from .records import markdown_table

    parts = [
        "## Pallas loops: fori_loop vs a Python loop, and the unroll sweep (jax-ml/jax#20909)",
        "",
        f"Measured on: {device}.",
        "",
        "The issue's numbers (RTX A6000, jax 0.4.25, fp16, B=512, D=64; from jax-ml/jax#20909):",
        "",
        markdown_table(SEED_ISSUE_TABLE),
        "",
        "### The answer, in numbers",
        "",
        *lowering_answer(matrix),
        *answer_lines(head, rec),
        "",
    ]
    for mode in dict.fromkeys(head["mode"]):
        for kernel in dict.fromkeys(head[head["mode"] == mode]["kernel"]):
            parts += [
                f"### {MODE_LABELS[mode]}, kernel `{kernel}`",
                "",
                "Same format as the issue (compile ms / ms per kernel call, medians):",
                "",
                markdown_table(seed_table(head, mode, kernel)),
                "",
            ]
            r = rec[(rec["mode"] == mode) & (rec["kernel"] == kernel)]
            if len(r):
                cols = [
                    c
                    for c in [
                        "T",
                        "loop_form",
                        "unroll",
                        "ms_per_call",
                        "compile_ms",
                        "ms_vs_python",
                        "compile_vs_fori1",
                        "goal_met",
                    ]
                    if c in r
                ]
                parts += [
                    "Smallest unroll within 5% of that form's best (ms_vs_python: median per-repeat ratio):",
                    "",
                    markdown_table(r[cols]),
                    "",
                ]
    verdict = _lowering.verdicts(matrix)
    parts += [
        "### Which loop forms lower (jax.export, no accelerator needed)",
        "",
        markdown_table(verdict),
        "",
        _lowering.error_lines(matrix),
        _lowering.warning_lines(matrix),
    ]
    if len(not_measured_df):
        parts += ["", "Not measured here (never simulated):", ""]
        for _, n in not_measured_df.drop_duplicates(["mode", "reason"]).iterrows():
            parts.append(f"- {MODE_LABELS.get(n['mode'], n['mode'])}: {n['reason']}")
    return "\n".join(parts)


# --- figures -------------------------------------------------------------------


def _facets(n: int, width: float = 5.0, height: float = 3.8):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def _variant_order(df: pd.DataFrame) -> list[str]:
    pairs = df.drop_duplicates("variant")[["loop_form", "unroll", "variant"]].itertuples(index=False)
    return [v for _, _, v in sorted(pairs, key=lambda p: (_vocab.LOOP_FORMS.index(p[0]), p[1]))]


def key_variants(df: pd.DataFrame) -> list[str]:
    """The lines worth a curve: the Python loop, fori_loop(unroll=1) and the portable
    hand-unrolled loop at every unroll (every form is in the heatmap)."""
    keep = df[df.variant.isin(["python", "fori u=1"]) | (df.loop_form == "hand_unrolled")]
    return _variant_order(keep)


def plot_ms_vs_T(timings: pd.DataFrame, mode: str, variants: Sequence[str] | None = None):
    """ms per kernel call vs T per loop form (log-log, the seed's curve); median line, IQR band.

    ``variants`` defaults to :func:`key_variants`.
    """
    data = timings[timings["mode"] == mode]
    data = data[data.variant.isin(key_variants(data) if variants is None else variants)]
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = _facets(len(kernels))
    stats = []
    for ax, kernel in zip(axes, kernels):
        part = data[data.kernel == kernel]
        s = plots.median_iqr_lines(
            ax, part, "T", "ms_per_call", "variant", hue_order=_variant_order(part), logx=True, logy=True
        )
        stats.append(s.assign(kernel=kernel))
        ax.set(
            title=f"{kernel}: {MODE_LABELS[mode]}",
            xlabel="T (sequence length)",
            ylabel="ms per kernel call (median, IQR band)",
        )
        ax.legend(fontsize=7)
    return fig, pd.concat(stats, ignore_index=True)


def plot_compile_vs_T(variants_df: pd.DataFrame, mode: str, variants: Sequence[str] | None = None):
    """Compile time (ms, median of the compiles) vs T per loop form, log-log; ``variants`` as in plot_ms_vs_T."""
    data = variants_df[(variants_df["mode"] == mode) & (variants_df["status"] == "timed")]
    data = data[data.variant.isin(key_variants(data) if variants is None else variants)]
    kernels = list(dict.fromkeys(data.kernel))
    fig, axes = _facets(len(kernels))
    for ax, kernel in zip(axes, kernels):
        part = data[data.kernel == kernel]
        for name in _variant_order(part):
            v = part[part.variant == name].sort_values("T")
            ax.plot(v["T"], v["compile_ms"], marker="o", ms=4, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set(
            title=f"{kernel}: {MODE_LABELS[mode]}", xlabel="T (sequence length)", ylabel="compile ms (median)"
        )
        ax.legend(fontsize=7)
    return fig, data[["mode", "kernel", "T", "variant", "loop_form", "unroll", "lower_ms", "compile_ms"]]


def plot_unroll_heatmap(head: pd.DataFrame, mode: str, loop_forms: Sequence[str] = UNROLLED_FORMS):
    """Heatmap of T x unroll: median ms per call relative to the Python loop (<1: faster)."""
    import seaborn as sns

    data = head[(head["mode"] == mode) & head.loop_form.isin(loop_forms)]
    kernels = list(dict.fromkeys(data.kernel))
    forms = [f for f in loop_forms if f in set(data.loop_form)]
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(kernels), len(forms), figsize=(4.2 * len(forms), 3.4 * len(kernels)), squeeze=False
    )
    for i, kernel in enumerate(kernels):
        for j, form in enumerate(forms):
            part = data[(data.kernel == kernel) & (data.loop_form == form)]
            grid = part.pivot_table(index="T", columns="unroll", values="ms_vs_python")
            sns.heatmap(
                grid,
                ax=axes[i][j],
                annot=True,
                fmt=".2f",
                cmap="RdBu_r",
                center=1.0,
                cbar=j == len(forms) - 1,
            )
            axes[i][j].set(title=f"{kernel}, {form}", xlabel="unroll", ylabel="T")
    fig.suptitle(f"ms per call / Python loop's (median per-repeat ratio), {MODE_LABELS[mode]}")
    return fig, data[["mode", "kernel", "T", "loop_form", "unroll", "ms_per_call", "ms_vs_python"]]


def plot_ir_size(matrix: pd.DataFrame):
    """Kernel IR lines vs T for the key variants (:func:`key_variants`), per compiler and kernel."""
    data = matrix[matrix.lowers].assign(
        variant=lambda d: [variant_name(f, u) for f, u in zip(d.loop_form, d.unroll)]
    )
    data = data[data.variant.isin(key_variants(data))]
    compilers = list(dict.fromkeys(data.compiler))
    kernels = list(dict.fromkeys(data.kernel))
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(kernels),
        max(len(compilers), 1),
        figsize=(5 * max(len(compilers), 1), 3.8 * len(kernels)),
        squeeze=False,
    )
    for i, kernel in enumerate(kernels):
        for j, compiler in enumerate(compilers):
            ax = axes[i][j]
            part = data[(data.compiler == compiler) & (data.kernel == kernel)]
            if part.empty:
                ax.text(
                    0.5,
                    0.5,
                    "no variant lowers\n(errors in lowering_matrix.csv)",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    color="0.4",
                )
                ax.set(title=f"{kernel}: {compiler}", xticks=[], yticks=[])
                continue
            for name in _variant_order(part):
                v = part[part.variant == name].sort_values("T")
                ax.plot(v["T"], v["ir_lines"], marker="o", ms=3, label=name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set(title=f"{kernel}: {compiler}", xlabel="T", ylabel="kernel IR lines")
            ax.legend(fontsize=6, ncol=2)
    return fig, data[
        ["kernel", "compiler", "T", "loop_form", "unroll", "variant", "ir_lines", "loop_ops", "lower_s"]
    ]


# --- the notebook's plan -----------------------------------------------------------

QUICK = dict(
    xla_Ts=[256, 1024],
    interpret_Ts=[256],
    device_Ts=[256, 2048],
    lowering_Ts=[256, 1024],
    unrolls=[1, 4],
    repeats=3,
    compile_repeats=1,
)
DEFAULT_DTYPE = {"cpu": "float32", "gpu": "float16", "tpu": "bfloat16"}


def settings(parameters: dict[str, Any]) -> dict[str, Any]:
    """Validate the notebook's parameters; return them with quick sizes and dtype resolved.

    Raises ValueError naming the parameter, its value and what is allowed.
    """
    p = dict(parameters)
    if not isinstance(p.get("quick"), bool):
        raise bad_value("quick", p.get("quick"), "True or False")
    if p["quick"]:
        p.update(QUICK)
    p.setdefault("timed_loop_forms", p.get("loop_forms"))
    for name in ("kernels", "loop_forms", "timed_loop_forms"):
        allowed = _vocab.KERNELS if name == "kernels" else _vocab.LOOP_FORMS
        if isinstance(p[name], str) or not p[name]:
            raise bad_value(name, p[name], f"a non-empty list of {allowed}")
        for v in p[name]:
            check_choice(f"{name}[...]", v, allowed)
    for name in ("xla_Ts", "interpret_Ts", "device_Ts", "lowering_Ts", "unrolls"):
        p[name] = check_ints(name, p[name])
    for name in (
        "D",
        "cpu_batch",
        "interpret_batch",
        "device_batch",
        "block_rows",
        "repeats",
        "compile_repeats",
    ):
        check_int(name, p[name], minimum=1)
    for name in ("xla_Ts", "interpret_Ts", "device_Ts", "lowering_Ts"):
        for T in p[name]:
            if T % p["block_rows"]:
                raise bad_value(f"{name}[...]", T, f"a multiple of block_rows={p['block_rows']}")
    if p["dtype"] != "auto":
        check_choice("dtype", p["dtype"], _inputs.DTYPES)
    for name in ("python_max_steps", "device_python_max_steps"):
        p.setdefault(name, {})
        if not isinstance(p[name], dict):
            raise bad_value(name, p[name], "a dict {kernel: steps}")
    return p


def plan(backend: str, p: dict[str, Any]) -> tuple[list[SweepConfig], pd.DataFrame]:
    """The sweeps to run on ``backend`` and the rows for what is not measured here.

    CPU: plain jit on XLA:CPU and Pallas interpret mode; the compiled Pallas
    kernel needs a GPU (Triton) or TPU (Mosaic), reported as not measured.
    GPU/TPU: the compiled kernel at the seed's sizes, and plain jit.
    """
    check_choice("backend", backend, ("cpu", "gpu", "tpu"))
    dtype = DEFAULT_DTYPE[backend] if p["dtype"] == "auto" else p["dtype"]
    tconf = timing.TimingConfig(warmup=1, repeats=p["repeats"], number=1, dispatch_only=False)
    limits = p["python_max_steps"] if backend == "cpu" else p["device_python_max_steps"]
    common = dict(
        kernels=p["kernels"],
        loop_forms=p["timed_loop_forms"],
        unrolls=p["unrolls"],
        D=p["D"],
        dtype=dtype,
        block_rows=p["block_rows"],
        timing=tconf,
        compile_repeats=p["compile_repeats"],
        python_max_steps=dict(limits),
    )
    configs = []
    if backend == "cpu":
        configs.append(SweepConfig(mode="xla", Ts=p["xla_Ts"], batch=p["cpu_batch"], **common))
        configs.append(
            SweepConfig(mode="pallas_interpret", Ts=p["interpret_Ts"], batch=p["interpret_batch"], **common)
        )
        missing = not_measured(
            "pallas",
            "no GPU or TPU on this machine: the compiled Triton / Mosaic kernels "
            "were not timed (the lowering matrix still covers them)",
            p["kernels"],
        )
    else:
        configs.append(SweepConfig(mode="pallas", Ts=p["device_Ts"], batch=p["device_batch"], **common))
        configs.append(SweepConfig(mode="xla", Ts=p["device_Ts"], batch=p["device_batch"], **common))
        other = "tpu" if backend == "gpu" else "gpu"
        missing = not_measured("pallas", f"no {other.upper()} on this machine", p["kernels"]).assign(
            mode=f"pallas ({other})"
        )
    skipped = [c.skipped() for c in configs]
    return configs, pd.concat([missing, *skipped], ignore_index=True)


def run(configs: Sequence[SweepConfig], *, progress_bar: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every sweep in ``configs``; returns (variants, timings) for all modes."""
    metas, times = [], []
    for cfg in configs:
        meta, tm = sweep(cfg, progress=progress_bar)
        metas.append(meta)
        times.append(tm)
    return pd.concat(metas, ignore_index=True), pd.concat(times, ignore_index=True)


def total_variants(configs: Sequence[SweepConfig]) -> int:
    return sum(len(c.variants(k, T)) for c in configs for k in c.kernels for T in c.Ts)


def lowering_matrix(p: dict[str, Any], *, progress_bar: Any = None) -> pd.DataFrame:
    """The lowering matrix at the notebook's sizes (the seed's fp16 on GPU, bf16 on TPU)."""
    return _lowering.matrix(
        p["kernels"],
        p["loop_forms"],
        p["unrolls"],
        _lowering.COMPILERS,
        p["lowering_Ts"],
        progress=progress_bar,
        D=p["D"],
        batch=4,
        dtype="float16",
        block_rows=p["block_rows"],
    )


def lowering_count(p: dict[str, Any]) -> int:
    return (
        len(p["kernels"])
        * len(p["lowering_Ts"])
        * len(_lowering.variants(p["loop_forms"], p["unrolls"]))
        * len(_lowering.COMPILERS)
    )


def save_figures(
    study: Any, matrix: pd.DataFrame, variants_df: pd.DataFrame, timings: pd.DataFrame, head: pd.DataFrame
) -> list[str]:
    """Draw and save every figure of the study (per mode where timed); returns their names."""
    import matplotlib.pyplot as plt

    drawn = []

    def save(fig, data, name, drawn_by, note=""):
        study.figure(fig, name, data, drawn_by=f"loop_study.{drawn_by}", note=note)
        plt.close(fig)
        drawn.append(name)

    for mode in dict.fromkeys(timings["mode"]):
        note = MODE_LABELS[mode]
        save(*plot_ms_vs_T(timings, mode), f"ms_per_call_vs_T_{mode}", "plot_ms_vs_T", note)
        save(*plot_compile_vs_T(variants_df, mode), f"compile_ms_vs_T_{mode}", "plot_compile_vs_T", note)
        if "ms_vs_python" in head:
            save(*plot_unroll_heatmap(head, mode), f"unroll_heatmap_{mode}", "plot_unroll_heatmap", note)
    if matrix["lowers"].any():
        save(
            *plot_ir_size(matrix),
            "ir_lines_vs_T",
            "plot_ir_size",
            "kernel IR from jax.export, no accelerator",
        )
    return drawn
