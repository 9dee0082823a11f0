"""Typed, frozen settings: one object per study, built from a notebook's parameters.

A study subclasses :class:`StudySettings`, adds its own fields (the notebook's
parameter names, with the full-run values as defaults) and a ``QUICK`` preset
(the fields a smoke run replaces). The notebook builds it in one line::

    settings = DispatchSettings.from_parameters(globals())

and shows ``settings.presets()`` so the quick sizes are visible where they are
used. ``settings.as_dict()`` is what the study records as "the parameters that
ran": after the quick preset is applied, never the requested values.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

from jaxperf.errors import bad_value, check_choice, check_int

if TYPE_CHECKING:
    import pandas as pd

BACKENDS = ("auto", "cpu", "gpu", "tpu")
#: The backend whose preset (``StudySettings.DEVICE_PRESETS``) applies instead of the one the run is on:
#: tools/device/run.sh --dry-run sets it, so a TPU run's parts are tried on this CPU first.
PRESET_ENV = "JAXPERF_PRESET"


@dataclasses.dataclass(frozen=True)
class StudySettings:
    """Parameters every notebook takes. Subclasses add their own fields."""

    backend: str = "auto"
    quick: bool = False
    output_root: str = ""
    host_devices: int = 8
    part: str = ""  # one of PARTS, or "" for all of them

    # Fields a quick (smoke) run replaces, with their quick values.
    QUICK: ClassVar[Mapping[str, Any]] = {}
    # Per backend ("gpu", "tpu"), the fields a run there replaces: the sizes and parts that fit a
    # lent device's time. Applied before QUICK; the device run's dry run applies its backend's
    # (PRESET_ENV) on the CPU, so the device's code paths are tried before device time is spent.
    DEVICE_PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}
    # The parts a run may be split into, name -> what it measures: a device command runs one
    # (``run.sh ... -- -p part NAME``), tools/device/unpack.sh merges the parts' records into one
    # result, and ``./run_all.sh render`` tells it from them. Each part measures its own cases,
    # never another's.
    PARTS: ClassVar[Mapping[str, str]] = {}

    def __post_init__(self) -> None:
        # Notebook parameters arrive as lists (papermill's YAML); freeze them as tuples.
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        check_choice("backend", self.backend, BACKENDS)
        if not isinstance(self.quick, bool):
            raise bad_value("quick", self.quick, "True or False")
        if not isinstance(self.output_root, str):
            raise bad_value("output_root", self.output_root, 'a path as a string ("" = the default root)')
        check_int("host_devices", self.host_devices, minimum=1)
        check_choice("part", self.part, ["", *self.PARTS])
        self.validate()

    def validate(self) -> None:
        """Check the study's own fields and their combinations; raise ValueError naming the parameter."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_parameters(cls, namespace: Mapping[str, Any]) -> Self:
        """Build from a notebook's globals (or any mapping): takes the fields it knows, validates
        them, then applies its backend's device preset (or :data:`PRESET_ENV`'s) and, when ``quick``
        is true, the quick preset."""
        values = {name: namespace[name] for name in cls.field_names() if name in namespace}
        settings = cls(**values)
        target = os.environ.get(PRESET_ENV) or settings.backend
        presets = [(cls.DEVICE_PRESETS.get(target, {}), f"DEVICE_PRESETS[{target!r}]")]
        presets += [(cls.QUICK, "QUICK")] if settings.quick else []
        for preset, name in presets:
            if not preset:
                continue
            unknown = set(preset) - set(cls.field_names())
            if unknown:
                raise TypeError(f"{cls.__name__}.{name} names unknown fields: {sorted(unknown)}")
            settings = dataclasses.replace(settings, **preset)
        return settings

    def planned_seconds(self, backend: str) -> Mapping[str, float] | None:
        """The seconds a run with these settings plans on ``backend``'s device, item by item, from
        per-case costs the study records (its settings say where each comes from); None where the
        study states none (tests/test_device_budget.py fails a device preset that states none)."""
        return None

    @classmethod
    def on_device(cls, backend: str) -> Self:
        """The full run's settings with ``backend``'s device preset applied, as a run there builds them."""
        return dataclasses.replace(cls(backend=backend), **cls.DEVICE_PRESETS.get(backend, {}))

    def as_dict(self) -> dict[str, Any]:
        """The parameters that ran (quick preset applied), for provenance."""
        return {name: _plain(getattr(self, name)) for name in self.field_names()}

    @classmethod
    def presets(cls) -> pd.DataFrame:
        """Full-run defaults beside the quick preset, one row per field that quick mode changes."""
        import pandas as pd  # here, not at the top: the options check builds settings with the stdlib only

        defaults = {f.name: _default(f) for f in dataclasses.fields(cls)}
        names = list(
            dict.fromkeys([*cls.QUICK, *(n for preset in cls.DEVICE_PRESETS.values() for n in preset)])
        )
        columns = ["parameter", "full", "quick", *cls.DEVICE_PRESETS]
        rows = [
            {
                "parameter": name,
                "full": defaults[name],
                "quick": cls.QUICK.get(name, ""),
                **{b: preset.get(name, "") for b, preset in cls.DEVICE_PRESETS.items()},
            }
            for name in names
        ]
        return pd.DataFrame(rows, columns=columns)


def check_fraction(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise bad_value(name, value, "a fraction in (0, 1), e.g. 0.05")


def check_seconds(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise bad_value(name, value, "a number of seconds > 0")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists, inside mappings too): what a measuring run
    prints of its parameters is what a render, which reads them from JSON, prints."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return {k: _plain(v) for k, v in value.items()} if isinstance(value, Mapping) else value
