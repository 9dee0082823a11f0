"""The engine behind :func:`jaxperf.diagnose`: build every path of a step, prove each
computes what the reader's does, time them interleaved in the reader's loop, and summarise.

One code path for the study's own models and for a reader's step: the dispatch study
(notebook 01), the runs-ahead probe (notebook 07) and the NNX study (notebook 11) check
with :func:`check`, time with :func:`time_paths` and judge with :func:`jaxperf.diagnosis.verdicts`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
import pandas as pd

from .. import timing
from ..errors import bad_value
from . import carry as carry_mod
from .kinds import Step
from .paths import BUILDERS, NO_BATCH, NotApplicable, Path, reader

#: what a diagnosis measures per call, by column of :func:`jaxperf.timing.compare`
MEASURES = {
    "loop_it_per_s": "it/s in your loop (calls that block once at the end)",
    "it_per_s": "it/s with each call blocked",
    "cpu_s_per_call": "host CPU per call (the dispatching thread)",
    "dispatch_s_per_call": "time to enqueue a call",
    "wall_s_per_call": "time per blocked call",
}


class Batches:
    """The reader's loader as the engine calls it: a callable or an iterable, one batch per
    call; ``None`` means no loader (every call reuses the batch it was given)."""

    def __init__(self, loader: Any) -> None:
        self._next: Callable[[], Any] | None
        if loader is None:
            self._next = None
        elif callable(loader):
            self._next = loader
        elif isinstance(loader, Iterable):
            iterator: Iterator[Any] = iter(loader)
            self._next = lambda: next(iterator)
        else:
            raise bad_value("loader", loader, "None, a callable returning a batch, or an iterable of batches")
        self.count = 0

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
        return batch


def sync(tree: Any) -> Any:
    """Wait for ``tree``; a list of donated outputs waits for its last (the earlier ones
    were consumed by the calls after them, and the last was computed from all of them)."""
    try:
        return jax.block_until_ready(tree)
    except (jax.errors.JaxRuntimeError, RuntimeError):
        if isinstance(tree, list) and tree:
            return jax.block_until_ready(tree[-1])
        raise


def find_batch(args: tuple, batch: Any, batch_at: int | None, carried: Iterable[int]) -> int:
    """Where the loader's batch goes: ``batch_at``, or the one uncarried argument like it."""
    if batch_at is not None:
        if not (isinstance(batch_at, int) and 0 <= batch_at < len(args)):
            raise bad_value("batch_at", batch_at, f"an argument index in 0..{len(args) - 1}")
        return batch_at
    like = [i for i, a in enumerate(args) if i not in set(carried) and carry_mod.same_kind(a, batch)]
    if len(like) != 1:
        raise bad_value(
            "batch_at",
            None,
            f"the index of the argument the loader's batch replaces ({len(like)} arguments look like its batch)",
        )
    return like[0]


def _deleted(tree: Any) -> bool:
    return any(isinstance(x, jax.Array) and x.is_deleted() for x in jax.tree.leaves(tree))


def array_leaves(tree: Any) -> int:
    return sum(1 for x in jax.tree.leaves(tree) if isinstance(x, jax.Array))


def build(
    step: Step,
    args: tuple,
    carry: Any,
    batches: Batches,
    batch_at: int | None,
    extra: dict[str, Callable[..., Path]] | None = None,
) -> tuple[Step, Path, dict[str, Path], dict[str, str], carry_mod.Carry, int, int | None]:
    """(the step, its donation read off one call for JAX's kinds; the reader's path, the cheaper paths, {path: why not offered}, carry, array leaves
    of the arguments of one call, batch position). One call of the reader's step (on copies) reads
    the carry and the leaves; it also compiles it, so nothing compiles inside the clock."""
    probe = carry_mod.fresh(args)
    try:
        out = step.call(*probe)
    except Exception as err:
        raise ValueError(
            f"step raised {type(err).__name__} on the arguments given: {err}".strip()
            + " (diagnose calls it as your loop does: step(*args))"
        ) from err
    jax.block_until_ready(out)
    if carry == "auto":
        carry = carry_mod.infer(args, out)
    elif carry is None:
        carry = {}
    else:
        carry = carry_mod.check(carry, args, out)
    if step.kind in ("jax.jit", "jax.pmap") and any(_deleted(probe[i]) for i in carry):
        step = dataclasses.replace(step, donate="all")  # read off the call: jax's donate_argnums
    consumed = [i for i, a in enumerate(probe) if i not in carry and _deleted(a)]
    if consumed and not batches.given:
        raise bad_value(
            "loader",
            None,
            f"a loader: the step donates argument {consumed[0]}, which it does not return, so a loop "
            "without new batches would call it on a consumed array",
        )
    if batches.given:
        first = batches()
        batch_at = find_batch(args, first, batch_at, carry)
        args = (*args[:batch_at], first, *args[batch_at + 1 :])
    leaves = array_leaves(args)
    mine = reader(step, args, carry, batch_at)
    paths: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    builders: dict[str, Callable[..., Path]] = dict(BUILDERS) if step.family != "nnx" else {}
    if step.family == "nnx":
        from .nnx_paths import BUILDERS as NNX_BUILDERS

        builders.update(NNX_BUILDERS)
    builders.update(extra or {})
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


