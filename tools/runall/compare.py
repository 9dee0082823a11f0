"""The rerun check: does a rerun of the study state the answers the committed run states?

Every number and verdict the README renders is a placeholder of tools/README.template.md
(tools/readme.py fills them). For each one this reads the value in two output roots, the
committed one and a rerun's, and says:

- a **verdict** (a ``:verdict``, ``:goal>=X`` or ``:met``-like format, or a word such as
  "ties with" or a release number): *held* or *flipped*, as printed;
- a **number whose summary records a spread**: *inside* or *outside* the committed spread.
  The spread is the range the summary holds for it: the ``{median, q25, q75}`` (or
  ``{median, lo, hi}``, over fresh processes)
  statistic it belongs to (a quartile placeholder is judged by that statistic's median), a
  ``<field>_pair`` statistic beside it, or ``<field>_q25`` / ``<field>_q75`` beside it; the
  range is widened to hold the committed value, as jaxperf_study.goals judges a goal;
- **any other number**: "no spread recorded", and whether it prints the same.

A placeholder of a study the rerun did not make is "not rerun" when the check is limited to
the studies a run made (``studies``), else "missing in the rerun". A flipped verdict or a
number outside its committed spread or a value missing in the rerun fails the check
(:attr:`Check.failed`). Stdlib only.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parents[1]
if str(TOOLS) not in sys.path:  # tools/readme.py, the placeholders' one reader
    sys.path.insert(0, str(TOOLS))

import readme  # noqa: E402

_ERRORS = (readme.RenderError, ValueError, TypeError, IndexError, KeyError)
QUARTILES = ("median", "q25", "q75", "lo", "hi")


@dataclass
class Row:
    """One placeholder compared: what each run prints, the spreads, and the outcome."""

    placeholder: str  # "cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f"
    study: str
    kind: str  # "verdict" or "number"
    status: str  # held, flipped, inside, outside, same, moved, missing in the rerun, ...
    committed: str = ""
    rerun: str = ""
    committed_spread: str = "no spread recorded"
    rerun_spread: str = ""
    judged: str = ""  # what the spread judges, when it is not the printed value
    #: how far the rerun's median moved toward the committed range's edge on its side, in units
    #: of the range's half-width before the committed run's inflation (1: at the uninflated edge)
    move: float | None = None


@dataclass
class Check:
    committed_root: Path
    rerun_root: Path
    rows: list[Row] = field(default_factory=list)
    runs: dict[str, list[str]] = field(default_factory=dict)  # side -> "commit (date)" of its studies
    quick: bool = False  # the rerun is a smoke run
    inflation_used: float = 1.0  # the committed run's rerun inflation
    calibration: dict[str, Any] = field(default_factory=dict)  # rerun_report fills it

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.rows)

    @property
    def failed(self) -> bool:
        return bool(self.count("flipped") or self.count("outside") or self.count("missing in the rerun"))


def split_results(given: str | Path) -> tuple[Path, str | None]:
    """``(output root, backend or None)`` from an output root (holding ``results/``) or its
    ``results/<backend>`` folder; ValueError naming the folder otherwise."""
    path = Path(given).expanduser().resolve()
    if (path / "results").is_dir():
        return path, None
    if path.parent.name == "results" and path.is_dir():
        return path.parents[1], path.name
    raise ValueError(
        f"'{given}' is neither an output root (a folder holding results/) nor a results/<backend> "
        "folder (e.g. results/cpu)"
    )


#: the two ends of a recorded spread: quartiles, or [lo, hi] (jaxperf_study.reruns.spread_of: over
#: fresh processes, the range a rerun's median is expected in)
ENDS = (("q25", "q75"), ("lo", "hi"))


def _ends(node: Any) -> tuple[float, float] | None:
    if not isinstance(node, dict):
        return None
    for a, b in ENDS:
        if _num(node.get(a)) and _num(node.get(b)):
            return node[a], node[b]
    return None


def _is_stat(node: Any) -> bool:
    return _ends(node) is not None


def _num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def judged(summary: Any, path: str) -> tuple[float, float, float] | None:
    """``(value judged, q25, q75)`` where the summary records a spread for ``path``, else None."""
    value, _ = readme.walk(summary, path)
    parts = readme._split(path)
    parent = readme.walk(summary, ".".join(parts[:-1]))[0] if len(parts) > 1 else summary
    leaf = parts[-1]
    if _is_stat(value) and _num(value.get("median")):
        return (value["median"], *_ends(value))  # type: ignore[misc]
    if leaf in QUARTILES and _is_stat(parent) and _num(parent.get("median")):
        return (parent["median"], *_ends(parent))  # type: ignore[misc]
    if not (_num(value) and isinstance(parent, dict)):
        return None
    pair = parent.get(f"{leaf}_pair")
    if _is_stat(pair):
        return (value, *_ends(pair))  # type: ignore[misc]
    for a, b in ENDS:
        if _num(parent.get(f"{leaf}_{a}")) and _num(parent.get(f"{leaf}_{b}")):
            return value, parent[f"{leaf}_{a}"], parent[f"{leaf}_{b}"]
    return None


def _kind(value: Any, spec: str | None) -> str:
    if spec and (spec == "verdict" or spec in readme.WORD_SPECS or readme.GOAL_SPEC.match(spec)):
        return "verdict"
    if spec and spec.startswith("r") and _is_stat(value):  # :ranged and :r.. quote a {median, lo, hi}
        return "number"
    return "number" if _num(value) else "verdict"


def _printed(value: Any, spec: str | None) -> str:
    try:
        return readme.fmt(value, spec)
    except _ERRORS:
        return str(value)


def _shown(x: float, spec: str | None) -> str:
    """A spread's end in the placeholder's own format where that is a number format."""
    if spec and not readme.GOAL_SPEC.match(spec) and spec not in ("verdict", *readme.WORD_SPECS):
        try:
            return format(x, spec)
        except ValueError:
            pass
    return f"{x:.3g}"


def _spread_text(stat: tuple[float, float, float] | None, spec: str | None) -> str:
    if stat is None:
        return "no spread recorded"
    return f"[{_shown(stat[1], spec)}, {_shown(stat[2], spec)}]"


def _read(root: Path, study: str, cache: dict[str, Any]) -> Any:
    try:
        return readme.load(study, cache, root)
    except readme.RenderError:
        return None


def _label(study: str, path: str, spec: str | None) -> str:
    """A placeholder as the template writes it, without the braces."""
    return f"{study} {path}" + (f":{spec}" if spec else "")


def _compare(study: str, path: str, spec: str | None, old: Any, new: Any) -> Row:
    """One placeholder found in both summaries (``old`` holds it; ``new`` may not)."""
    text = _label(study, path, spec)
    old_value, _ = readme.walk(old, path)
    row = Row(text, study, _kind(old_value, spec), "", committed=_printed(old_value, spec))
    try:
        new_value, _ = readme.walk(new, path)
    except _ERRORS as err:
        row.status, row.rerun = "missing in the rerun", f"({err})"
        return row
    row.rerun = _printed(new_value, spec)
    old_stat, new_stat = judged(old, path), judged(new, path)
    row.committed_spread, row.rerun_spread = _spread_text(old_stat, spec), _spread_text(new_stat, spec)
    if row.kind == "verdict":
        same_words = _words(row.committed) == _words(row.rerun)
        row.status = "held" if same_words else "flipped"
        if same_words and row.committed != row.rerun:
            row.judged = "its words held; the measured numbers in it moved"
        return row
    if old_stat is None:
        row.status = "same" if row.committed == row.rerun else "moved"
        return row
    if new_stat is None:  # the rerun recorded no spread: judge what it printed
        new_stat = (new_value, new_value, new_value) if _num(new_value) else None
    if new_stat is None:
        row.status = "missing in the rerun"
        return row
    if readme._split(path)[-1] in QUARTILES[1:]:
        row.judged = f"its median, {_shown(new_stat[0], spec)}"
    lo, hi = min(old_stat[1], old_stat[0]), max(old_stat[2], old_stat[0])
    row.status = "inside" if lo <= new_stat[0] <= hi else "outside"
    if not row.judged:
        row.move = _move(old_stat[0], (lo, hi), new_stat[0], _inflation(old))
    return row


def _inflation(summary: Any) -> float:
    factor = summary.get("provenance", {}).get("rerun_inflation") if isinstance(summary, dict) else None
    return float(factor) if _num(factor) and factor >= 1 else 1.0


def _move(median: float, ends: tuple[float, float], new: float, inflation: float) -> float | None:
    """``new``'s distance from ``median`` over the distance to the range's end on its side (log
    scale), times the inflation the range was widened by; None where that is not defined."""
    edge = ends[1] if new >= median else ends[0]
    if min(median, edge, new) <= 0 or edge == median:
        return None
    return inflation * math.log(new / median) / math.log(edge / median)


#: the rerun check's family level: the calibrated ranges hold every quoted number of a rerun at
#: once with this probability (under a normal law of the moves)
FAMILY_LEVEL = 0.95


def calibration(result: Check, earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """The inflation that would have held this check's moves (and ``earlier``'s, pooled): the
    root mean square of every move (:attr:`Row.move`) times the normal quantile that holds all
    k quoted numbers at once at :data:`FAMILY_LEVEL` (1 - (1 - level) / 2k), at least 1."""
    from statistics import NormalDist

    moves = [r.move for r in result.rows if r.move is not None]
    pairs = list((earlier or {}).get("pairs", []))
    if moves:
        pairs.append(
            {
                "committed": result.runs.get("committed", []),
                "rerun": result.runs.get("rerun", []),
                "moves": [round(m, 4) for m in moves],
            }
        )
    pooled = [m for p in pairs for m in p["moves"]]
    if not pooled:
        raise ValueError("no ranged number was compared: nothing to calibrate from")
    k = max(len(moves), 1)
    z = NormalDist().inv_cdf(1 - (1 - FAMILY_LEVEL) / (2 * k))
    rms = math.sqrt(sum(m * m for m in pooled) / len(pooled))
    return {
        "inflation": round(max(1.0, z * rms), 3),
        "rms_move": round(rms, 4),
        "z": round(z, 4),
        "quantities": k,
        "family_level": FAMILY_LEVEL,
        "pairs": pairs,
    }


#: the measured numbers inside a verdict sentence (decimals, thousands, standalone integers);
#: names such as ``u=8``, ``T=256``, ``sm_86`` or a release (``0.11.8``) stay, so a changed
#: choice is still a flip
_MEASURED = re.compile(
    r"(?<![\w.=,])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.])|(?<![\w.=,])-?\d+(?:\.\d+)?(?=x\b|[^\w.=]|$)"
)


def _words(text: str) -> str:
    """A verdict sentence with its measured numbers masked: what must hold on a rerun."""
    return _MEASURED.sub("#", text)


def _runs(cache: dict[str, Any]) -> list[str]:
    """The distinct commits (and first timestamp of each) the summaries read came from."""
    seen: dict[str, str] = {}
    for summary in cache.values():
        prov = summary.get("provenance", {}) if isinstance(summary, dict) else {}
        git = prov.get("git") or {}
        commit = str(git.get("commit") or "unknown")[:7] + ("+dirty" if git.get("dirty") else "")
        stamp = str(prov.get("timestamp_utc", ""))[:10]
        seen.setdefault(commit, stamp)
    return [f"{c} ({d})" if d else c for c, d in sorted(seen.items(), key=lambda kv: kv[1])]


def check(
    template: str,
    committed_root: Path,
    rerun_root: Path,
    *,
    backend: str | None = None,
    studies: set[str] | None = None,
) -> Check:
    """Compare every placeholder of ``template`` (of ``backend``'s studies, if given) between
    the two output roots. ``studies`` (``"cpu/dispatch"``...): the studies the rerun made; the
    others are "not rerun". Without it every study is expected in the rerun."""
    result = Check(Path(committed_root), Path(rerun_root))
    template = readme.resolve_blocks(template, {}, result.committed_root)  # the parts the README renders
    old_cache: dict[str, Any] = {}
    new_cache: dict[str, Any] = {}
    seen: set[str] = set()
    for m in readme.PLACEHOLDER.finditer(template):
        study, path, spec = m["study"], m["path"].strip(), m["fmt"]
        text = _label(study, path, spec)
        if text in seen or (backend and not study.startswith(f"{backend}/")):
            continue
        seen.add(text)
        old = _read(result.committed_root, study, old_cache)
        if studies is not None and study not in studies:
            result.rows.append(Row(text, study, "", "not rerun"))
            continue
        new = _read(result.rerun_root, study, new_cache)
        try:
            if old is None:
                raise readme.RenderError("no committed summary")
            readme.walk(old, path)
        except _ERRORS:
            result.rows.append(Row(text, study, "", "not in the committed results"))
            continue
        if new is None:
            result.rows.append(Row(text, study, "", "missing in the rerun", rerun="(no summary.json)"))
            continue
        result.rows.append(_compare(study, path, spec, old, new))
    result.runs = {"committed": _runs(old_cache), "rerun": _runs(new_cache)}
    result.inflation_used = max((_inflation(s) for s in old_cache.values()), default=1.0)
    result.quick = any(
        isinstance(s, dict) and s.get("provenance", {}).get("parameters", {}).get("quick")
        for s in new_cache.values()
    )
    return result
