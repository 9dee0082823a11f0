"""Where one ``nnx.jit`` call (graph mode) spends its time: stage timers.

The staged call runs the steps of Flax 0.12's ``JitWrapped.__call__`` in its order, with a
clock read between them: enter the update context; split the arguments (``to_tree``: the walk
of the object graph, ``graphlib.flatten``, into pure pytrees); the inner ``jax.jit`` call (its
dispatch, with JAX's flatten of those pytrees); merge the outputs back (``from_tree``: the
second walk, ``graphlib.unflatten``, which writes the updated Variables and structure into the
caller's modules); leave the context. Then, as an ordinary blocked call: wait for the
execution and drop the outputs. The split and the merge are each parted in two: the time
inside Flax's ``graphlib.flatten`` (``unflatten``), read by a timer around it for the staged
call only, and the rest of the stage.

Each round also makes an ordinary ``nnx.jit`` call, a ``jax.jit`` call on ``nnx.split`` state
and a :func:`jaxperf.cached_nnx_jit` call, interleaved (each after each other equally often), so that the
stages can be checked to sum to an ordinary call (their interquartile ranges overlap) and set
beside the cheaper calls. Clocks: the dispatching thread's CPU time (``cpu_ms``, what the
goals are stated in) and wall time (``wall_ms``), both per stage.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

from jaxperf import timing, timing_config

from ..stages import Run, durations, interleaved, now, whole
from .models import Problem, step_function

STAGES = (
    "enter the update context",
    "split: graph walk (graphlib.flatten)",
    "split: the rest (pure pytrees)",
    "inner jax.jit call (dispatch)",
    "merge: graph rebuild and updates (graphlib.unflatten)",
    "merge: the rest",
    "leave the update context",
    "wait for execution",
    "free the outputs",
)
CALLS = ("nnx.jit, staged", "nnx.jit", "jax.jit split", "cached_nnx_jit")


def flax_jit_steps(jitted: Any) -> dict[str, Callable]:
    """The private steps of Flax's ``JitWrapped.__call__`` that a staged call makes (pinned by
    ``tests/test_nnx_study.py``): ``context``, ``split``, ``call``, ``merge``."""
    from flax.nnx import graphlib

    return {
        "context": lambda: graphlib.update_context(jitted),
        "split": jitted._get_pure_args_kwargs,
        "call": jitted.jitted_fn,
        "merge": jitted._get_non_pure_out,
    }


class _Inside:
    """Wall and thread-CPU seconds spent inside ``graphlib.<name>`` while patched in."""

    def __init__(self, graphlib: Any, name: str) -> None:
        self.graphlib, self.name, self.real = graphlib, name, getattr(graphlib, name)
        self.wall = self.cpu = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        try:
            return self.real(*args, **kwargs)
        finally:
            self.wall += time.perf_counter() - wall0
            self.cpu += time.thread_time() - cpu0

    def __enter__(self) -> _Inside:
        setattr(self.graphlib, self.name, self)  # Flax's split/merge call it through the module
        return self

    def __exit__(self, *exc: Any) -> None:
        setattr(self.graphlib, self.name, self.real)


def staged_call(jitted: Any, args: tuple) -> tuple[list[float], list[float]]:
    """One ``nnx.jit`` call made step by step (see the module docstring), blocking only at the
    end: (wall seconds, thread-CPU seconds) per stage in :data:`STAGES` order."""
    from flax.nnx import graphlib

    steps = flax_jit_steps(jitted)
    with _Inside(graphlib, "flatten") as flatten, _Inside(graphlib, "unflatten") as unflatten:
        marks = [now()]
        mark = lambda: marks.append(now())  # noqa: E731
        context = steps["context"]()
        context.__enter__()
        mark()
        pure_args, pure_kwargs = steps["split"](args, {})
        mark()
        pure_out = steps["call"](*pure_args, **pure_kwargs)
        mark()
        out = steps["merge"](*pure_out)
        mark()
        context.__exit__(None, None, None)
        mark()
        timing.block((out, pure_out))
        mark()
        del out, pure_out, pure_args, pure_kwargs
        mark()
    wall, cpu = durations(marks)
    # split and merge each parted into the time inside graphlib's walk and the rest
    for clock, part in ((wall, "wall"), (cpu, "cpu")):
        walk, rebuild = getattr(flatten, part), getattr(unflatten, part)
        clock[1:2] = [walk, clock[1] - walk]
        clock[4:5] = [rebuild, clock[4] - rebuild]
    return wall, cpu


def call_breakdown(problem: Problem, step: str, calls: int = 30) -> pd.DataFrame:
    """:func:`~jaxperf_study.dispatch.stages.interleaved` rounds of the four :data:`CALLS`, each on its
    own fresh objects of ``problem``."""
    from flax import nnx

    from jaxperf.diagnosis import nnx_paths
    from jaxperf.diagnosis.kinds import identify

    model, optimizer, x, y = problem.build()
    jitted = nnx.jit(step_function(step))
    args = (model, optimizer, x, y)
    # the whole calls are the diagnosis engine's paths, each on its own copies of the objects
    found = identify(jitted)
    ordinary = {
        CALLS[1]: nnx_paths.reader_like(found, args).call,
        CALLS[2]: nnx_paths.split_jit(found, args, {}, None).call,
        CALLS[3]: nnx_paths.cached_nnx_jit(found, args, {}, None).call,
    }
    runs: dict[str, Run] = {
        CALLS[0]: lambda: staged_call(jitted, args),
        **{name: functools.partial(whole, call) for name, call in ordinary.items()},
    }
    return interleaved(runs, STAGES, calls).assign(depth=problem.depth, step=step)


def breakdowns(depths: tuple[int, ...], steps: tuple[str, ...], rounds: int) -> pd.DataFrame:
    """:func:`call_breakdown` of every step at every depth, one frame (what notebook 11 records)."""
    frames = [call_breakdown(Problem(depth=d), step, rounds) for d in depths for step in steps]
    return pd.concat(frames, ignore_index=True).assign(cpu_tick_s=timing_config.cpu_tick())
