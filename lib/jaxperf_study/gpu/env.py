"""What ran on the device machine (:func:`versions_report`: the GPU machine brings its own JAX,
0.11.2, where jaxperf pins 0.12.0.1), and the helpers every part shares: a budget, points
measured inside it, figures saved without IPython (the GPU machine has none)."""

from __future__ import annotations

import importlib.metadata as md
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from jaxperf.paths import PROJECT_ROOT

from .. import plots

# Distributions whose versions a GPU run records, beyond provenance.PACKAGES.
PREFIXES = ("jax", "jaxlib", "equinox", "triton", "nvidia-", "numpy", "pandas", "matplotlib", "seaborn")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:4])


def _satisfies(version: str, spec: str) -> bool:
    """``==X`` and ``>=X`` (the only forms pyproject's runtime pins use); others count as met."""
    for part in filter(None, (s.strip() for s in spec.split(","))):
        op, want = re.match(r"^(==|>=)?\s*(.*)$", part).groups()  # type: ignore[union-attr]
        have, need = _version_tuple(version), _version_tuple(want)
        if (op == "==" and have != need) or (op == ">=" and have < need):
            return False
    return True


def pins() -> dict[str, str]:
    """``{package: specifier}`` of pyproject.toml's runtime dependencies and its ``study``
    extra (``{}`` if it is absent). A bounded range (the core's jax, jaxlib, equinox) reads
    as the version requirements.lock pins, the one the study runs with; lower bounds stay."""
    try:
        meta = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return {}
    try:
        lock = (PROJECT_ROOT / "requirements.lock").read_text().splitlines()
    except OSError:
        lock = []
    locked = dict(line.split("==", 1) for line in lock if "==" in line and not line.startswith("#"))
    out = {}
    for req in [*meta.get("dependencies", []), *meta.get("optional-dependencies", {}).get("study", [])]:
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", req)
        if match:
            name = match.group(1).lower()
            spec = match.group(3).strip()
            out[name] = f"=={locked[name]}" if "<" in spec and name in locked else spec
    return out


def installed() -> dict[str, str]:
    """Versions of every installed distribution named by :data:`PREFIXES` (first on sys.path wins)."""
    found: dict[str, str] = {}
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name and name.startswith(PREFIXES) and name not in found:
            found[name] = dist.version
    return dict(sorted(found.items()))


def versions_report() -> dict[str, Any]:
    """The versions that ran, the pins, and one line per pin the run does not meet."""
    have = installed()
    wanted = pins()
    differ = []
    for name, spec in wanted.items():
        version = have.get(name) or next((d.version for d in md.distributions(name=name)), None)
        if version is None:
            differ.append(f"{name}: absent (pinned {spec or 'any'})")
        elif spec and not _satisfies(version, spec):
            differ.append(f"{name}: {version} ran (pinned {spec})")
    return {"ran": have, "pins": wanted, "differ_from_pins": differ}


@dataclass
class Budget:
    """A part's time: ``fits(predicted_s)`` says whether a point predicted to take that long
    still ends inside ``seconds`` (with ``margin_s`` kept for writing the results)."""

    seconds: float
    margin_s: float = 8.0
    started: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def fits(self, predicted_s: float) -> bool:
        return self.elapsed() + predicted_s + self.margin_s <= self.seconds

    def reason(self, predicted_s: float) -> str:
        return (
            f"not measured: the part's budget of {self.seconds:.0f} s would be exceeded "
            f"({self.elapsed():.0f} s spent, next point predicted at ~{predicted_s:.0f} s)"
        )


def save_figure(study: Any, fig: Any, name: str, data: pd.DataFrame, note: str = "") -> None:
    """``study.figure`` without displaying: saved (PNG, SVG, CSV, provenance footer), listed
    in the study's summary, closed."""
    full = name if name.startswith(study.name) else f"{study.name}_{name}"
    study.figures[full] = plots.save(fig, study.figures_dir, full, data, study.provenance, note=note)
    plt.close(fig)


# A point's predicted time: the last point's x min(T ratio, this) (compiles grow with T,
# the timed part does not: each timed batch is sized to a fixed time).
GROWTH_CAP = 4.0


def predict(last: tuple[int, float] | None, T: int) -> float:
    """Seconds the point at ``T`` is predicted to take, from ``last`` = (its T, its seconds)."""
    if last is None:
        return 0.0
    prev_T, seconds = last
    return seconds * min(T / prev_T, GROWTH_CAP)


def points(
    study: Any,
    items: Any,
    keys_of: Callable[[Any], list[dict[str, Any]]],
    measure: Callable[[Any], Any],
    budget: Budget,
    missing: list[pd.DataFrame],
    label: Callable[[Any], str],
    size: Callable[[Any], int] = int,
    first_s: float = 0.0,
) -> Iterator[tuple[Any, Any]]:
    """Yields ``(item, measure(item))`` for each item predicted to fit ``budget`` (:func:`predict`
    from the last item's ``size`` and seconds; ``first_s`` for the first); the items skipped or
    failed go to ``missing`` as "not measured" rows (``keys_of(item)``)."""
    last = None
    for item in items:
        predicted = predict(last, size(item)) if last else first_s
        if not budget.fits(predicted):
            missing.append(not_measured_rows(keys_of(item), budget.reason(predicted)))
            continue
        start = time.perf_counter()
        try:
            found = measure(item)
        except Exception as err:  # noqa: BLE001 -- one point's failure is a result, the part goes on
            missing.append(not_measured_rows(keys_of(item), failure(err)))
            continue
        finally:
            last = (size(item), time.perf_counter() - start)
        yield item, found
        print(f"[{study.name}] {label(item)}: {last[1]:.1f} s ({budget.elapsed():.0f} s spent)", flush=True)


def failure(err: BaseException) -> str:
    """A failed point's reason: the exception's type and first line."""
    first = str(err).splitlines()[0][:300] if str(err) else ""
    return f"failed: {type(err).__name__}: {first}"


def not_measured_rows(keys: list[dict[str, Any]], reason: str) -> pd.DataFrame:
    """One row per skipped point, with status "not measured" and the reason."""
    return pd.DataFrame([{**k, "status": "not measured", "reason": reason} for k in keys])
