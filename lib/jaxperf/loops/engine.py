"""The loop study's engine: does a Pallas kernel pay for ``fori_loop``? Behind :func:`run`,
``python -m jaxperf loops`` (:mod:`jaxperf.loops.cli`) and notebook 02; the study's own kernels
go through it as a reader's do. For a factory (:mod:`jaxperf.loops.factory`), forms and T: every
(form, T) is built first (bad input fails before work); every form runs in Pallas' interpreter and
is compared with the factory's ``reference`` (else ``fori``), and only forms that agree are
exported and compiled for each target here (:mod:`jaxperf.loops.targets`), then, on a GPU or TPU,
timed interleaved. :func:`per_step` turns compiles into the work each extra loop step costs.
Nothing is simulated: a missing target is "not present here", a point past the budget "not reached".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..compilers.lowering import COMPILERS, error_text
from ..errors import check_ints
from . import targets as tg
from .factory import FactoryError, Kernel, check_forms, check_plan, difference, load, materialize, tolerance

KEYS = ["kernel", "form", "T"]
BUDGET_S = 300.0  # a kernel's compiles, seconds: points past it are "not reached"
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
    """One row per (form, T): the form in Pallas' interpreter against the factory's ``reference``
    (else the ``fori`` form; column ``against``), with ``same_result`` and ``difference`` or the error."""
    import jax

    fori = "fori" if "fori" in forms else "fori u=1"
    against = "your reference" if kernel.reference is not None else "fori_loop"
    rows = []
    for T in Ts:
        outs: dict[str, Any] = {}
        expected: Any = None
        for form in [fori, *[f for f in forms if f != fori]]:
            row: dict[str, Any] = dict(kernel=kernel.name, form=form, T=T, against=against)
            fn, args = build(kernel, form, T, interpret=True)
            try:
                arrays = materialize(args)
                outs[form] = jax.device_get(fn(*arrays))
                if kernel.reference is not None and expected is None:
                    expected = jax.device_get(kernel.reference(*arrays))
            except Exception as err:  # noqa: BLE001 - a form that fails to run is a result
                error = f"{type(err).__name__}: {error_text(err)}"
                rows.append(row | dict(same_result=False, difference=None, error=error))
                continue
            ref = expected if kernel.reference is not None else outs.get(fori)
            if ref is None:
                rows.append(row | dict(same_result=False, difference=None, error="the fori form did not run"))
                continue
            diff = difference(outs[form], ref)
            dtype = jax.tree.leaves(ref)[0].dtype
            rows.append(row | dict(same_result=bool(diff <= tolerance(dtype)), difference=diff, error=""))
    return pd.DataFrame(rows, columns=[*KEYS, "against", "same_result", "difference", "error"])


def build(kernel: Kernel, form: str, T: int, **options: Any) -> tuple[Any, tuple]:
    """``kernel.build``; any exception the factory raises becomes a :class:`FactoryError`."""
    try:
        return kernel.build(form, T, **options)
    except Exception as err:  # noqa: BLE001 - the factory's own error, named with its point
        raise FactoryError(kernel, form, T, err) from err


class Progress:
    """Progress lines on stderr (``log``), and the kernel's time budget: :meth:`left` is the
    seconds left, :meth:`spent` whether the budget is gone."""

    def __init__(self, budget_s: float, log: Any = None) -> None:
        self.start, self.budget_s, self.log = time.monotonic(), float(budget_s), log

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.start)

    def spent(self) -> bool:
        return self.left() <= 0

    def say(self, text: str) -> None:
        if self.log is not None:
            print(f"[loops {time.monotonic() - self.start:5.0f} s] {text}", file=self.log, flush=True)


def compile_results(
    kernel: Kernel, forms: Sequence[str], Ts: Sequence[int], here: dict[str, str], clock: Progress
) -> pd.DataFrame:
    """One row per (form, T, target): status, compile_ms, work and loop steps per program, the
    work's classes. A compiler with no target here is still exported ("does it lower"). Points run
    smallest T first; one past ``clock``'s budget, or predicted to end past it, is "not reached"."""
    rows: list[dict[str, Any]] = []
    took: dict[tuple[str, str], tuple[int, float]] = {}  # (target, form) -> (T, seconds) last compiled
    asked = {t: v for t, v in tg.TARGETS.items() if here.get(t) != NOT_ASKED}
    for T in Ts:
        for target, (compiler, _, unit) in asked.items():
            base = dict(kernel=kernel.name, target=target, unit=unit, T=T)
            if not here.get(target) and compiler == "mosaic_gpu":
                if clock.spent():
                    rows += [base | dict(form=f, status=tg.NOT_REACHED, error="") for f in forms]
                    continue
                got = tg.mosaic_gpu_points(kernel, [(f, T) for f in forms], budget_s=max(clock.left(), 1.0))
                rows += [base | dict(form=f) | g for f, g in zip(forms, got, strict=True)]
                continue
            for form in forms:
                guess = _predicted_s(took.get((target, form)), T)
                if clock.spent() or guess > clock.left():
                    why = f"predicted {guess:.1f} s, {clock.left():.1f} s of the budget left"
                    why = "" if clock.spent() else why
                    rows.append(base | dict(form=form, status=tg.NOT_REACHED, error=why))
                    clock.say(f"{target}, {form}, T={T}: not reached {why}")
                    continue
                started = time.monotonic()
                if here.get(target):
                    row = tg.lowers(kernel, form, T, compiler) | {"compiled": here[target]}
                else:
                    row = tg.compile_point(kernel, form, T, target)
                took[(target, form)] = (T, time.monotonic() - started)
                rows.append(base | dict(form=form) | row)
                clock.say(f"{target}, {form}, T={T}: {row['status']} ({time.monotonic() - started:.0f} s)")
    return pd.DataFrame(rows)


