"""The typed settings base: validation, the quick preset, what gets recorded."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from jaxperf_study.settings import StudySettings


@dataclasses.dataclass(frozen=True)
class Toy(StudySettings):
    sizes: tuple[int, ...] = (256, 1024, 4096)
    repeats: int = 7

    QUICK: ClassVar = {"sizes": (256,), "repeats": 2}

    def validate(self) -> None:
        if self.repeats < 1:
            raise ValueError(f"repeats={self.repeats!r}: must be >= 1")


def test_full_run_keeps_the_given_values_and_ignores_other_globals():
    s = Toy.from_parameters({"sizes": [256, 512], "repeats": 3, "unrelated": object()})
    assert s.sizes == (256, 512) and s.repeats == 3 and not s.quick


def test_quick_applies_the_visible_preset_and_records_what_ran():
    s = Toy.from_parameters({"quick": True, "repeats": 9})
    assert s.sizes == (256,) and s.repeats == 2
    assert s.as_dict()["sizes"] == [256] and s.as_dict()["repeats"] == 2
    table = Toy.presets()
    assert list(table["parameter"]) == ["sizes", "repeats"]
    assert table.loc[0, "full"] == (256, 1024, 4096) and table.loc[0, "quick"] == (256,)


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"backend": "cuda"}, "backend"),
        ({"quick": "yes"}, "quick"),
        ({"output_root": 3}, "output_root"),
        ({"host_devices": 0}, "host_devices"),
        ({"repeats": -5}, "repeats"),
    ],
)
def test_bad_values_name_the_parameter(params, named):
    with pytest.raises(ValueError, match=named):
        Toy.from_parameters(params)


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Toy().repeats = 3  # type: ignore[misc]
