"""Whether a notebook's published results still hold, so that a run can skip it (standard
library only; tests/test_results_fresh.py applies the same rule to the committed results).

A notebook's results hold when every summary it published (``results/<backend>/<study>/summary.json``
of each study the notebook starts with ``study.start("<study>")``) was made from a clean commit of
this repository, none of the files that made it changed since (``provenance.code``: the project
modules it loaded, less the presentation modules (:func:`presentation`), whose change a
``./run_all.sh render`` redraws; and the notebook itself), it was given the parameters this run would give,
the package versions that ran are the ones installed now, and every published result it read
(its summary's ``read``) is still the one it read. Anything else is a reason to run it again.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

#: Presentation: code that draws or words what the records hold and computes no number of
#: them. A change to it needs ``./run_all.sh render`` (redraw from the records), never a rerun.
#: The one rule: these shared modules of lib/jaxperf/, any study's ``figures.py`` and
#: ``summary_md.py``, and every Markdown template (``*.md``).
PRESENTATION_SHARED = (
    "plots.py",
    "palette.py",
    "figure_rules.py",
    "figure_overlaps.py",
    "display.py",
    "markdown.py",
    "pages.py",
)
PRESENTATION_NAMES = ("figures.py", "summary_md.py")


def presentation(path: str) -> bool:
    """Whether the project file ``path`` (project-relative) is presentation only."""
    p = PurePosixPath(path)
    if p.suffix == ".md":
        return True
    in_lib = p.parts[:2] == ("lib", "jaxperf")
    return in_lib and (p.name in PRESENTATION_NAMES or (len(p.parts) == 3 and p.name in PRESENTATION_SHARED))


def measuring(files: list[str]) -> list[str]:
    """The ``files`` whose change can move a result's numbers (all but :func:`presentation`)."""
    return [f for f in files if not presentation(f)]


_START = re.compile(r'study\.start\(\\?"([A-Za-z0-9_]+)\\?"')


def studies(notebook_text: str) -> list[str]:
    """The studies a notebook starts (its source, as text: JSON escapes are allowed)."""
    return sorted(set(_START.findall(notebook_text)))


def _git(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=60)


def changed_files(project: Path, commit: str, files: list[str]) -> list[str] | None:
    """The ``files`` that differ between ``commit`` and the working tree (committed or not);
    None when ``commit`` is not in this repository's history."""
    if _git(project, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return None
    if not files:
        return []
    diff = _git(project, "diff", "--name-only", commit, "--", *files)
    untracked = _git(project, "ls-files", "--others", "--exclude-standard", "--", *files)
    return sorted(set(diff.stdout.split()) | set(untracked.stdout.split()))


def _short(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def why_stale(
    project: Path,
    root: Path,
    backend: str,
    notebook: Path,
    parameters: dict[str, Any],
    versions: dict[str, str] | None = None,
) -> str | None:
    """Why ``notebook``'s published results under ``root`` must be made again, or None when
    they hold. ``parameters``: what this run would inject; ``versions``: the installed package
    versions (None: not compared)."""
    results = root / "results" / backend
    if not (results / notebook.name).is_file():
        return "no published run of it"
    names = studies(notebook.read_text())
    if not names:
        return "it starts no study whose results could be checked"
    try:
        rel_notebook = notebook.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return "it is not one of the project's notebooks"
    for study in names:
        path = results / study / "summary.json"
        if not path.is_file():
            return f"no published {study} summary"
        summary = json.loads(path.read_text())
        prov = summary.get("provenance", {})
        git = prov.get("git", {})
        if git.get("dirty") is not False or not git.get("commit"):
            return f"its {study} results were made from a dirty tree"
        changed = changed_files(project, git["commit"], [*measuring(prov.get("code", [])), rel_notebook])
        if changed is None:
            return f"its {study} results come from a commit not in this history ({git['commit'][:7]})"
        if changed:
            return f"changed since {git['commit'][:7]}: {_short(changed)}"
        given = prov.get("parameters", {})
        moved = [f"{k}={given.get(k)!r} -> {v!r}" for k, v in parameters.items() if given.get(k) != v]
        if moved:
            return f"other parameters: {_short(moved)}"
        if versions is not None:
            ran = prov.get("packages", {})
            differ = [
                f"{k} {ran[k]} -> {versions[k]}"
                for k in sorted(ran)
                if k in versions and ran[k] != versions[k]
            ]
            if differ:
                return f"other package versions: {_short(differ)}"
        for source in summary.get("read", []):
            now = root / source["path"]
            if not now.is_file():
                return f"its input {source['path']} is gone"
            made = json.loads(now.read_text()).get("provenance", {})
            later = str(made.get("timestamp_utc", "")) > str(prov.get("timestamp_utc", ""))
            if made.get("git", {}).get("commit") != source.get("commit") or later:
                return f"its input {source['path']} was made again"
    return None


def redraw_needed(project: Path, root: Path, backend: str, notebook: Path) -> list[str]:
    """The presentation files (:func:`presentation`) that changed since ``notebook``'s published
    results were made: its results hold, but ``./run_all.sh render`` would redraw them."""
    results, found = root / "results" / backend, set()
    for study in studies(notebook.read_text()):
        try:
            prov = json.loads((results / study / "summary.json").read_text()).get("provenance", {})
        except (OSError, ValueError):
            continue
        shown = [f for f in prov.get("code", []) if presentation(f)]
        found.update(changed_files(project, prov.get("git", {}).get("commit", ""), shown) or [])
    return sorted(found)
