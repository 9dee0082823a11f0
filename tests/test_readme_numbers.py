"""Every number the README quotes from a committed run is checked against the
summary.json it comes from.

In README.md a quoted number is followed by a marker naming its source:
``**0.41x**<!-- n cpu/dispatch fix.rows.0.median -->`` reads
``results/cpu/dispatch/summary.json`` and walks ``fix`` -> ``rows`` -> ``0`` ->
``median`` (a key may hold spaces: everything up to ``-->``). The number as written (its decimals) must equal the value rounded to
as many decimals. A rerun that moves a number makes this test fail until the
README is updated from the new summary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jaxperf.paths import PROJECT_ROOT

# A number (with optional thousands separators and sign), optional unit/emphasis, then the marker.
MARKED = re.compile(
    r"(?P<number>[-+−]?\d[\d,]*(?:\.\d+)?)(?:\s?(?:x|%|ms|s|µs|it/s))?\**\s*"
    r"<!--\s*n\s+(?P<study>[\w/.-]+)\s+(?P<key>.+?)\s*-->"
)


def marked_numbers(text: str) -> list[tuple[str, str, str]]:
    """(number as written, study folder under results/, dotted key) for each marker in ``text``."""
    return [(m["number"], m["study"], m["key"]) for m in MARKED.finditer(text)]


def lookup(summary: Any, key: str) -> Any:
    """Walk ``key`` through dicts and lists. A dict key may itself hold dots or spaces
    (``fixed_jax_comparisons.mlp: 0.9.2 -> 0.10.2.extra_cpu_ms``): the longest key that
    matches the rest of the path wins."""
    node, rest = summary, key
    while rest:
        if isinstance(node, list):
            part, _, rest = rest.partition(".")
            node = node[int(part)]
            continue
        if not isinstance(node, dict):
            raise KeyError(f"{key!r}: {type(node).__name__} has no {rest!r}")
        match = next(
            (
                k
                for k in sorted(map(str, node), key=len, reverse=True)
                if rest == k or rest.startswith(k + ".")
            ),
            None,
        )
        if match is None:
            raise KeyError(f"{key!r}: no {rest.split('.')[0]!r} in {type(node).__name__}")
        node, rest = node[match], rest[len(match) + 1 :]
    return node


def agrees(written: str, value: Any) -> bool:
    number = float(written.replace(",", "").replace("−", "-"))
    decimals = len(written.split(".")[1]) if "." in written else 0
    return round(float(value), decimals) == pytest.approx(number, abs=10 ** -(decimals + 6))


def test_the_parser_reads_markers_and_decimals():
    text = "ran **0.41x**<!-- n cpu/dispatch a.0.b --> and 1,234 ms<!-- n cpu/loops c / d -->"
    assert marked_numbers(text) == [("0.41", "cpu/dispatch", "a.0.b"), ("1,234", "cpu/loops", "c / d")]
    assert lookup({"a": [{"b": 0.4149}]}, "a.0.b") == 0.4149
    assert lookup({"m: 0.9 -> 0.10": {"x": 2}}, "m: 0.9 -> 0.10.x") == 2
    assert agrees("0.41", 0.4149) and not agrees("0.41", 0.4151) and agrees("1,234", 1234.4)
    with pytest.raises(KeyError, match="'zz'"):
        lookup({"a": 1}, "zz")


def _readme_cases() -> list[tuple[str, str, str]]:
    return marked_numbers((PROJECT_ROOT / "README.md").read_text())


def test_the_readme_marks_its_numbers():
    assert len(_readme_cases()) >= 10, (
        "README.md should mark the numbers it quotes (see this module's docstring)"
    )


@pytest.mark.parametrize(("written", "study", "key"), _readme_cases())
def test_each_readme_number_matches_its_committed_summary(written, study, key):
    path = Path(PROJECT_ROOT / "results" / study / "summary.json")
    assert path.exists(), (
        f"README quotes {written} from {path.relative_to(PROJECT_ROOT)}, which is not committed"
    )
    value = lookup(json.loads(path.read_text()), key)
    assert agrees(written, value), f"README says {written}, {study}/summary.json {key} = {value}"
