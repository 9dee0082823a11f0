"""The loop study's engine: does a Pallas kernel pay for ``fori_loop``? One engine behind
three entry points (:func:`run`; ``python -m jaxperf loops package.module:factory --T ...``,
:mod:`jaxperf.loops.cli`; notebook 02's ``kernel`` parameter). The study's own kernels
(:mod:`jaxperf.jax20909.factories`) go through it as a reader's do.

For a factory (:mod:`jaxperf.jax20909.factory`), forms and T:

1. every (form, T) is built first: a bad form or a T the blocks cannot tile fails before work;
2. every form runs in Pallas' interpreter at the check T and is compared with the
   ``fori`` form: a form that differs is neither compiled nor timed ("wrong result");
3. every form that passed is exported (does it lower?) and compiled for each target this
   machine has (:mod:`jaxperf.loops.targets`), compile ms and work per program read;
4. on a GPU or TPU, the compiled forms are checked on the device and timed, interleaved.

:func:`per_step` turns the compiles into the work each extra loop step costs, per target and
form: the difference between the two largest T over the difference in loop steps. Nothing
here is simulated: a target that is not here is named "not present here", with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..compilers.lowering import COMPILERS, error_text
from ..errors import check_ints
from ..jax20909.factory import Kernel, check_forms, check_plan, difference, load, materialize, tolerance
from . import targets as tg

KEYS = ["kernel", "form", "T"]
NOT_ASKED = "not asked for"


@dataclass(frozen=True)
class Results:
    """What :func:`run` found for one kernel (tidy frames; see :func:`run`)."""

    kernel: str
    checks: pd.DataFrame
    points: pd.DataFrame
    timings: pd.DataFrame
    not_present: dict[str, str]

    def per_step(self) -> pd.DataFrame:
        return per_step(self.points)


def check_results(kernel: Kernel, forms: Sequence[str], Ts: Sequence[int]) -> pd.DataFrame:
    """Each form against the ``fori`` form in Pallas' interpreter, at each T: one row per (form,
    T) with ``same_result`` (True/False) and ``difference`` (largest |form - fori| over the
    largest |fori|; tolerance 1e-2 for 16-bit outputs, 1e-4 else), or the error."""
    import jax

    reference = "fori" if "fori" in forms else "fori u=1"
    rows = []
    for T in Ts:
        outs: dict[str, Any] = {}
        for form in [reference, *[f for f in forms if f != reference]]:
            row: dict[str, Any] = dict(kernel=kernel.name, form=form, T=T)
            try:
                fn, args = kernel.build(form, T, interpret=True)
                outs[form] = jax.device_get(fn(*materialize(args)))
            except Exception as err:  # noqa: BLE001 - a form that fails to run is a result
                rows.append(
                    row
                    | dict(
                        same_result=False, difference=None, error=f"{type(err).__name__}: {error_text(err)}"
                    )
                )
                continue
            if reference not in outs:
                rows.append(row | dict(same_result=False, difference=None, error="the fori form did not run"))
                continue
            diff = difference(outs[form], outs[reference])
            dtype = jax.tree.leaves(outs[reference])[0].dtype
            rows.append(row | dict(same_result=bool(diff <= tolerance(dtype)), difference=diff, error=""))
    return pd.DataFrame(rows, columns=[*KEYS, "same_result", "difference", "error"])


def compile_results(
    kernel: Kernel, forms: Sequence[str], Ts: Sequence[int], here: dict[str, str], *, progress: Any = None
) -> pd.DataFrame:
    """One row per (form, T, target): lowering and compile status, compile_ms, work per
    program, loop steps per program (see :mod:`jaxperf.loops.targets`). A compiler with no
    target here is still exported (``compile_ms`` empty) so "does it lower" is answered."""
    rows: list[dict[str, Any]] = []
    pairs = [(form, T) for T in Ts for form in forms]
    for target, (compiler, _, unit) in tg.TARGETS.items():
        base = dict(kernel=kernel.name, target=target, unit=unit)
        if here.get(target) == NOT_ASKED:
            continue
        if here.get(target):
            for form, T in pairs:
                rows.append(
                    base
                    | dict(form=form, T=T)
                    | tg.lowers(kernel, form, T, compiler)
                    | {"compiled": here[target]}
                )
        elif compiler == "mosaic_gpu":
            for (form, T), got in zip(pairs, tg.mosaic_gpu_points(kernel, pairs), strict=True):
                rows.append(base | dict(form=form, T=T) | got)
        else:
            rows += [base | dict(form=f, T=T) | tg.compile_point(kernel, f, T, target) for f, T in pairs]
        if progress is not None:
            progress.update(1)
    return pd.DataFrame(rows)


def time_results(
    kernel: Kernel, forms: Sequence[str], Ts: Sequence[int], *, repeats: int = 7
) -> pd.DataFrame:
    """On a GPU or TPU: each form compiled, checked against ``fori`` on the device, then timed
    interleaved (``jaxperf.timing.compare``); one row per (form, T, repeat) with ms_per_call.
    Empty on a CPU (the interpreter's times are no kernel's)."""
    import jax

    from .. import timing

    if jax.default_backend() not in ("gpu", "tpu"):
        return pd.DataFrame(columns=[*KEYS, "repeat", "ms_per_call"])
    frames = []
    for T in Ts:
        calls, outs = {}, {}
        for form in forms:
            fn, args = kernel.build(form, T)
            arrays = materialize(args)
            outs[form] = jax.device_get(fn(*arrays))
            calls[form] = lambda fn=fn, arrays=arrays: fn(*arrays)
        ref = outs.get("fori", outs.get("fori u=1"))
        dtype = jax.tree.leaves(ref)[0].dtype
        kept = {f: c for f, c in calls.items() if difference(outs[f], ref) <= tolerance(dtype)}
        config = timing.TimingConfig(warmup=2, repeats=repeats, number=5, dispatch_only=False)
        frame = timing.compare(kept, config, kernel=kernel.name, T=T).rename(columns={"variant": "form"})
        frames.append(frame.assign(ms_per_call=frame["wall_s_per_call"] * 1e3))
    return pd.concat(frames, ignore_index=True)


def run(
    path: str,
    forms: Sequence[str] = ("python", "fori", "fori u=4", "hand_unrolled u=4"),
    Ts: Sequence[int] = (1024, 2048),
    *,
    check_Ts: Sequence[int] | None = None,
    targets: Sequence[str] | None = None,
    repeats: int = 7,
    progress: Any = None,
) -> Results:
    """The engine on ``path`` (``"package.module:factory"``): see the module docstring.

    ``check_Ts`` are the T the interpreter checks every form at (default: the smallest of
    ``Ts``; a small T keeps the interpreter quick); ``targets`` limits the compiled targets
    (default: every one present here); ``Ts`` needs two values or more for :func:`per_step`. Raises ValueError, naming the parameter, for a
    factory that does not import, a form it cannot take, or a T its blocks cannot tile.
    """
    kernel = load(path)
    forms = check_forms(kernel, forms)
    Ts = sorted(set(check_ints("T", Ts)))
    check_Ts = sorted(set(check_ints("check_Ts", check_Ts))) if check_Ts is not None else Ts[:1]
    check_plan(kernel, forms, sorted(set(Ts) | set(check_Ts)))
    here = tg.present()
    if targets is not None:
        unknown = [t for t in targets if t not in tg.TARGETS]
        if unknown:
            raise ValueError(
                f"targets={list(targets)!r} is not allowed: expected a list of {list(tg.TARGETS)}."
            )
        here = {t: (r if t in targets else NOT_ASKED) for t, r in here.items()}
    checks = check_results(kernel, forms, check_Ts)
    wrong = set(checks.loc[~checks.same_result.astype(bool), "form"])
    passed = [f for f in forms if f not in wrong]
    points = compile_results(kernel, passed, Ts, here, progress=progress)
    timings = time_results(kernel, passed, Ts, repeats=repeats)
    return Results(
        kernel.name, checks, points, timings, {t: r for t, r in here.items() if r and r != NOT_ASKED}
    )


def per_step(points: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, target, form): the work each extra loop step costs, from the two largest T
    that compiled with a known count: (work2 - work1) / (steps2 - steps1), in the target's unit,
    and the form's work per program at the larger T over the Python loop's (None where absent)."""
    cols = ["kernel", "target", "unit", "form", "T1", "T2", "per_step", "vs_python_at_T2"]
    need = {"work_per_program", "steps"}
    if points.empty or not need <= set(points.columns):
        return pd.DataFrame(columns=cols)
    ok = points[(points.status == tg.OK) & points.work_per_program.notna() & points.steps.notna()]
    rows = []
    for (kernel, target, form), part in ok.groupby(["kernel", "target", "form"], sort=False):
        part = part.sort_values("T")
        if part["T"].nunique() < 2:
            continue
        low, high = part.iloc[-2], part.iloc[-1]
        extra = float(high.steps - low.steps)
        python = ok[
            (ok.kernel == kernel) & (ok.target == target) & (ok.form == "python") & (ok["T"] == high["T"])
        ]
        rows.append(
            dict(
                kernel=kernel,
                target=target,
                unit=high.unit,
                form=form,
                T1=int(low["T"]),
                T2=int(high["T"]),
                per_step=(float(high.work_per_program) - float(low.work_per_program)) / extra
                if extra
                else None,
                vs_python_at_T2=float(high.work_per_program) / float(python.work_per_program.iloc[0])
                if len(python)
                else None,
            )
        )
    return pd.DataFrame(rows, columns=cols)


def lowering_table(points: pd.DataFrame) -> pd.DataFrame:
    """Per (form, T): each compiler's verdict ("lowers", or the error's first words)."""
    if points.empty:
        return pd.DataFrame()
    by_compiler = points.assign(compiler=points.target.map(lambda t: tg.TARGETS[t][0]))
    cell = by_compiler.groupby(["form", "T", "compiler"], sort=False).apply(_verdict, include_groups=False)
    table = cell.unstack("compiler").reset_index()
    return table[["form", "T", *[c for c in COMPILERS if c in table.columns]]]


def _verdict(part: pd.DataFrame) -> str:
    statuses = set(part.status)
    if tg.OK in statuses:
        return "lowers"
    row = part.iloc[0]
    return f"{row.status}: {str(row.error)[:120]}"


def _ratio(value: Any, base: Any) -> float | None:
    return None if base is None or not float(base) > 0 else float(value) / float(base)
