"""Notebook 03's parameters as one typed, frozen object, with its smoke-run preset."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ..errors import bad_value, check_int
from ..settings import StudySettings
from .configs import BenchConfig, RunaheadConfig
from .releases import check_releases


@dataclasses.dataclass(frozen=True)
class VersionsSettings(StudySettings):
    """One environment per Equinox release; the benchmark's sizes are :class:`BenchConfig`'s."""

    releases: tuple[str, ...] = ("0.7.1", "0.9.2", "0.10.2", "0.11.12", "0.13.8")
    rounds: int = 2  # releases run round-robin this many times (drift spreads over all)
    warmup: int = 3
    repeats: int = 15  # interleaved repeats per round
    number: int = 20  # calls per method per repeat
    reuse_project_env: bool = True
    env_timeout_s: int = 900
    bench_timeout_s: int = 1800
    # Which release made eqx.filter_jit wait for every call (issue 21): 0.11.6-0.11.10 share
    # jax 0.4.35, so their differences are Equinox's alone; today's release on today's JAX.
    runahead_releases: tuple[str, ...] = ("0.11.6", "0.11.7", "0.11.8", "0.11.9", "0.11.10", "0.13.8")
    runahead_repeats: int = 7  # interleaved repeats per round (rounds as above)
    runahead_number: int = 8  # calls per variant per repeat

    # When #192 was filed vs today: one build (0.13.8 reuses .venv), one short round.
    QUICK: ClassVar[dict[str, Any]] = {
        "releases": ("0.7.1", "0.13.8"),
        "rounds": 1,
        "repeats": 5,
        "number": 10,
        "runahead_releases": ("0.13.8",),
        "runahead_repeats": 3,
        "runahead_number": 4,
    }

    def validate(self) -> None:
        if self.backend not in ("auto", "cpu"):
            raise bad_value(
                "backend",
                self.backend,
                "'auto' or 'cpu' (the old jaxlib wheels on PyPI are CPU-only, so every release runs "
                "on CPU host devices; run this notebook with --backend cpu)",
            )
        if not isinstance(self.reuse_project_env, bool):
            raise bad_value("reuse_project_env", self.reuse_project_env, "True or False")
        for name in (
            "rounds",
            "repeats",
            "number",
            "env_timeout_s",
            "bench_timeout_s",
            "runahead_repeats",
            "runahead_number",
        ):
            check_int(name, getattr(self, name), minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        object.__setattr__(self, "releases", tuple(check_releases(list(self.releases))))
        runahead = check_releases(self.runahead_releases, name="runahead_releases")
        object.__setattr__(self, "runahead_releases", tuple(runahead))

    @property
    def bench(self) -> BenchConfig:
        return BenchConfig(warmup=self.warmup, repeats=self.repeats, number=self.number)

    @property
    def runahead_bench(self) -> RunaheadConfig:
        return RunaheadConfig(repeats=self.runahead_repeats, number=self.runahead_number)
