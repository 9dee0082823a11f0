"""The engine behind :func:`jaxperf.diagnosis.diagnose` and the studies (notebooks 01, 07, 11): build
every path of a step, :func:`check` each computes what the reader's does, :func:`time_paths`
interleaved in the reader's loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import time
from collections.abc import Callable, Iterable
from typing import Any

import jax
import pandas as pd

from .. import timing
from ..errors import bad_value
from . import carry as carry_mod
from .kinds import Step, pmap_axes
from .nnx_paths import BUILDERS as NNX_BUILDERS
from .nnx_paths import leading_nodes
from .paths import BUILDERS, NO_BATCH, NotApplicable, Path, Spread, put_batch, reader, snippet


class Compiles:
    """Programs JAX compiled (or found in its persistent cache) here, and the seconds it spent
    tracing, lowering, compiling and loading them, from its monitoring events."""

    count = 0
    seconds = 0.0
    _registered = False

    @classmethod
    def start(cls) -> None:
        if not cls._registered:
            from jax import monitoring

            def on_event(event: str, *duration: Any, **__: Any) -> None:  # a compile, or a cache hit
                cls.count += event in (COMPILED, "/jax/compilation_cache/cache_hits")
                cls.seconds += duration[0] if duration and event in COMPILING else 0.0

            monitoring.register_event_duration_secs_listener(on_event)
            monitoring.register_event_listener(on_event)
            cls._registered = True


COMPILED = "/jax/core/compile/backend_compile_duration"
COMPILING = (COMPILED, *(f"/jax/core/compile/{s}_duration" for s in ("jaxpr_trace", "jaxpr_to_mlir_module")))
COMPILING += ("/jax/compilation_cache/cache_retrieval_time_sec",)


def cap_clock() -> float:
    """Seconds of a diagnosis' time cap: the wall clock less the time JAX spent compiling (a TPU
    compiles a path in 0.2-16 s: the cap is for measuring, whatever the compiler costs)."""
    return time.perf_counter() - Compiles.seconds


class Printed(io.TextIOBase):
    """The step's own output while diagnosed: counted, its first lines kept, never in the report."""

    def __init__(self, keep: int = 3) -> None:
        self.lines = self.chars = 0
        self.first: list[str] = []
        self._keep, self._partial = keep, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.chars += len(text)
        self.lines += text.count("\n")
        if len(self.first) < self._keep:
            self._partial += text
            *done, self._partial = self._partial.split("\n")
            self.first += [line[:120] for line in done][: self._keep - len(self.first)]
        return len(text)

    def summary(self) -> dict[str, Any]:
        return {"lines": self.lines, "chars": self.chars, "first": self.first}


class Batches:
    """The reader's loader (None, a callable or an iterable): one batch per call."""

    def __init__(self, loader: Any) -> None:
        self._next: Callable[[], Any] | None
        if loader is None or callable(loader):
            self._next = loader
        elif isinstance(loader, Iterable):
            self._next = iter(loader).__next__
        else:
            raise bad_value("loader", loader, "None, a callable returning a batch, or an iterable of batches")
        self.count = 0
        self.spread = False  # each batch fills several consecutive arguments (find_batch decides)

    @property
    def given(self) -> bool:
        return self._next is not None

    def __call__(self) -> Any:
        if self._next is None:
            return NO_BATCH
        try:
            batch = self._next()
        except StopIteration:
            raise bad_value(
                "loader",
                f"an iterable that ran out after {self.count} batches",
                "an endless one, or a callable",
            ) from None
        if batch is None:
            raise bad_value("loader", "a loader that returned None", "a batch (the argument your step takes)")
        self.count += 1
        return Spread(batch) if self.spread else batch


def sync(tree: Any) -> Any:
    """Wait for the arrays of ``tree`` (jax.block_until_ready raises and catches an exception per
    non-array leaf: a cost of the harness, not of a path); a list of donated outputs waits for
    its last (computed from all of them)."""
    try:
        return jax.block_until_ready([x for x in jax.tree.leaves(tree) if isinstance(x, jax.Array)])
    except (jax.errors.JaxRuntimeError, RuntimeError):
        if isinstance(tree, list) and tree:
            return jax.block_until_ready(tree[-1])
        raise