def _predicted_s(last: tuple[int, float] | None, T: int) -> float:
    """A point's compile seconds from a smaller T's, growing as T squared (an unrolled Python
    loop's compile grows faster than its length); 0 without one."""
    return 0.0 if last is None else last[1] * (T / last[0]) ** 2


DEVICE_COMPILER = {"tpu": "mosaic_tpu", "gpu": "triton"}  # what a device's factory is asked to build for
SCAN = 16  # calls per timed call: the reporter's N, so a call's fixed cost is spread over them
UNEQUAL = "not shown equal to fori_loop's here"


def time_results(
    kernel: Kernel, forms: Sequence[str], Ts: Sequence[int], *, repeats: int = 5, clock: Any = None
) -> pd.DataFrame:
    """On a GPU or TPU: each form built for the device's compiler (:data:`DEVICE_COMPILER`), run,
    checked against ``fori`` there (run first), then timed interleaved, :data:`SCAN` calls at a time
    in one jitted scan (:func:`jaxperf.timing.amortised`): rows (form, T, repeat) with ms_per_call.
    A form that does not compile, fails or differs is one row with its ``status`` and ``error``; one
    past ``clock``'s budget (a :class:`Progress`) "not reached". Empty on a CPU (no kernel runs there)."""
    import jax

    from .. import timing

    compiler, clock, rows = DEVICE_COMPILER.get(jax.default_backend()), clock or Progress(BUDGET_S), []
    frames = [pd.DataFrame(columns=[*KEYS, "repeat", "ms_per_call", "status", "error"])]
    for T in Ts if compiler else ():
        calls: dict[str, Any] = {}
        ref = inputs = None
        for form in sorted(forms, key=lambda f: f not in ("fori", "fori u=1")):  # fori_loop's first
            row: dict[str, Any] = dict(kernel=kernel.name, form=form, T=T, status=tg.NOT_REACHED, error="")
            fn, args = build(kernel, form, T, compiler=compiler)
            try:  # the inputs made once per T: every form of a factory takes the same
                inputs = materialize(args) if inputs is None and not clock.spent() else inputs
                out = None if clock.spent() else jax.device_get(fn(*(inputs or ())))
                ref = out if form in ("fori", "fori u=1") else ref
                same = out is not None and ref is not None
                same = same and difference(out, ref) <= tolerance(jax.tree.leaves(ref)[0].dtype)
                row |= {} if same or out is None else dict(status=tg.FAILED, error=UNEQUAL)
                calls |= {form: timing.amortised(fn, SCAN).lower(*(inputs or ())).compile()} if same else {}
            except Exception as err:  # noqa: BLE001 - a form the device cannot run is a result
                row |= tg.failure(str(compiler), err)
            rows += [] if form in calls else [row]
            clock.say(f"{compiler}, {form}, T={T}: {'compiled' if form in calls else row['status']}")
        if calls:
            config = timing.TimingConfig(warmup=1, repeats=repeats, number=1, dispatch_only=False)
            timed = {f: (lambda c=c, x=inputs: c(*x)) for f, c in calls.items()}
            frame = timing.compare(timed, config, kernel=kernel.name, T=T).rename(columns={"variant": "form"})
            frames.append(frame.assign(ms_per_call=frame["wall_s_per_call"] * 1e3 / SCAN, status=tg.OK))
    return pd.concat([*frames, pd.DataFrame(rows)], ignore_index=True)


