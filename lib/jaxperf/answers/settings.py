"""Notebook 99's parameters: which backend's published results to read."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import check_choice
from ..settings import StudySettings

SOURCE_BACKENDS = ("cpu",)


@dataclass(frozen=True)
class AnswersSettings(StudySettings):
    """``sources_backend``: the ``results/<backend>/`` whose studies are read (the GPU run's
    results, when they exist, are read from ``results/gpu/`` whatever this says)."""

    sources_backend: str = "cpu"

    def validate(self) -> None:
        check_choice("sources_backend", self.sources_backend, SOURCE_BACKENDS)