def find_batch(args: tuple, batch: Any, batch_at: int | None) -> int:
    """Where the loader's batch goes: ``batch_at``, or the one argument like it (never carried)."""
    if batch_at is not None:
        if not (isinstance(batch_at, int) and 0 <= batch_at < len(args)):
            raise bad_value("batch_at", batch_at, f"an argument index in 0..{len(args) - 1}")
        return batch_at
    like = [i for i, a in enumerate(args) if carry_mod.same_kind(a, batch)]
    if not like and isinstance(batch, (tuple, list)) and len(batch) > 1:  # (x, y) for step(..., x, y)
        k = len(batch)
        like = [i for i in range(len(args) - k + 1) if all(map(carry_mod.same_kind, args[i : i + k], batch))]
        if len(like) == 1:
            return -1 - like[0]  # spread: the caller reads -1 - at
    if len(like) != 1:
        raise bad_value(
            "batch_at",
            None,
            "the index of the argument the loader's batch replaces "
            f"({len(like)} arguments look like its batch{': ' + str(like) if like else ''})",
        )
    return like[0]


def _deleted(tree: Any) -> bool:
    return any(isinstance(x, jax.Array) and x.is_deleted() for x in jax.tree.leaves(tree))


#: more candidate paths, ``{key: builder(step, args, carry, batch_at)}``
Extra = dict[str, Callable[..., Path]] | None


def build(
    step: Step, args: tuple, carry: Any, batches: Batches, batch_at: int | None, extra: Extra = None
) -> tuple[Step, Path, dict[str, Path], dict[str, str], carry_mod.Carry, int, int | None]:
    """(the step, with jax.pmap's donation read off; the reader's path, the cheaper paths, {path:
    why not offered}, carry, array leaves per call, batch position), from one call of the
    reader's step on copies (which also compiles it)."""
    probe = carry_mod.fresh(args)
    try:
        out = step.call(*probe)
    except Exception as err:
        raise ValueError(
            f"step raised {type(err).__name__} on the arguments given: {err}".strip()
            + " (diagnose calls it as your loop does: step(*args))"
        ) from err
    jax.block_until_ready(out)
    first = None
    if batches.given:  # the loader's batch is found first: it is never carried
        first = batches()
        batch_at = find_batch(args, first, batch_at)
        if batch_at < 0:  # the batch fills arguments -1 - batch_at onwards, one item each
            batch_at, batches.spread, first = -1 - batch_at, True, Spread(first)
    width = len(first) if isinstance(first, Spread) else 1
    batch_args = set(range(batch_at, batch_at + width)) if batch_at is not None else set()
    if carry == "auto":
        carry = carry_mod.infer(args, out, skip=batch_args if batches.given else None, fn=step.raw)
    else:
        carry = {} if carry is None else carry_mod.check(carry, args, out, fn=step.raw)
    if step.kind == "jax.pmap":  # donate_argnums: as lowered, else read off the call
        try:
            infos = step.call.lower(*args).args_info[0]  # type: ignore[attr-defined]
            flags = [any(getattr(x, "donated", False) for x in jax.tree.leaves(tree)) for tree in infos]
            donated = tuple(i for i, flag in enumerate(flags) if flag)
        except Exception:  # noqa: BLE001 -- lowering is only a way to read the option
            donated = tuple(i for i, a in enumerate(probe) if _deleted(a))
        axis_name, default_axes = pmap_axes(step.call, args)
        step = dataclasses.replace(step, donate=donated, axis_name=axis_name, default_axes=default_axes)
    consumed = [i for i, a in enumerate(probe) if i not in carry and i not in batch_args and _deleted(a)]
    if consumed and not batches.given:
        raise bad_value(
            "loader",
            None,
            f"a loader: the step donates argument {consumed[0]}, which it does not return, so a loop "
            "without new batches would call it on a consumed array",
        )
    if batches.given and batch_at is not None:
        args = put_batch(args, batch_at, first)
    leaves = sum(1 for x in jax.tree.leaves(args) if isinstance(x, jax.Array))
    mine = reader(step, args, carry, batch_at)
    paths: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    builders = {**(NNX_BUILDERS if step.family == "nnx" else BUILDERS), **(extra or {})}
    for key, builder in builders.items():
        try:
            path = builder(step, args, carry, batch_at)
        except NotApplicable as reason:
            skipped[key] = str(reason)
            continue
        if path.name in (mine.name, step.kind):
            skipped[key] = "your step already is this path"
            continue
        paths[path.name] = path
    return step, mine, paths, skipped, carry, leaves, batch_at


@dataclasses.dataclass
class Checked:
    """What one call of every path showed: {path: how it differs}, {path: error}, {path: why not},
    and the paths the time cap left unchecked."""

    differs: dict[str, str] = dataclasses.field(default_factory=dict)
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    not_applicable: dict[str, str] = dataclasses.field(default_factory=dict)
    unchecked: list[str] = dataclasses.field(default_factory=list)

    @property
    def excluded(self) -> set[str]:
        return {*self.differs, *self.failed, *self.not_applicable, *self.unchecked}


