"""Whether a notebook's published results still hold, so that a run can skip it (standard
library only; tests/test_results_fresh.py applies the same rule to the committed results).

A notebook's results hold when every summary it published (``results/<backend>/<study>/summary.json``
of each study the notebook starts with ``study.start("<study>")``) was made from a clean commit of
this repository, none of the files that made it changed its code since (``provenance.code``: the
project modules it loaded, less the presentation modules (:func:`presentation`), whose change a
``./run_all.sh render`` redraws; and the notebook itself), it was given the parameters this run would give,
the package versions that ran are the ones installed now, and every published result it read
(its summary's ``read``) is still the one it read. Anything else is a reason to run it again.

A file's code is what :mod:`.moves` reads: a file git saw moved is followed to where it is now,
and a move, or an edit of imports, module paths, docstrings, comments or layout, changes no
code; a refactor declared in ``tools/runall/refactors.json`` (pinned by hashes) neither. A
notebook's code is its code cells: its text cells are presentation, like the modules below.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

from . import moves

#: Presentation: code that draws or words what the records hold and computes no number of
#: them. A change to it needs ``./run_all.sh render`` (redraw from the records), never a rerun.
#: The one rule: these shared modules (top-level in lib/jaxperf/ or lib/jaxperf_study/), any
#: study's ``figures.py`` and ``summary_md.py``, and every Markdown template (``*.md``).
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
#: the packages under lib/: the one pip installs, and the study beside it
PACKAGES = ("jaxperf", "jaxperf_study")


def presentation(path: str) -> bool:
    """Whether the project file ``path`` (project-relative) is presentation only."""
    p = PurePosixPath(path)
    if p.suffix == ".md":
        return True
    in_lib = len(p.parts) > 2 and p.parts[0] == "lib" and p.parts[1] in PACKAGES
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


def changed_files(project: Path, commit: str, files: list[str], strict: bool = False) -> list[str] | None:
    """The ``files`` (paths at ``commit``) whose code differs between ``commit`` and the working
    tree (committed or not), each followed to where it is now (:mod:`.moves`); None when
    ``commit`` is not in this repository's history. A declared refactor is read only under the
    Python that pinned it: under another, its file counts as changed (a rerun, the safe side of
    a skip), or with ``strict`` (where "changed" would discard results) raises
    :class:`.moves.WrongPython`."""
    if _git(project, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return None
    if not files:
        return []
    moved = moves.renames(lambda *args: _git(project, *args), commit)
    now = {f: moved.get(f, f) for f in files}
    diff = _git(project, "diff", "--name-only", "--no-renames", commit, "--", *files, *now.values())
    untracked = _git(project, "ls-files", "--others", "--exclude-standard", "--", *now.values())
    touched = set(diff.stdout.split()) | set(untracked.stdout.split())
    suspects = [f for f in files if f != now[f] or f in touched or now[f] in touched]
    if not suspects:
        return []
    modules = moves.module_map(moved)
    graph = moves.refactors()
    changed = []
    for path in suspects:
        was = _git(project, "show", f"{commit}:{path}")
        if was.returncode != 0:  # not a file at that commit: any trace of it now is a change
            changed.append(path)
            continue
        old = moves.code_of(was.stdout, path, modules)
        present = now[path] if (project / now[path]).is_file() else _found(project, commit, old, path)
        if present is None:
            changed.append(path)
            continue
        new = moves.code_of((project / present).read_text(), present)
        if new != old and strict and graph:
            moves.check_python()
        if new != old and not moves.declared_same(moves.digest(old), moves.digest(new), graph):
            changed.append(path)
    return sorted(changed)


def _found(project: Path, commit: str, old: str, path: str) -> str | None:
    """Where a file git saw deleted since ``commit`` lives now when git did not pair it with its
    new path (a move squashed with edits, in a file too small for git's similarity): the one
    file added since whose code is ``old``, the most of its path's tail shared on a tie."""
    added = _git(project, "diff", "--name-only", "--no-renames", "--diff-filter=A", commit)
    untracked = _git(project, "ls-files", "--others", "--exclude-standard")
    suffix = PurePosixPath(path).suffix
    same = [
        f
        for f in sorted(set(added.stdout.split()) | set(untracked.stdout.split()))
        if f.endswith(suffix)
        and (project / f).is_file()
        and moves.code_of((project / f).read_text(), f) == old
    ]

    def tail(candidate: str) -> int:
        a, b = PurePosixPath(path).parts[::-1], PurePosixPath(candidate).parts[::-1]
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

    best = max(map(tail, same), default=0)
    top = [f for f in same if tail(f) == best]
    return top[0] if len(top) == 1 else None


def renamed_parameters(project: Path, commit: str, given: dict[str, Any]) -> dict[str, Any]:
    """The parameters a result was given, with module paths moved since ``commit`` written as
    they are now (a factory ``"package.module:function"`` whose module moved is the same one)."""
    if _git(project, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return given
    modules = moves.module_map(moves.renames(lambda *args: _git(project, *args), commit))
    return {k: moves.rename_value(v, modules) for k, v in given.items()}


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
        given = renamed_parameters(project, git["commit"], prov.get("parameters", {}))
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


#: ``results/<backend>/drawn.json``: {study: {file: digest of its code}}, the presentation code
#: (and the notebook's text cells) that each study's published figures and text were drawn with,
#: written by the run that published them (a measuring run or a render)
DRAWN = "drawn.json"


def _in_project(project: Path, notebook: Path) -> str:
    """``notebook``'s project-relative path (one outside the project: its absolute path)."""
    try:
        return notebook.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return notebook.resolve().as_posix()


def _shown(project: Path, results: Path, notebook: Path) -> dict[str, tuple[str, list[str]]]:
    """{study: (the commit its published results were made at, its presentation files)}."""
    out = {}
    for study in studies(notebook.read_text()):
        try:
            prov = json.loads((results / study / "summary.json").read_text()).get("provenance", {})
        except (OSError, ValueError):
            continue
        out[study] = (
            prov.get("git", {}).get("commit", ""),
            [f for f in prov.get("code", []) if presentation(f)],
        )
    return out


def _digests(project: Path, files: list[str], notebook: Path) -> dict[str, str]:
    """The digest of each of ``files``' code now (one gone: none), and of ``notebook``'s text cells."""
    nb = _in_project(project, notebook)
    out = {
        f: moves.digest(moves.code_of((project / f).read_text(), f)) for f in files if (project / f).is_file()
    }
    return out | {nb: moves.digest(moves.code_of(notebook.read_text(), nb, prose=True))}


def record_drawn(project: Path, root: Path, backend: str, notebook: Path) -> None:
    """Note in :data:`DRAWN` what ``notebook``'s studies, just published, were drawn with."""
    path, results = root / "results" / backend / DRAWN, root / "results" / backend
    try:
        drawn = json.loads(path.read_text())
    except (OSError, ValueError):
        drawn = {}
    for study, (_, files) in _shown(project, results, notebook).items():
        drawn[study] = _digests(project, files, notebook)
    path.write_text(json.dumps(drawn, indent=1, sort_keys=True) + "\n")


def redraw_needed(project: Path, root: Path, backend: str, notebook: Path) -> list[str]:
    """The presentation files (:func:`presentation`, and the notebook when its text cells
    changed) that changed since ``notebook``'s published results were made and since they were
    last drawn (:data:`DRAWN`): its results hold, but ``./run_all.sh render`` would redraw them."""
    results, found = root / "results" / backend, set()
    try:
        drawn = json.loads((results / DRAWN).read_text())
    except (OSError, ValueError):
        drawn = {}
    nb = _in_project(project, notebook)
    for study, (commit, shown) in _shown(project, results, notebook).items():
        changed = set(changed_files(project, commit, shown) or [])
        changed |= {nb} if _prose_changed(project, commit, notebook) else set()
        now, was = _digests(project, sorted(changed - {nb}), notebook), drawn.get(study, {})
        found.update(f for f in changed if f not in now or was.get(f) != now[f])
    return sorted(found)


def _prose_changed(project: Path, commit: str, notebook: Path) -> bool:
    """Whether the text cells of ``notebook`` (a project notebook) differ from ``commit``'s."""
    try:
        path = notebook.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return False
    if _git(project, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return False
    moved = moves.renames(lambda *args: _git(project, *args), commit)
    first = next((old for old, new in moved.items() if new == path), path)
    was = _git(project, "show", f"{commit}:{first}")
    if was.returncode != 0:
        return False
    old = moves.code_of(was.stdout, first, moves.module_map(moved), prose=True)
    return old != moves.code_of(notebook.read_text(), path, prose=True)
