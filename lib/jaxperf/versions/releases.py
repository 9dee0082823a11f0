"""Equinox releases and their pin files.

Each release studied has a committed pin file ``pins/<release>.txt``: a full
``pip freeze`` of exact ``name==version`` lines plus one ``# python: X.Y``
header line saying which interpreter builds its environment. Other comment
lines are kept as notes for the release table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import bad_value

if TYPE_CHECKING:
    import pandas as pd

PINS_DIR = Path(__file__).resolve().parent / "pins"

_PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_PYTHON_LINE = re.compile(r"^#\s*python:\s*(\d+\.\d+)\s*$")


@dataclass(frozen=True)
class Release:
    """One Equinox release's environment, as its pin file describes it."""

    equinox: str
    python: str  # "3.10"
    pins: dict[str, str]  # normalised package name -> exact version
    pin_file: Path
    notes: tuple[str, ...] = ()  # the pin file's comment lines, for the table

    @property
    def jax(self) -> str:
        return self.pins.get("jax", "?")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def release_key(release: str) -> tuple[int, ...]:
    """Sort key for release names: ``"0.10.2"`` -> ``(0, 10, 2)``; a non-numeric part counts as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in release.split("."))


def read_pins(path: str | os.PathLike) -> Release:
    """Parse one pin file: ``name==version`` lines and one ``# python: X.Y`` line.

    Raises ValueError naming the file and line for anything else (ranges,
    extras, URLs), a missing python line, or a missing ``equinox`` pin.
    """
    path = Path(path)
    pins: dict[str, str] = {}
    python = None
    notes = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            found = _PYTHON_LINE.match(line)
            if found:
                python = found.group(1)
            else:
                notes.append(line.lstrip("# "))
            continue
        found = _PIN_LINE.match(line)
        if not found:
            raise ValueError(
                f"{path.name}:{number}: {line!r} is not an exact pin: expected 'name==version' "
                "(pin files hold exact versions only, e.g. from pip freeze)."
            )
        pins[_normalise(found.group(1))] = found.group(2)
    if python is None:
        raise ValueError(f"{path.name}: no '# python: X.Y' line: say which Python builds this environment.")
    if "equinox" not in pins:
        raise ValueError(f"{path.name}: no 'equinox==...' pin.")
    if pins["equinox"] != path.stem:
        raise ValueError(
            f"{path.name}: pins equinox=={pins['equinox']}, but the file is named for {path.stem}."
        )
    return Release(equinox=pins["equinox"], python=python, pins=pins, pin_file=path, notes=tuple(notes))


def available_releases(pins_dir: str | os.PathLike = PINS_DIR) -> dict[str, Release]:
    """Every release with a pin file, oldest first."""
    found = {p.stem: read_pins(p) for p in Path(pins_dir).glob("*.txt")}
    return {k: found[k] for k in sorted(found, key=release_key)}


def check_releases(
    releases: Any, name: str = "releases", pins_dir: str | os.PathLike = PINS_DIR
) -> list[str]:
    """Validate a list of release names against the pin files; returns them oldest first."""
    known = available_releases(pins_dir)
    allowed = "a non-empty list of Equinox releases with pin files: " + ", ".join(known)
    if isinstance(releases, (str, bytes)) or not isinstance(releases, Sequence) or not releases:
        raise bad_value(name, releases, allowed)
    for release in releases:
        if release not in known:
            raise bad_value(name, releases, allowed + f" ({release!r} has none)")
    if len(set(releases)) != len(releases):
        raise bad_value(name, releases, allowed + ", each at most once")
    return sorted(releases, key=release_key)


def release_table(releases: Sequence[str], pins_dir: str | os.PathLike = PINS_DIR) -> pd.DataFrame:
    """The pinned versions of each release, with its pin file's first note."""
    import pandas as pd  # here: the settings check reads the pins with the standard library only

    known = available_releases(pins_dir)
    return pd.DataFrame(
        [
            {
                "equinox": r,
                "python": known[r].python,
                "jax": known[r].jax,
                "jaxlib": known[r].pins.get("jaxlib", "?"),
                "numpy": known[r].pins.get("numpy", "?"),
                "pins": len(known[r].pins),
                "pin file": known[r].pin_file.name,
                "note": known[r].notes[0] if known[r].notes else "",
            }
            for r in releases
        ]
    )