def check(mine: Path, paths: dict[str, Path], batches: Batches, deadline: float = float("inf")) -> Checked:
    """One call of every path from one state and batch, compared with the reader's, by ``deadline``."""
    batch = batches()
    jax.block_until_ready(mine.call(carry_mod.fresh(batch)))
    ref_out, ref_args = carry_mod.host(mine.reader_view())
    found = Checked()
    for name, path in paths.items():
        if cap_clock() > deadline:
            found.unchecked.append(name)
            continue
        try:
            jax.block_until_ready(path.call(carry_mod.fresh(batch)))
            out, args = carry_mod.host(path.reader_view())
        except NotApplicable as reason:
            found.not_applicable[name] = str(reason)
            continue
        except Exception as err:  # noqa: BLE001 -- reported beside the paths that ran
            text = str(err).splitlines()[0][:200] if str(err) else ""
            found.failed[name] = f"raised {type(err).__name__}: {text}".strip()
            continue
        difference = carry_mod.first_difference(ref_out, out, "output") or carry_mod.first_difference(
            ref_args, args, "next argument"
        )
        if difference is not None:
            found.differs[name] = difference
    return found


def _signature(tree: Any) -> list[tuple[str, str]]:
    """(leaf path, what a compile depends on) for every leaf of ``tree``."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    out = [("", f"structure {treedef}")]
    for path, x in leaves:
        if not isinstance(x, jax.Array):
            out.append((jax.tree_util.keystr(path), repr(x)[:80]))
            continue
        weak = " weak" * getattr(x, "weak_type", False)  # a typed PRNG key has no weak type
        where = "" if x.is_deleted() else f" on {x.sharding}"
        out.append((jax.tree_util.keystr(path), f"{x.dtype}{list(x.shape)}{weak}{where}"))
    return out


def retraces(
    step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None, batches: Batches, calls: int = 4
) -> dict[str, Any] | None:
    """None, or how the reader's loop compiles call after call (its last two calls each compile: a
    one-time recompile, of state come back placed otherwise, is not one; or it cannot call its step
    on what it returned): {compiles, calls, ms_per_call, argument, name, path, before, after[, cannot]}."""
    Compiles.start()
    probe = reader(step, args, carry, batch_at)
    seen, counts, elapsed, cannot = [], list[int](), list[float](), None
    for _ in range(calls):
        seen.append([_signature(a) for a in probe.args])
        before, start = Compiles.count, time.perf_counter()
        try:
            sync(probe.call(batches()))
        except (TypeError, ValueError) as err:  # JAX refusing what the step returned, as a static argument
            if not seen[1:] or "hashable" not in str(err):
                raise
            cannot, counts = " ".join(str(err).split())[:160], [*counts, 1]
            break
        counts.append(Compiles.count - before)
        elapsed.append(time.perf_counter() - start)
    if cannot is None and not (len(counts) > 2 and counts[-1] and counts[-2]):
        return None
    found: dict[str, Any] = {"compiles": sum(counts[1:]), "calls": len(counts) - 1, "cannot": cannot}
    found["ms_per_call"] = 1e3 * sorted(elapsed[1:] or [0.0])[len(elapsed[1:]) // 2]
    # the argument that changes before every compiling call (a one-time change is not the cause)
    pairs = range(1, len(seen))
    changed = [{i for i, (a, b) in enumerate(zip(seen[k - 1], seen[k])) if a != b} for k in pairs]
    steady = [c for c, n in zip(changed, counts[1:]) if n] or changed
    suspects = sorted(set.intersection(*steady) or set().union(*steady)) if steady else []
    if not suspects:
        return found
    i, names = suspects[0], carry_mod.parameter_names(step.raw) + [None] * len(args)
    k = next(k for k, c in enumerate(changed) if i in c) + 1
    old, new = seen[k - 1][i], seen[k][i]
    path, was, now = next(((p, va, vb) for (p, va), (_, vb) in zip(old, new) if va != vb), ("",) * 3)
    return {**found, "argument": i, "name": names[i], "path": path, "before": was, "after": now}


def static_scalars(
    step: Step, args: tuple, carry: carry_mod.Carry, batch_at: int | None, batches: Batches
) -> Any:
    """{argument, name, ms, before, after, int} of the first Python scalar argument (not carried: a
    replay sees those) a new value of which compiles the step again (a loop that changes it, as a
    step count or a schedule, compiles every call, which a replay of its outputs cannot see), or None."""
    for i, value in enumerate(args):
        if i in carry or i == batch_at or type(value) not in (bool, int, float):
            continue
        new = not value if type(value) is bool else value * 2 + 1
        probe = reader(step, (*args[:i], new, *args[i + 1 :]), carry, batch_at)
        before, start = Compiles.count, time.perf_counter()
        with contextlib.suppress(Exception):  # a value the step refuses tells nothing about compiles
            sync(probe.call(batches()))
        if Compiles.count > before:
            names = carry_mod.parameter_names(step.raw) + [None] * len(args)
            ms, whole = 1e3 * (time.perf_counter() - start), type(value) is int
            return {"argument": i, "name": names[i], "ms": ms, "before": value, "after": new, "int": whole}
    return None


def calls_per_batch(mine: Path, batches: Batches, target_s: float = 0.05) -> int:
    """Calls per timed round: about ``target_s`` of the reader's step, 2 to 100."""
    elapsed = []
    for _ in range(3):
        start = time.perf_counter()
        sync(mine.call(batches()))
        elapsed.append(time.perf_counter() - start)
    return int(min(100, max(2, round(target_s / max(sorted(elapsed)[1], 1e-6)))))


