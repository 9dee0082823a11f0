"""The loop study's engine (``python -m jaxperf loops``, notebook 02): each form of a factory
(:mod:`.factory`) checked in Pallas' interpreter; those that agree compiled for each target here
(:mod:`.targets`) and, on a GPU or TPU, timed. Nothing is simulated (:func:`run`)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import pandas as pd

from ..compilers.lowering import COMPILERS, error_text
from ..errors import bad_value, check_ints
from . import targets as tg
from .factory import FactoryError, Kernel, check_forms, check_plan, difference, load, materialize, tolerance
from .verdict import SCAN, measured

KEYS = ["kernel", "form", "T"]
BUDGET_S = 300.0  # a kernel's compiles and timing, seconds: points past it are "not reached"
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
    against, rows = "your reference" if kernel.reference is not None else "fori_loop", list[dict]()
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
                ref = expected if kernel.reference is not None else outs.get(fori)
                error = "" if ref is not None else "the fori form did not run"
            except Exception as err:  # noqa: BLE001 - a form that fails to run is a result
                error = f"{type(err).__name__}: {error_text(err)}"
            diff = None if error else difference(outs[form], ref)
            same = diff is not None and diff <= tolerance(jax.tree.leaves(ref)[0].dtype)
            rows.append(row | dict(same_result=bool(same), difference=diff, error=error))
    return pd.DataFrame(rows, columns=[*KEYS, "against", "same_result", "difference", "error"])


def build(kernel: Kernel, form: str, T: int, **options: Any) -> tuple[Any, tuple]:
    """``kernel.build``; any exception the factory raises becomes a :class:`FactoryError`."""
    try:
        return kernel.build(form, T, **options)
    except Exception as err:  # noqa: BLE001 - the factory's own error, named with its point
        raise FactoryError(kernel, form, T, err) from err


class Progress:
    """Progress lines on ``log`` (stderr), and the time budget: :meth:`left` seconds, :meth:`spent`."""

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
    """One row per (form, T, target): status, compile_ms, work and loop steps per program, its classes
    (a compiler with no target here only exports). The verdict's pair first (the Python loop, then
    fori_loop, at the two smallest T), the cheapest compiler so far first; then the other forms;
    then the larger T. A point past ``clock``'s budget or predicted past it (:func:`_predicted_s`) is
    "not reached"; so is every other form's where the Python loop's was not (no ratio without it)."""
    rows: list[dict[str, Any]] = []
    took: dict[tuple[str, str], list[tuple[int, float]]] = {}  # (compiler, form) -> its (T, seconds)
    cost: dict[str, list[float]] = {}  # compiler -> the seconds of each point it compiled
    missed: set[tuple[str, int]] = set()  # (target, T) where the Python loop's point was not reached
    asked = {t: v for t, v in tg.TARGETS.items() if here.get(t) != NOT_ASKED}
    pair = [f for f in ("python", "fori", "fori u=1") if f in forms]
    rest = [f for f in forms if f not in pair]
    for group, group_Ts in ((pair, Ts[:2]), (rest, Ts[:2]), (pair + rest, Ts[2:])):
        for target in sorted(asked, key=lambda t: fmean(cost.get(asked[t][0]) or [t != "mosaic_tpu v5e"])):
            compiler, _, unit = asked[target]
            base = dict(kernel=kernel.name, target=target, unit=unit)
            points = [(f, T) for f in group for T in group_Ts]
            if points and not here.get(target) and compiler == "mosaic_gpu":  # one worker for all its points
                got = [dict(status=tg.NOT_REACHED, error="")] * len(points)
                got = tg.mosaic_gpu_points(kernel, points, budget_s=clock.left()) if clock.left() > 0 else got
                rows += [base | dict(form=f, T=T) | g for (f, T), g in zip(points, got, strict=True)]
                points = []
            for form, T in points:
                last = took.get((compiler, form)) or took.get((compiler, "python"))
                both = [t for t in group_Ts if t >= T] if group is pair and form == "python" else [T]
                guess = sum(_predicted_s(last, t) for t in both)
                alone = form != "python" and (target, T) in missed
                if clock.spent() or guess > clock.left() or alone:
                    why = f"predicted {guess:.1f} s, {clock.left():.1f} s of the budget left"
                    why = "" if clock.spent() else ALONE if alone else why
                    if form == "python":  # at both T of the pair: one alone gives no count per step
                        missed |= {(target, t) for t in (group_Ts if group is pair else [T])}
                    rows.append(base | dict(form=form, T=T, status=tg.NOT_REACHED, error=why))
                    clock.say(f"{target}, {form}, T={T}: not reached {why}")
                    continue
                point = time.monotonic()
                if here.get(target):
                    row = tg.lowers(kernel, form, T, compiler) | {"compiled": here[target]}
                else:
                    row = tg.compile_point(kernel, form, T, target)
                took.setdefault((compiler, form), []).append((T, time.monotonic() - point))
                cost.setdefault(compiler, []).append(took[(compiler, form)][-1][1])
                rows.append(base | dict(form=form, T=T) | row)
                clock.say(f"{target}, {form}, T={T}: {row['status']} ({time.monotonic() - point:.0f} s)")
    order = {k: i for i, k in enumerate([*tg.TARGETS, *forms])}  # the tables' order: T, target, form
    return pd.DataFrame(sorted(rows, key=lambda r: (r["T"], order[r["target"]], order[r["form"]])))


ALONE = "the Python loop's point here was not reached (without it, no ratio)"


def _predicted_s(seen: tuple[int, float] | Sequence[tuple[int, float]] | None, T: int) -> float:
    """A compile's seconds at T from earlier ones, ``(T, seconds)`` or a list of them, latest last: from
    one, as T squared (an unrolled loop's code grows with T, and its compile can grow faster); from two
    at different T, at the power of T they grew by, held between 1 and 2 (a compile's fixed part made
    Mosaic TPU's grow 1.2x from T=256 to 65536, which T squared predicted at 27,000 s); 0 without."""
    points = [seen] if isinstance(seen, tuple) else list(seen or [])
    if not points:
        return 0.0
    (T1, s1), power = points[-1], 2.0
    earlier = [(t, s) for t, s in points[:-1] if t != T1 and s > 0]
    if earlier and s1 > 0:
        T0, s0 = earlier[-1]
        power = min(max(math.log(s1 / s0) / math.log(T1 / T0), 1.0), 2.0)
    return s1 * (T / T1) ** power


DEVICE_COMPILER = {"tpu": "mosaic_tpu", "gpu": "triton"}  # what a device's factory is asked to build for
LONGER, GROW = 16, 4  # sizing: a scan 16 times longer, then T 4 times larger
UNEQUAL = "not shown equal to fori_loop's here"


def time_results(
    kernel: Kernel,
    forms: Sequence[str],
    Ts: Sequence[int],
    *,
    repeats: int = 5,
    clock: Any = None,
    measure: Any = None,
) -> pd.DataFrame:
    """On a GPU or TPU, every form timed at each T (:func:`measure_round`), then sized until the loop
    shows above the per-call floor (:func:`jaxperf.loops.verdict.measured`): a scan :data:`LONGER`
    times longer, then the largest T :data:`GROW` and GROW² times larger, a step predicted past the
    budget (:func:`_round_s`) "not reached". Rows (form, T, scan, repeat) with ms_per_call, or one
    with a status and error; ``measure(forms, T, scan)`` stands in for a device."""
    import jax

    compiler, clock = DEVICE_COMPILER.get(jax.default_backend()), clock or Progress(BUDGET_S)
    frames = [pd.DataFrame(columns=[*KEYS, "scan", "repeat", "ms_per_call", "status", "error"])]
    if not Ts or measure is None and compiler is None:
        return frames[0]
    measure = measure or (lambda f, T, n: measure_round(kernel, f, T, n, str(compiler), repeats, clock))
    last, longer = None, SCAN * LONGER
    for todo, scan in [(Ts, SCAN), (Ts, longer), ([max(Ts) * GROW], longer), ([max(Ts) * GROW**2], longer)]:
        if last and measured(pd.concat(frames, ignore_index=True))["why"] != "floor":
            break
        guess = _round_s(*last, todo, scan, repeats) if last else 0.0
        if guess > max(clock.left(), 0.0):
            why = f"predicted {guess:.0f} s, {clock.left():.0f} s of the budget left"
            clock.say(f"T={list(todo)} in a scan of {scan}: not reached {why}")
            late = dict(kernel=kernel.name, form=list(forms), T=max(todo), scan=scan, status=tg.NOT_REACHED)
            frames.append(pd.DataFrame(late | dict(error=why)))
            break
        started = time.monotonic()
        frames.append(pd.concat([measure(forms, T, scan) for T in todo], ignore_index=True).assign(scan=scan))
        last = (frames[-1], time.monotonic() - started)
    return pd.concat(frames, ignore_index=True)


def _round_s(done: pd.DataFrame, took: float, Ts: Sequence[int], scan: int, repeats: int) -> float:
    """A sizing round's seconds from the last's rows and seconds: its builds, checks and compiles per
    T growing as T squared (:func:`_predicted_s`), its timed calls as T times the scan."""
    ok, ref = done.dropna(subset=["ms_per_call"]), int(done["T"].max())
    timed = (ok.ms_per_call * ok.scan / 1e3 * (1 + 1 / repeats)).groupby(ok["T"]).sum()
    rest = max(took - float(timed.sum()), 0.0) / done["T"].nunique()
    per_call = float(timed.get(ref, 0.0)) / int(done.scan.max())
    return sum(_predicted_s((ref, rest), T) + per_call * scan * T / ref for T in Ts)


def measure_round(
    kernel: Kernel, forms: Sequence[str], T: int, scan: int, compiler: str, repeats: int, clock: Progress
) -> pd.DataFrame:
    """Each form at ``T`` built for the device's ``compiler``, run, checked against ``fori`` (run first),
    then timed interleaved, ``scan`` calls in one jitted scan: rows (form, T, repeat) with ms_per_call;
    a form not built, compiled, run or equal is one row with its ``status`` and ``error``."""
    import jax

    from .. import timing

    calls: dict[str, Any] = {}
    ref = inputs = None
    rows = []
    for form in sorted(forms, key=lambda f: f not in ("fori", "fori u=1")):  # fori_loop's first
        row: dict[str, Any] = dict(kernel=kernel.name, form=form, T=T, status=tg.NOT_REACHED, error="")
        try:  # the inputs made once per T: every form of a factory takes the same
            fn, args = build(kernel, form, T, compiler=compiler)
            inputs = materialize(args) if inputs is None and not clock.spent() else inputs
            out = None if clock.spent() else jax.device_get(fn(*(inputs or ())))
            ref = out if form in ("fori", "fori u=1") else ref
            same = out is not None and ref is not None
            same = same and difference(out, ref) <= tolerance(jax.tree.leaves(ref)[0].dtype)
            row |= {} if same or out is None else dict(status=tg.FAILED, error=UNEQUAL)
            calls |= {form: timing.amortised(fn, scan).lower(*(inputs or ())).compile()} if same else {}
        except Exception as err:  # noqa: BLE001 - a form the device cannot run is a result
            row |= tg.failure(compiler, err)
        rows += [] if form in calls else [row]
        clock.say(f"{compiler}, {form}, T={T}, scan {scan}: {'compiled' if form in calls else row['status']}")
    if not calls:
        return pd.DataFrame(rows)
    config = timing.TimingConfig(warmup=1, repeats=repeats, number=1, dispatch_only=False)
    timed = {f: (lambda c=c, x=inputs: c(*x)) for f, c in calls.items()}
    frame = timing.compare(timed, config, kernel=kernel.name, T=T).rename(columns={"variant": "form"})
    frame = frame.assign(ms_per_call=frame["wall_s_per_call"] * 1e3 / scan, status=tg.OK)
    return pd.concat([frame, pd.DataFrame(rows)], ignore_index=True)


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
    """The engine on ``path`` (``"package.module:factory"``): every (form, T) built first, each form
    checked against the factory's ``reference`` (else ``fori``) at ``check_Ts`` (default: the smallest
    T), compiled for ``targets`` (default: every one here; a missing one "not present here") and timed
    (``timed``) within ``budget_s`` (a point past it "not reached"); ``log`` gets progress lines.
    ValueError names a bad parameter; :class:`FactoryError` when the factory raises anything else."""
    kernel = load(path)
    forms = check_forms(kernel, forms)
    Ts = sorted(set(check_ints("T", Ts)))
    check_Ts = sorted(set(check_ints("check_Ts", check_Ts))) if check_Ts is not None else Ts[:1]
    if not budget_s > 0:
        raise bad_value("budget_s", budget_s, "seconds > 0")
    clock = Progress(budget_s, log)
    check_plan(kernel, forms, sorted(set(Ts) | set(check_Ts)))
    here = tg.present()
    if targets is not None:
        if any(t not in tg.TARGETS for t in targets):
            raise bad_value("targets", list(targets), f"a list of {list(tg.TARGETS)}")
        here = {t: (r if t in targets else NOT_ASKED) for t, r in here.items()}
    clock.say(f"{kernel.path}: checking {len(forms)} forms at T={check_Ts} in the interpreter")
    checks = check_results(kernel, forms, check_Ts)
    passed = [f for f in forms if f not in set(checks.loc[~checks.same_result.astype(bool), "form"])]
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
    return None if pd.isna(value := row.get("loops_in_code")) else int(value)


def per_step(points: pd.DataFrame) -> pd.DataFrame:
    """Per (kernel, target, form): (work2 - work1) / (steps2 - steps1) from the largest two T with a
    count and the same loop structure, in the target's unit, split into ``classes`` (SASS classes or
    TPU slots); the work at T2 over the Python loop's. Without such a pair: None, and a ``note``."""
    cols = ["kernel", "target", "unit", "form", "T1", "T2", "per_step", "vs_python_at_T2", "classes", "note"]
    if points.empty or "form" not in points.columns:
        return pd.DataFrame(columns=cols)
    pts = points.assign(**{c: points.get(c) for c in ("work_per_program", "steps", "loops_in_code")})
    pts["classes"], rows = points.get("classes"), []
    for (kernel, target, form), group in pts.groupby(["kernel", "target", "form"], sort=False):
        ok = group[(group.status == tg.OK) & group.work_per_program.notna() & group.steps.notna()]
        base = dict(kernel=kernel, target=target, unit=group.unit.iloc[0], form=form)
        compiled = "compile_ms" not in group or group.compile_ms.notna().any()
        if not compiled and not (~group.status.isin([tg.OK, tg.NOT_PRESENT])).any():
            continue  # exported only, or not present here: no count to claim (listed as not compiled)
        pair = _pair(ok, _shared_pairs(pts, kernel, target)) if ok["T"].nunique() >= 2 else None
        if pair is None:
            reached = ", ".join(f"T={int(r['T'])}: {_why(r)}" for _, r in group.sort_values("T").iterrows())
            why = "loop structure differs at every pair of T with a count" if ok["T"].nunique() >= 2 else ""
            rows.append(base | dict(note=f"{why or 'no two T with a count'} ({reached})"))
            continue
        low, high = pair
        extra = float(high.steps - low.steps)
        py_all = pts[(pts.kernel == kernel) & (pts.target == target) & (pts.form == "python")]
        python = py_all[(py_all["T"] == high["T"]) & py_all.work_per_program.notna()]
        classes = None
        if isinstance(low.classes, dict) and isinstance(high.classes, dict) and extra:
            lo, hi = low.classes, high.classes
            classes = {k: (hi[k] - lo[k]) / extra for k in hi if hi[k] is not None and lo.get(k) is not None}
        work1, work2 = float(low.work_per_program), float(high.work_per_program)
        py_work = float(python.work_per_program.iloc[0]) if len(python) else 0.0  # 0: no ratio
        T1, T2 = int(low["T"]), int(high["T"])
        note = f"{_plural(_loops(high))} in the code at T={T1} and T={T2}"
        row = dict(T1=T1, T2=T2, per_step=(work2 - work1) / extra if extra else None, classes=classes)
        rows.append(base | row | dict(vs_python_at_T2=work2 / py_work if py_work else None, note=note))
    return pd.DataFrame(rows, columns=cols)


def _shared_pairs(pts: pd.DataFrame, kernel: str, target: str) -> set[tuple[int, int]]:
    """The T pairs matched in both the Python loop and fori_loop on one target (compared alike)."""
    mine = pts[(pts.kernel == kernel) & (pts.target == target) & (pts.status == tg.OK)]
    mine = mine[mine.work_per_program.notna() & mine.steps.notna()]
    forms = [f for f in ("python", "fori", "fori u=1") if f in set(mine.form)]
    found = [{(int(a["T"]), int(b["T"])) for a, b in _matched(mine[mine.form == f])} for f in forms]
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
    if tg.OK in set(part.status):
        return "lowers"
    # a limit's numbers are in its status; "not present here" is said once, under the table
    row = part.iloc[0]
    short = not row.error or row.status == tg.NOT_PRESENT or tg.EXCEEDS in row.status
    return str(row.status) if short else f"{row.status}: {row.error}"


def absent_note(points: pd.DataFrame) -> list[str]:
    """Each compiler's reason for "not present here", once (the Lowers table's rows say only that)."""
    gone = points[points.status == tg.NOT_PRESENT] if "status" in points else points.iloc[:0]
    why = dict.fromkeys(f"{tg.TARGETS[t][0]}: {e}" for t, e in zip(gone.target, gone.error))
    return ["Not present here: " + "; ".join(why) + ".", ""] if why else []
