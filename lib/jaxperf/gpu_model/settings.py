"""The time-model notebook's parameters (notebook 08)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from ..errors import bad_value, check_ints
from ..jax20909 import vocab
from ..settings import StudySettings

REPORTER_TS = tuple(r[0] for r in vocab.SEED_ROWS)


@dataclasses.dataclass(frozen=True)
class TimeModelSettings(StudySettings):
    """``reporter_Ts``: the T of the reporter's table the model is checked at (his kernel's two
    loops compiled for sm_86 at each); ``prediction``: the registered H200 prediction to show
    ("" = the latest under ``results/predictions``)."""

    reporter_Ts: tuple[int, ...] = REPORTER_TS
    prediction: str = ""

    # A smoke run: one T below the goals' range and the first inside it.
    QUICK: ClassVar[Mapping[str, Any]] = {"reporter_Ts": (2048, 16384)}

    def validate(self) -> None:
        for T in check_ints("reporter_Ts", self.reporter_Ts):
            if T not in REPORTER_TS:
                raise bad_value("reporter_Ts[...]", T, f"one of the reporter's T {REPORTER_TS}")
        if not isinstance(self.prediction, str):
            raise bad_value("prediction", self.prediction, 'a registered file name like "h200_2026-12-01"')
