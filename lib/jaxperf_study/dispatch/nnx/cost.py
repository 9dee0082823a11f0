"""The NNX study's cells (notebook 11): :func:`jaxperf.diagnosis.diagnose` on ``nnx.jit`` steps written
as a Flax user writes them, through the same engine and cell runner as notebook 01
(:func:`jaxperf_study.dispatch.cost.run_cell`).

Each cell is a step (``noop`` or ``train``, :mod:`.models`) at one MLP depth, wrapped with
``nnx.jit`` (graph mode, Flax's default) and called on ``(model, optimizer, x, y)``; the
engine derives Flax's own mitigations and jaxperf's drop-in (:mod:`jaxperf.diagnosis.nnx_paths`),
proves each leaves the same model and optimizer state, and times them interleaved. A
``heavy`` cell (a wide train step, its device time far above any path's host time) tells
whether each path's calls run ahead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .models import Problem, count_variables, step_function

FAMILY = "nnx"


@dataclass(frozen=True)
class NnxCell:
    """One diagnosis: ``step`` on an MLP of ``depth`` ``nnx.Linear`` layers of ``width``."""

    step: str
    depth: int
    width: int = 4
    batch: int = 8

    @property
    def problem(self) -> Problem:
        return Problem(depth=self.depth, width=self.width, batch=self.batch)

    def make(self) -> tuple[Any, tuple]:
        from flax import nnx

        model, optimizer, x, y = self.problem.build()
        return nnx.jit(step_function(self.step)), (model, optimizer, x, y)

    @property
    def labels(self) -> dict[str, Any]:
        model, optimizer, _, _ = self.problem.build()
        return {
            "step": self.step,
            "model": f"mlp_depth{self.depth}_width{self.width}",
            "kind": "mlp" if self.width == Problem.width else "wide mlp",
            "leaves": count_variables(model, optimizer),
            "donated": False,
            "family": FAMILY,
        }


def cells(depths: tuple[int, ...], steps: tuple[str, ...], heavy_width: int) -> list[NnxCell]:
    """Every step at every depth, then the heavy cell (the train step, 2 layers of
    ``heavy_width``; 0 leaves it out)."""
    out = [NnxCell(step, depth) for step in steps for depth in depths]
    if heavy_width:
        out.append(NnxCell("train", 2, heavy_width, batch=256))
    return out