def check(mine: Path, paths: dict[str, Path], batches: Batches) -> dict[str, str]:
    """One call of every path from the same state and batch; {path: how it differs, or the
    error it raised}. A path that differs is reported, never timed."""
    batch = batches()
    jax.block_until_ready(mine.call(carry_mod.fresh(batch)))
    ref_out, ref_args = carry_mod.host(mine.reader_view())
    problems: dict[str, str] = {}
    for name, path in paths.items():
        try:
            jax.block_until_ready(path.call(carry_mod.fresh(batch)))
            out, args = carry_mod.host(path.reader_view())
            difference = carry_mod.first_difference(ref_out, out, "output") or carry_mod.first_difference(
                ref_args, args, "next argument"
            )
        except NotApplicable as reason:
            difference = f"not applicable: {reason}"
        except Exception as err:  # noqa: BLE001 -- reported beside the paths that ran
            difference = f"raised {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
        if difference is not None:
            problems[name] = difference
    return problems


def calls_per_batch(mine: Path, batches: Batches, target_s: float = 0.05) -> int:
    """Calls per timed round: about ``target_s`` of the reader's step (the median of three
    blocked calls, loader included), 2 to 100."""
    elapsed = []
    for _ in range(3):
        start = time.perf_counter()
        sync(mine.call(batches()))
        elapsed.append(time.perf_counter() - start)
    return int(min(100, max(2, round(target_s / max(sorted(elapsed)[1], 1e-6)))))


def time_paths(
    mine: Path,
    paths: dict[str, Path],
    batches: Batches,
    config: timing.TimingConfig,
    progress: Any = None,
    **labels: Any,
) -> pd.DataFrame:
    """Interleaved rounds of the reader's loop over every path (a new batch per call when a
    loader is given), until each path's it/s ratio to the reader's, pipelined and blocked,
    is within ``config.precision`` or the time cap."""
    everyone = {mine.name: mine, **paths}
    variants = {name: (lambda p=path: p.call(batches())) for name, path in everyone.items()}
    watch = [(name, mine.name, value) for name in paths for value in ("loop_it_per_s", "it_per_s")]
    return timing.compare(variants, config, sync=sync, progress=progress, watch=watch, **labels)


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
    extra: dict[str, Callable[..., Path]] | None = None,
    progress: Any = None,
) -> dict[str, Any]:
    """Everything a :class:`~jaxperf.diagnosis.result.Diagnosis` is made from."""
    started = time.perf_counter()
    batches = Batches(loader)
    step, mine, paths, skipped, carry, leaves, batch_at = build(step, args, carry, batches, batch_at, extra)
    problems = check(mine, paths, batches)
    timed = {name: path for name, path in paths.items() if name not in problems}
    number = calls_per_round or calls_per_batch(mine, batches)
    left = (
        config.max_seconds if timing_only else max(5.0, config.max_seconds - (time.perf_counter() - started))
    )
    timed_config = timing.TimingConfig(
        warmup=config.warmup,
        repeats=config.repeats,
        number=number,
        precision=config.precision,
        max_seconds=left,
        max_repeats=config.max_repeats,
        clock=config.clock,
    )
    timings = time_paths(mine, timed, batches, timed_config, progress)
    return {
        "kind": step.kind,
        "reader": mine.name,
        "paths": {name: path.what for name, path in paths.items()},
        "methods": {path.name: path.method for path in (mine, *paths.values())},
        "skipped": skipped,
        "problems": problems,
        "carry": carry,
        "batch_at": batch_at,
        "leaves": leaves,
        "donate": step.donate,
        "timings": timings,
        "seconds": time.perf_counter() - started,
        "loader": batches.given,
    }


__all__ = ["MEASURES", "Batches", "NotApplicable", "Path", "build", "check", "run", "sync", "time_paths"]
