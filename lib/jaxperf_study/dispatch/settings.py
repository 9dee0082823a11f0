"""Notebook 01's parameters as one typed, frozen object, with its quick preset in sight."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from jaxperf.errors import bad_value, check_int, check_ints

from ..settings import StudySettings, check_fraction, check_seconds

if TYPE_CHECKING:
    from .cost import Cell
    from .models import ModelSpec


@dataclass(frozen=True)
class DispatchSettings(StudySettings):
    """What the dispatch study runs, each cell under ``eqx.filter_pmap`` and ``eqx.filter_jit``.

    The no-op step on every model, undonated (the cost per leaf needs two sizes or more of each
    kind: MLP, transformer, CNN) under ``eqx.filter_pmap`` (the seed's), the smallest and the
    largest MLP under ``eqx.filter_jit`` too; the train step on the ``train_depths`` MLPs and then the
    largest transformer, undonated; both steps with model and optimiser state donated on the
    ``donated_depths`` MLPs (both empty by default: each case costs its compiles in every process). Each cell's diagnosis stops when its ratios are within
    ``precision`` or after ``seconds_per_cell`` of timing (compiles not counted). The
    accounting splits one call at each of ``accounting_depths`` over ``accounting_rounds``
    interleaved rounds. Every measurement runs in ``processes`` fresh processes, a third of the
    rounds each, so each quoted number is a median over processes with its rerun range. The
    train step on one wide MLP (``heavy_width``, under ``eqx.filter_jit``) has a device time far
    above any path's host time: it tells which paths wait for each call.
    """

    mlp_depths: tuple[int, ...] = (1, 16, 64)
    transformer_layers: tuple[int, ...] = (1, 4)
    cnn_layers: tuple[int, ...] = (4, 32)
    train_depths: tuple[int, ...] = ()
    donated_depths: tuple[int, ...] = ()
    heavy_width: int = 512
    precision: float = 0.05
    seconds_per_cell: float = 3.0
    min_rounds: int = 6
    accounting_depths: tuple[int, ...] = (8, 64)
    accounting_rounds: int = 10
    processes: int = 3

    # Two small MLPs, the no-op step, both donations: every path, the fit and the accounting
    # still run, in a few minutes on a 2-core machine.
    QUICK: ClassVar[Mapping[str, Any]] = {
        "mlp_depths": (1, 4),
        "transformer_layers": (),
        "cnn_layers": (),
        "donated_depths": (4,),
        "heavy_width": 128,
        "seconds_per_cell": 1.0,
        "min_rounds": 2,
        "accounting_depths": (4,),
        "accounting_rounds": 4,
        "processes": 2,
    }

    def validate(self) -> None:
        check_ints("mlp_depths", self.mlp_depths)
        if len(set(self.mlp_depths)) < 2:
            raise bad_value(
                "mlp_depths", self.mlp_depths, "at least two depths (a cost per leaf needs two sizes)"
            )
        for name in ("transformer_layers", "cnn_layers", "train_depths", "donated_depths"):
            if getattr(self, name):
                check_ints(name, getattr(self, name))
        check_fraction("precision", self.precision)
        check_seconds("seconds_per_cell", self.seconds_per_cell)
        check_int("min_rounds", self.min_rounds, minimum=2)
        check_ints("accounting_depths", self.accounting_depths)
        check_int("accounting_rounds", self.accounting_rounds, minimum=3)
        check_int("processes", self.processes, minimum=1)
        check_int("heavy_width", self.heavy_width, minimum=1)

    @property
    def specs(self) -> list[ModelSpec]:
        """The models of the no-op sweep: the MLP depths, then the transformers and the CNNs."""
        from .models import ModelSpec  # here: the settings check runs with the standard library only

        mlps = [ModelSpec("mlp", d) for d in self.mlp_depths]
        others = [ModelSpec("transformer", n) for n in self.transformer_layers]
        return mlps + others + [ModelSpec("cnn", n) for n in self.cnn_layers]

    @property
    def cells(self) -> list[Cell]:
        """Every diagnosis of the sweep."""
        from .cost import FAMILIES, Cell
        from .models import ModelSpec

        transformers = (
            [ModelSpec("transformer", max(self.transformer_layers))]
            if self.transformer_layers and self.train_depths
            else []
        )
        donated = [ModelSpec("mlp", d) for d in self.donated_depths]
        plan = [
            ("noop", self.specs, False),
            ("train", [ModelSpec("mlp", d) for d in self.train_depths] + transformers, False),
            ("noop", donated, True),
            ("train", donated, True),
        ]
        heavy = ModelSpec("mlp", 1, width=self.heavy_width, batch_per_device=256)
        return [
            Cell(step, spec, donated, family)
            for step, specs, donated in plan
            for spec in specs
            for family in (FAMILIES if self._both(spec, step, donated) else ("pmap",))
        ] + [Cell("train", heavy, False, "jit")]

    def _both(self, spec: ModelSpec, step: str, donated: bool) -> bool:
        """Whether a case runs under ``eqx.filter_jit`` too: the smallest and largest no-op MLPs
        (the jit line's two ends) and every train or donated MLP case."""
        ends = (min(self.mlp_depths), max(self.mlp_depths))
        return spec.kind == "mlp" and (step != "noop" or donated or spec.size in ends)

    @property
    def accounting_specs(self) -> list[ModelSpec]:
        from .models import ModelSpec

        return [ModelSpec("mlp", d) for d in self.accounting_depths]
