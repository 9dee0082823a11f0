"""The interleaved probe: every way of calling a step (:mod:`.variants`) at each depth, each
first proved to compute what ``nnx.jit`` computes, then timed with :func:`jaxperf.timing.compare`
(each repeat runs every variant once, in a rotated order).

Per call: ``cpu_s_per_call``, the dispatching thread's CPU over blocked calls; ``wall_s_per_call``,
blocked wall time; ``loop_s_per_call``, wall time of a loop that lets dispatch run ahead and
blocks once at its end (the pipelined case). :func:`ratios` divides each variant by
``jax.jit split`` pair by pair (same repeat), as the goal is stated.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from .. import timing
from ..errors import check_ints
from ..timing_config import TimingConfig
from . import variants
from .models import STEPS, Problem, count_variables

MEASURES = ("cpu_s_per_call", "wall_s_per_call", "loop_s_per_call")


def run(
    depths: Iterable[int],
    steps: Iterable[str] = STEPS,
    names: tuple[str, ...] = variants.VARIANTS,
    config: TimingConfig | None = None,
    width: int = 4,
    progress: object = None,
) -> pd.DataFrame:
    """Tidy rows: one per (step, depth, variant, repeat), with :data:`MEASURES` and the
    model's and optimizer's Variable count (``variables``)."""
    depths = check_ints("depths", depths)
    frames = []
    for step in steps:
        for depth in depths:
            problem = Problem(depth=depth, width=width)
            checked = variants.check_same(problem, step, names)
            calls = {name: variant.call for name, variant in checked.items()}
            model, optimizer, _, _ = problem.build()
            frame = timing.compare(
                calls,
                config,
                progress=progress,
                step=step,
                depth=depth,
                variables=count_variables(model, optimizer),
            )
            frames.append(frame.assign(loop_s_per_call=1.0 / frame["loop_it_per_s"]))
    return pd.concat(frames, ignore_index=True)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Median and quartiles, in microseconds, of each measure per (step, depth, variant)."""
    out = []
    for measure in MEASURES:
        stats = timing.summarize(rows.assign(us=1e6 * rows[measure]), "us", ["step", "depth", "variant"])
        out.append(stats.assign(measure=measure))
    return pd.concat(out, ignore_index=True)


def ratios(rows: pd.DataFrame, reference: str = variants.REFERENCE) -> pd.DataFrame:
    """Per-pair ratios ``variant / reference`` of each measure (median, q25, q75 per
    (step, depth, variant)); the goal: ``cached_nnx_jit`` at most 1.3x of ``jax.jit split``."""
    out = []
    for measure in MEASURES:
        pairs = timing.pair_ratios(rows, reference, value=measure, by=["step", "depth"])
        stats = timing.summarize(pairs, "ratio", ["step", "depth", "variant"])
        out.append(stats.assign(measure=measure))
    return pd.concat(out, ignore_index=True)