def run(
    path: str,
    forms: Sequence[str] = ("python", "fori", "fori u=4", "hand_unrolled u=4"),
    Ts: Sequence[int] = (1024, 2048),
    *,
    check_Ts: Sequence[int] | None = None,
    targets: Sequence[str] | None = None,
    repeats: int = 5,
    budget_s: float = BUDGET_S,
    log: Any = None,
    timed: bool = True,
) -> Results:
    """The engine on ``path`` (``"package.module:factory"``; see the module docstring). ``check_Ts``:
    the T the interpreter checks at (default: the smallest of ``Ts``, which needs two values for
    :func:`per_step`); ``targets``: the compiled targets (default: every one here); ``budget_s``
    bounds the compiles and the timing (``timed=False``: compiles only); ``log`` gets one progress
    line per point. ValueError names the parameter
    for bad input; :class:`FactoryError` (a ValueError) when the factory raises anything else."""
    kernel = load(path)
    forms = check_forms(kernel, forms)
    Ts = sorted(set(check_ints("T", Ts)))
    check_Ts = sorted(set(check_ints("check_Ts", check_Ts))) if check_Ts is not None else Ts[:1]
    if not budget_s > 0:
        raise ValueError(f"budget_s={budget_s!r} is not allowed: expected seconds > 0.")
    clock = Progress(budget_s, log)
    check_plan(kernel, forms, sorted(set(Ts) | set(check_Ts)))
    here = tg.present()
    if targets is not None:
        unknown = [t for t in targets if t not in tg.TARGETS]
        if unknown:
            raise ValueError(
                f"targets={list(targets)!r} is not allowed: expected a list of {list(tg.TARGETS)}."
            )
        here = {t: (r if t in targets else NOT_ASKED) for t, r in here.items()}
    clock.say(f"{kernel.path}: checking {len(forms)} forms at T={check_Ts} in the interpreter")
    checks = check_results(kernel, forms, check_Ts)
    wrong = set(checks.loc[~checks.same_result.astype(bool), "form"])
    passed = [f for f in forms if f not in wrong]
    points = compile_results(kernel, passed, Ts, here, clock)
    timings = time_results(kernel, passed, Ts if timed else (), repeats=repeats, clock=clock)
    return Results(
        kernel.name, checks, points, timings, {t: r for t, r in here.items() if r and r != NOT_ASKED}
    )


def _pair(
    part: pd.DataFrame, prefer: AbstractSet[tuple[int, int]] = frozenset()
) -> tuple[pd.Series, pd.Series] | None:
    """The largest two T of one (target, form) with the same number of loops left in the code (ptxas
    may unroll a loop fully at one T and not the next), a pair in ``prefer`` first."""
    pairs = _matched(part)
    shared = [p for p in pairs if (int(p[0]["T"]), int(p[1]["T"])) in prefer]
    return max(shared or pairs, key=lambda p: (p[1]["T"], p[0]["T"])) if pairs else None


