"""Every committed result was made by a clean commit of the code it reports, and no change to
that code has landed since (issue 19: results from a dirty tree, or from code that changed
after them, cannot be cited).

Each ``results/<backend>/<study>/summary.json`` records the commit that ran (``provenance.git``),
whether its tree was clean, and the project files whose code made it (``provenance.code``: the
jaxperf modules loaded, the study's whole package); the study's notebook is the source notebook
that starts it. A result is stale when any of those files differs between its commit and HEAD.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from runall import fresh  # noqa: E402

SUMMARIES = sorted(ROOT.glob("results/*/*/summary.json"))


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def has_history() -> bool:
    shallow = git("rev-parse", "--is-shallow-repository").stdout.strip()
    return git("rev-parse", "HEAD").returncode == 0 and shallow != "true"


def notebook_of(study: str) -> list[str]:
    """The source notebooks that start ``study`` (``jaxperf.study.start("<study>"``)."""
    return [
        p.relative_to(ROOT).as_posix()
        for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
        if study in fresh.studies(p.read_text())
    ]


def stale_files(summary: dict, path: Path) -> list[str]:
    """The files that made ``summary`` and changed since (run_all's own rule: tools/runall/fresh.py)."""
    prov = summary["provenance"]
    changed = fresh.changed_files(
        ROOT, prov["git"]["commit"], [*fresh.measuring(prov["code"]), *notebook_of(summary["study"])]
    )
    assert changed is not None, f"{path}: its commit {prov['git']['commit'][:10]} is not in this history"
    return changed


def test_there_are_committed_results_to_check():
    assert SUMMARIES, "no results/*/*/summary.json: the check below would pass vacuously"


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: p.relative_to(ROOT / "results").parent.as_posix())
def test_a_committed_result_comes_from_a_clean_commit_of_unchanged_code(path):
    if not has_history():
        pytest.skip("needs the git history (a shallow or missing clone cannot tell)")
    summary = json.loads(path.read_text())
    prov = summary["provenance"]
    where = path.relative_to(ROOT).as_posix()
    assert prov["git"]["dirty"] is False, f"{where} was made from a dirty tree ({prov['git']['commit'][:10]})"
    assert git("cat-file", "-e", f"{prov['git']['commit']}^{{commit}}").returncode == 0, (
        f"{where}: its commit {prov['git']['commit'][:10]} is not in this repository's history"
    )
    assert prov.get("code"), f"{where} does not record the code that made it: rerun its notebook"
    stale = stale_files(summary, path)
    assert not stale, f"{where} is older than changes to the code that made it: {stale[:5]} (rerun it)"


def test_a_change_to_the_code_makes_a_result_stale(tmp_path):
    """The check itself can fail: a result recorded before a commit that changed a measuring
    file, with that file in its code list, is stale."""
    if not has_history():
        pytest.skip("needs the git history")
    # the newest commit that changed a file whose change moves numbers (a commit of README or
    # template text alone stales nothing, by the presentation rule tested below)
    for k in range(1, 50):
        changed = fresh.measuring(git("diff", "--name-only", f"HEAD~{k}", f"HEAD~{k - 1}").stdout.split())
        if changed:
            break
    else:
        pytest.skip("none of the last 50 commits changed a measuring file")
    parent = git("rev-parse", f"HEAD~{k}").stdout.strip()
    summary = {
        "study": "none",
        "provenance": {"git": {"commit": parent, "dirty": False}, "code": changed[:1]},
    }
    assert stale_files(summary, tmp_path / "summary.json") == changed[:1]


def test_a_presentation_change_needs_a_render_and_a_measuring_change_a_rerun(tmp_path):
    """fresh.py's one rule: plots, palette, figure and summary-text modules and templates do not
    stale a result (``./run_all.sh render`` redraws it); a module that measures does."""
    project = tmp_path / "project"
    code = {
        "lib/jaxperf/palette.py": "RED = 'r'\n",
        "lib/jaxperf/alpha/figures.py": "W = 3\n",
        "lib/jaxperf/alpha/summary_md.py": "T = ''\n",
        "lib/jaxperf/timing.py": "N = 5\n",
        "lib/jaxperf/alpha/palette.py": "X = 1\n",  # a study module named like a shared one: measures
    }
    for rel, text in code.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    notebook = project / "notebooks" / "01_alpha.ipynb"
    notebook.parent.mkdir()
    notebook.write_text('{"cells": [{"source": ["study.start(\\"alpha\\")"]}]}')
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True).stdout
    summary = project / "results" / "cpu" / "alpha" / "summary.json"
    summary.parent.mkdir(parents=True)
    (project / "results" / "cpu" / notebook.name).write_text("{}")
    prov = {"git": {"commit": commit.strip(), "dirty": False}, "code": sorted(code), "parameters": {}}
    summary.write_text(json.dumps({"study": "alpha", "provenance": prov}))

    def why() -> str | None:
        return fresh.why_stale(project, project, "cpu", notebook, {}, None)

    assert why() is None
    for rel in list(code)[:3]:
        (project / rel).write_text(code[rel] + "# changed\n")
    assert why() is None  # presentation only: the result holds
    assert fresh.redraw_needed(project, project, "cpu", notebook) == sorted(list(code)[:3])
    for rel in list(code)[3:]:
        (project / rel).write_text(code[rel] + "# changed\n")
        assert rel in (why() or ""), rel
        (project / rel).write_text(code[rel])