def time_paths(
    mine: Path, paths: dict[str, Path], batches: Batches, config: timing.TimingConfig, progress: Any = None
) -> pd.DataFrame:
    """Interleaved rounds of the reader's loop over every path, until each it/s ratio to the
    reader's (pipelined and blocked) is within ``config.precision``, or the time cap."""
    everyone = {mine.name: mine, **paths}
    variants = {name: (lambda p=path: p.call(batches())) for name, path in everyone.items()}
    watch = [(name, mine.name, value) for name in paths for value in ("loop_it_per_s", "it_per_s")]
    return timing.compare(variants, config, sync=sync, progress=progress, watch=watch)


def run(
    step: Step,
    args: tuple,
    *,
    carry: Any = "auto",
    loader: Any = None,
    batch_at: int | None = None,
    config: timing.TimingConfig,
    calls_per_round: int | None = None,
    timing_only: bool = False,
    extra: Extra = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Everything a :class:`~jaxperf.diagnosis.result.Diagnosis` is made from; ``config.max_seconds``
    caps it all (the checks too; compiles not counted: :func:`cap_clock`) unless ``timing_only``."""
    Compiles.start()
    started, compiling = time.perf_counter(), Compiles.seconds
    deadline = float("inf") if timing_only else cap_clock() + config.max_seconds
    # every thread's stdout, as JAX's callbacks print from their own threads
    with contextlib.redirect_stdout(Printed()) as printed:
        batches = Batches(loader)
        step, mine, paths, skipped, carry, leaves, batch_at = build(
            step, args, carry, batches, batch_at, extra
        )
        names = carry_mod.parameter_names(step.raw)
        nodes = leading_nodes(args) if step.family == "nnx" else 0
        found: dict[str, Any] = {
            "kind": step.kind,
            "reader": mine.name,
            "paths": {name: path.what for name, path in paths.items()},
            "methods": {path.name: path.method for path in (mine, *paths.values())},
            "snippets": {name: snippet(name, step, names, args, carry, nodes) for name in paths},
            "skipped": skipped,
            "carry": carry,
            "batch_at": batch_at,
            "leaves": leaves,
            "donate": step.donate_text,
            "loader": batches.given,
            "retrace": retraces(step, args, carry, batch_at, batches),
        }
        static = None if found["retrace"] else static_scalars(step, args, carry, batch_at, batches)
        found["retrace" if static and static["int"] else "static"] = static  # an int: a step count's form
        if found["retrace"]:  # every path would time compiles: the verdict is the retrace
            columns = ["variant", "repeat", "calls", "stopped_by", "rel_iqr"]
            found.update(problems={}, failed={}, unchecked=[], timings=pd.DataFrame(columns=columns))
        else:
            # the checks may use the time up to 70% of the cap; the rest is the timed rounds'
            now = cap_clock()
            checked = check(mine, paths, batches, deadline=now + 0.7 * (deadline - now))
            skipped.update(checked.not_applicable)
            found["unchecked"] = checked.unchecked
            timed = {name: path for name, path in paths.items() if name not in checked.excluded}
            number = calls_per_round or calls_per_batch(mine, batches)
            # warm up inside the cap: a path's second call may compile again (the step's outputs,
            # which it is called on from then on, can differ in sharding or weak type from its inputs)
            for path in (mine, *timed.values()):
                for _ in range(config.warmup):
                    sync(path.call(batches()))
            left = deadline - cap_clock()  # spent: 2 rounds
            repeats = config.repeats if left > 0 else min(config.repeats, 2)
            cap = config.max_seconds if left == float("inf") else max(left, 1e-6)
            timed_config = dataclasses.replace(
                config, warmup=0, repeats=repeats, number=number, dispatch_only=True, max_seconds=cap
            )
            found.update(
                problems=checked.differs,
                failed=checked.failed,
                timings=time_paths(mine, timed, batches, timed_config, progress),
            )
        jax.effects_barrier()  # callbacks still in flight print here, not into the report
    found.update(printed=printed.summary(), seconds=time.perf_counter() - started)
    found["compile_seconds"] = Compiles.seconds - compiling
    return found