def _matched(part: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    """Every (smaller T, larger T) pair of rows with the same loop structure."""
    rows = [r for _, r in part.sort_values("T").iterrows()]
    return [(a, b) for j, b in enumerate(rows) for a in rows[:j] if _loops(a) == _loops(b)]


def _loops(row: pd.Series) -> Any:
    value = row.get("loops_in_code")
    return None if value is None or pd.isna(value) else int(value)


def per_step(points: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, target, form): (work2 - work1) / (steps2 - steps1) from the largest two T with a
    count and the same loop structure, in the target's unit, split into ``classes`` (SASS classes or
    TPU slots); the work at T2 over the Python loop's. Without such a pair: None, and a ``note``."""
    cols = ["kernel", "target", "unit", "form", "T1", "T2", "per_step", "vs_python_at_T2", "classes", "note"]
    if points.empty or "form" not in points.columns:
        return pd.DataFrame(columns=cols)
    pts = points.assign(
        **{c: points.get(c) for c in ("work_per_program", "steps", "loops_in_code", "classes")}
    )
    rows = []
    for (kernel, target, form), group in pts.groupby(["kernel", "target", "form"], sort=False):
        ok = group[(group.status == tg.OK) & group.work_per_program.notna() & group.steps.notna()]
        base = dict(kernel=kernel, target=target, unit=group.unit.iloc[0], form=form)
        compiled = "compile_ms" not in group or group.compile_ms.notna().any()
        if not compiled and not (~group.status.isin([tg.OK, tg.NOT_PRESENT])).any():
            continue  # exported only, or not present here: no count to claim (listed as not compiled)
        pair = _pair(ok, _shared_pairs(pts, kernel, target)) if ok["T"].nunique() >= 2 else None
        if pair is None:
            reached = ", ".join(f"T={int(r['T'])}: {_why(r)}" for _, r in group.sort_values("T").iterrows())
            note = f"loop structure differs at every pair of T with a count ({reached})"
            note = note if ok["T"].nunique() >= 2 else f"no two T with a count ({reached})"
            rows.append(base | dict.fromkeys(["T1", "T2", "per_step", "vs_python_at_T2", "classes"]))
            rows[-1]["note"] = note
            continue
        low, high = pair
        extra = float(high.steps - low.steps)
        py_all = pts[(pts.kernel == kernel) & (pts.target == target) & (pts.form == "python")]
        python = py_all[(py_all["T"] == high["T"]) & py_all.work_per_program.notna()]
        classes = None
        if isinstance(low.classes, dict) and isinstance(high.classes, dict) and extra:
            classes = {
                k: (high.classes[k] - low.classes.get(k, 0)) / extra
                for k in high.classes
                if high.classes[k] is not None and low.classes.get(k) is not None
            }
        work1, work2 = float(low.work_per_program), float(high.work_per_program)
        py_work = float(python.work_per_program.iloc[0]) if len(python) else 0.0  # 0: no ratio
        T1, T2 = int(low["T"]), int(high["T"])
        note = f"{_plural(_loops(high))} in the code at T={T1} and T={T2}"
        per = (work2 - work1) / extra if extra else None
        ratio = work2 / py_work if py_work else None
        rows.append(
            base | dict(T1=T1, T2=T2, per_step=per, vs_python_at_T2=ratio, classes=classes, note=note)
        )
    return pd.DataFrame(rows, columns=cols)


def _shared_pairs(pts: pd.DataFrame, kernel: str, target: str) -> set[tuple[int, int]]:
    """The T pairs matched in both the Python loop and fori_loop on one target (compared alike)."""
    mine = pts[(pts.kernel == kernel) & (pts.target == target) & (pts.status == tg.OK)]
    mine = mine[mine.work_per_program.notna() & mine.steps.notna()]
    found = [
        {(int(a["T"]), int(b["T"])) for a, b in _matched(mine[mine.form == f])}
        for f in ("python", "fori", "fori u=1")
        if f in set(mine.form)
    ]
    return set.intersection(*found) if len(found) >= 2 else set()


def _plural(loops: int | None) -> str:
    return "loops not counted" if loops is None else f"{loops} loop" + ("" if loops == 1 else "s")


def _why(row: pd.Series) -> str:
    if row.status != tg.OK:
        return str(row.status)
    if pd.isna(row.get("work_per_program")):
        return "no count (a loop whose trip count is not readable)"
    return f"counted ({_plural(_loops(row))})"


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
    row = part.iloc[
        0
    ]  # a limit's numbers are in its status; "not present here" is said once, under the table
    short = not row.error or row.status == tg.NOT_PRESENT or tg.EXCEEDS in row.status
    return str(row.status) if short else f"{row.status}: {row.error}"


def absent_note(points: pd.DataFrame) -> list[str]:
    """Each compiler's reason for "not present here", once (the Lowers table's rows say only that)."""
    gone = points[points.status == tg.NOT_PRESENT] if "status" in points else points.iloc[:0]
    why = dict.fromkeys(f"{tg.TARGETS[t][0]}: {e}" for t, e in zip(gone.target, gone.error))
    return ["Not present here: " + "; ".join(why) + ".", ""] if why else []
