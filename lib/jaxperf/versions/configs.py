"""What each release's child benchmark runs (``bench_old.py``, ``bench_runahead.py``), as
checked configs. Standard library only, so that :class:`~jaxperf.versions.settings.VersionsSettings`
can be checked before any environment exists; :mod:`.bench` and :mod:`.runahead` run them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import bad_value, check_int

MODELS = ("mlp", "transformer")


@dataclass(frozen=True)
class BenchConfig:
    """What ``bench_old.py`` runs; field names match its command-line flags."""

    models: tuple[str, ...] = MODELS
    warmup: int = 3
    repeats: int = 15
    number: int = 20
    mlp_width: int = 128
    mlp_depth: int = 8
    d_model: int = 64
    blocks: int = 4
    heads: int = 4
    seq_len: int = 16
    vocab: int = 256
    batch: int = 2

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name != "models":
                check_int(f.name, getattr(self, f.name), minimum=0 if f.name == "warmup" else 1)
        models = self.models
        if isinstance(models, str) or not models or any(m not in MODELS for m in models):
            raise bad_value("models", models, "a non-empty list drawn from " + ", ".join(MODELS))

    def argv(self) -> list[str]:
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out += ["--" + f.name.replace("_", "-"), ",".join(value) if f.name == "models" else str(value)]
        return out


@dataclass(frozen=True)
class RunaheadConfig:
    """What ``bench_runahead.py`` runs; field names match its flags."""

    warmup: int = 2
    repeats: int = 7
    number: int = 8
    width: int = 512
    layers: int = 4
    batch: int = 512

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            check_int(name, value, minimum=0 if name == "warmup" else 1)

    def argv(self) -> list[str]:
        return [a for name, value in vars(self).items() for a in (f"--{name}", str(value))]
