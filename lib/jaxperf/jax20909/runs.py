"""Notebook 02's engine runs, from its settings: the study's family of kernels (the reporter's
in the advice's forms too) and the readers' kernels (``kernel``), each through
:func:`jaxperf.loops.engine.run` as a reader's kernel goes through it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..loops import engine
from .factories import FACTORIES
from .settings import LoopSettings


def _check_Ts(settings: LoopSettings, Ts: tuple[int, ...]) -> list[int]:
    return [min(settings.check_T, min(Ts))]


def family(settings: LoopSettings, *, progress: Any = None) -> tuple[engine.Results, ...]:
    """The engine on every kernel of ``settings.kernels`` at its ``family_Ts``: in
    ``family_forms``, and the reporter's kernel in ``fix_forms`` as well (one run)."""
    runs = []
    for kernel in settings.kernels:
        Ts = settings.family_Ts[kernel]
        forms = list(
            dict.fromkeys([*settings.family_forms, *(settings.fix_forms if kernel == "seed" else ())])
        )
        runs.append(
            engine.run(
                FACTORIES[kernel], forms, Ts, check_Ts=_check_Ts(settings, Ts), targets=settings.targets
            )
        )
        if progress is not None:
            progress.update(1)
    return tuple(runs)


def fix(runs: tuple[engine.Results, ...]) -> engine.Results | None:
    """The reporter's kernel's run (it holds the advice's forms)."""
    return next((r for r in runs if r.kernel == "seed"), None)


def readers(settings: LoopSettings, *, progress: Any = None) -> tuple[engine.Results, ...]:
    """The engine on each factory of ``settings.kernel`` in ``kernel_forms`` at ``kernel_Ts``."""
    runs = []
    for path in settings.readers_kernels():
        Ts = settings.kernel_Ts
        runs.append(
            engine.run(
                path,
                settings.kernel_forms,
                Ts,
                check_Ts=_check_Ts(settings, Ts),
                targets=settings.kernel_targets,
            )
        )
        if progress is not None:
            progress.update(1)
    return tuple(runs)


def per_step(runs: tuple[engine.Results, ...]) -> pd.DataFrame:
    """Every run's work per loop step (:func:`jaxperf.loops.engine.per_step`), in one frame."""
    frames = [r.per_step() for r in runs]
    return pd.concat(frames, ignore_index=True) if frames else engine.per_step(pd.DataFrame())
