"""The typed settings base: validation, the quick preset, what gets recorded."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from jaxperf_study.settings import PRESET_ENV, StudySettings


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


@dataclasses.dataclass(frozen=True)
class OnDevices(Toy):
    DEVICE_PRESETS: ClassVar = {"tpu": {"sizes": (8, 16, 32), "repeats": 3}}


def test_a_device_run_takes_its_backend_s_visible_preset_then_quick(monkeypatch):
    monkeypatch.delenv(PRESET_ENV, raising=False)
    assert OnDevices.from_parameters({"backend": "cpu"}).sizes == (256, 1024, 4096)
    on_tpu = OnDevices.from_parameters({"backend": "tpu"})
    assert on_tpu.sizes == (8, 16, 32) and on_tpu.as_dict()["repeats"] == 3
    assert OnDevices.from_parameters({"backend": "tpu", "quick": True}).sizes == (256,)  # quick on top
    table = OnDevices.presets()
    assert list(table.columns) == ["parameter", "full", "quick", "tpu"]
    assert table.set_index("parameter").loc["sizes", "tpu"] == (8, 16, 32)
    # the device run's dry run: the TPU's preset on this CPU
    monkeypatch.setenv(PRESET_ENV, "tpu")
    assert OnDevices.from_parameters({"backend": "cpu"}).sizes == (8, 16, 32)


def test_a_preset_naming_an_unknown_field_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Broken(Toy):
        DEVICE_PRESETS: ClassVar = {"tpu": {"sizez": (1,)}}

    with pytest.raises(TypeError, match=r"DEVICE_PRESETS\['tpu'\] names unknown fields: \['sizez'\]"):
        Broken.from_parameters({"backend": "tpu"})


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


def test_the_parameters_that_ran_print_as_json_reads_them_back():
    """A render prints the parameters from summary.json; a measuring run from as_dict(): the same
    text only if nested tuples are lists there too (notebook 02's family_Ts, a dict of tuples)."""
    import json

    from jaxperf_study.jax20909.settings import LoopSettings

    ran = LoopSettings().as_dict()
    assert json.loads(json.dumps(ran)) == ran
    assert str(json.loads(json.dumps(ran))) == str(ran)
    assert ran["family_Ts"]["seed"] == list(LoopSettings().family_Ts["seed"])
