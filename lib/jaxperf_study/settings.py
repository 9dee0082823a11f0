"""Typed, frozen settings: one object per study, built from a notebook's parameters.

A study subclasses :class:`StudySettings`, adds its own fields (the notebook's
parameter names, with the full-run values as defaults), a ``QUICK`` preset
(the fields a smoke run replaces) and, where a backend needs other sizes, a preset per
backend in ``PRESETS`` (applied when ``backend`` names it, before ``QUICK``). The notebook
builds it in one line::

    settings = DispatchSettings.from_parameters(globals())

and shows ``settings.presets()`` so the quick sizes are visible where they are
used. ``settings.as_dict()`` is what the study records as "the parameters that
ran": after the quick preset is applied, never the requested values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self

from jaxperf.errors import bad_value, check_choice, check_int

if TYPE_CHECKING:
    import pandas as pd

BACKENDS = ("auto", "cpu", "gpu", "tpu")


@dataclasses.dataclass(frozen=True)
class StudySettings:
    """Parameters every notebook takes. Subclasses add their own fields."""

    backend: str = "auto"
    quick: bool = False
    output_root: str = ""
    host_devices: int = 8

    # Fields a quick (smoke) run replaces, with their quick values.
    QUICK: ClassVar[Mapping[str, Any]] = {}
    # Per backend (as ``backend`` names it; "auto" picks none): the fields its runs replace.
    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

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
        self.validate()

    def validate(self) -> None:
        """Check the study's own fields and their combinations; raise ValueError naming the parameter."""

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_parameters(cls, namespace: Mapping[str, Any]) -> Self:
        """Build from a notebook's globals (or any mapping): takes the fields it knows,
        validates them, then applies the backend's preset (``PRESETS[backend]``) and the quick
        preset when ``quick`` is true."""
        values = {name: namespace[name] for name in cls.field_names() if name in namespace}
        settings = cls(**values)
        for name, preset in (
            (f"PRESETS[{settings.backend!r}]", cls.PRESETS.get(settings.backend)),
            ("QUICK", cls.QUICK if settings.quick else None),
        ):
            if preset:
                unknown = set(preset) - set(cls.field_names())
                if unknown:
                    raise TypeError(f"{cls.__name__}.{name} names unknown fields: {sorted(unknown)}")
                settings = dataclasses.replace(settings, **preset)
        return settings

    def as_dict(self) -> dict[str, Any]:
        """The parameters that ran (quick preset applied), for provenance."""
        return {name: _plain(getattr(self, name)) for name in self.field_names()}

    @classmethod
    def presets(cls) -> pd.DataFrame:
        """Full-run defaults beside the quick preset and each backend's, one row per field a
        preset changes (a preset that leaves a field alone shows its default)."""
        import pandas as pd  # here, not at the top: the options check builds settings with the stdlib only

        defaults = {f.name: _default(f) for f in dataclasses.fields(cls)}
        presets = {"quick": cls.QUICK, **cls.PRESETS}
        names = list(dict.fromkeys(name for preset in presets.values() for name in preset))
        rows = [
            {
                "parameter": name,
                "full": defaults[name],
                **{k: p.get(name, defaults[name]) for k, p in presets.items()},
            }
            for name in names
        ]
        return pd.DataFrame(rows, columns=["parameter", "full", *presets])


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
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
