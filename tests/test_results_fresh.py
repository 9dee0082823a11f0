"""Every committed result was made by a clean commit of the code it reports, and no change to
that code has landed since (issue 19: results from a dirty tree, or from code that changed
after them, cannot be cited).

Each ``results/<backend>/<study>/summary.json`` records the commit that ran (``provenance.git``),
whether its tree was clean, and the project files whose code made it (``provenance.code``: the
jaxperf modules loaded, the study's whole package); the study's notebook is the source notebook
that starts it. A result is stale when the code of any of those files differs between its commit
and the working tree: a file git saw moved is followed, and a move, or an edit of its imports' spelling,
module paths, docstrings or comments, is no change (tools/runall/moves.py; issue 47).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from runall import fresh, moves  # noqa: E402

SUMMARIES = sorted(ROOT.glob("results/*/*/summary.json"))
#: results kept after the code that made them changed, because their device cannot run them again
#: now (issue 63): each with why, and the files whose change it is kept through
KEPT = ROOT / "results" / "kept.json"


def kept() -> dict[str, dict]:
    """``results/kept.json``'s results (``results/<backend>/<study>`` -> {why, changed, ...})."""
    return json.loads(KEPT.read_text())["results"] if KEPT.is_file() else {}


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
        ROOT,
        prov["git"]["commit"],
        [*fresh.measuring(prov["code"]), *notebook_of(summary["study"])],
        strict=True,
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
    study = path.parent.relative_to(ROOT).as_posix()
    declared = kept().get(study)
    if declared is None:
        assert not stale, f"{where} is older than changes to the code that made it: {stale[:5]} (rerun it)"
        return
    # kept as it was: every change it is older than is declared, and every declared change happened
    assert declared.get("why") and declared.get("changed"), (
        f"results/kept.json: {study} needs why and changed"
    )
    undeclared = sorted(set(stale) - set(declared["changed"]))
    assert not undeclared, (
        f"{where} is older than changes results/kept.json does not declare: {undeclared[:5]}"
    )
    unchanged = sorted(set(declared["changed"]) - set(stale))
    assert not unchanged, f"results/kept.json declares changes {unchanged[:5]} that {where} is not older than"


def test_a_kept_result_is_one_that_exists():
    missing = [study for study in kept() if not (ROOT / study / "summary.json").is_file()]
    assert not missing, f"results/kept.json keeps results that do not exist: {missing}"


def test_a_change_to_the_code_makes_a_result_stale(tmp_path):
    """The check itself can fail: a result recorded before a commit that changed a measuring
    file's code, with that file in its code list, is stale."""
    if not has_history():
        pytest.skip("needs the git history")
    # the newest commit that changed the code of a file whose change moves numbers (a commit of
    # README or template text, of a docstring or an import's spelling, or a declared refactor,
    # stales nothing)
    for k in range(1, 80):
        before, after = f"HEAD~{k}", f"HEAD~{k - 1}"
        edited = git("diff", "--no-renames", "--diff-filter=M", "--name-only", before, after).stdout.split()
        status = git("diff", "-M", "--diff-filter=R", "--name-status", before, after).stdout.splitlines()
        names = moves.module_map(dict(line.split("\t")[1:] for line in status))
        graph = moves.refactors()
        changed = []
        for f in fresh.measuring(edited):
            if not (f.startswith("lib/") and f.endswith(".py")):
                continue
            was = moves.code_of(git("show", f"{before}:{f}").stdout, f, names)
            now = moves.code_of(git("show", f"{after}:{f}").stdout, f)
            if was != now and not moves.declared_same(moves.digest(was), moves.digest(now), graph):
                changed.append(f)
        if changed:
            break
    else:
        pytest.skip("none of the last 80 commits changed a measuring file's code")
    parent = git("rev-parse", before).stdout.strip()
    summary = {
        "study": "none",
        "provenance": {"git": {"commit": parent, "dirty": False}, "code": changed[:1]},
    }
    assert stale_files(summary, tmp_path / "summary.json") == changed[:1]


def _git_project(project: Path, files: dict[str, str]) -> str:
    """``files`` committed in a new repository at ``project``; the commit."""
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    _commit(project, "first")
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True
    ).stdout.strip()


def _commit(project: Path, message: str) -> None:
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
    ):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": [c]} for c in cells]})


def _publish(project: Path, commit: str, code: list[str], parameters: dict | None = None) -> None:
    summary = project / "results" / "cpu" / "alpha" / "summary.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    (project / "results" / "cpu" / "01_alpha.ipynb").write_text("{}")
    prov = {"git": {"commit": commit, "dirty": False}, "code": code, "parameters": parameters or {}}
    summary.write_text(json.dumps({"study": "alpha", "provenance": prov}))


def test_a_presentation_change_needs_a_render_and_a_measuring_change_a_rerun(tmp_path):
    """fresh.py's one rule: plots, palette, figure and summary-text modules and templates do not
    stale a result (``./run_all.sh render`` redraws it); a module that measures does."""
    project = tmp_path / "project"
    code = {
        "lib/jaxperf/palette.py": "RED = 'r'\n",
        "lib/jaxperf/alpha/figures.py": "W = 3\n",
        "lib/jaxperf_study/alpha/summary_md.py": "T = ''\n",
        "lib/jaxperf_study/plots.py": "S = 1\n",
        "lib/jaxperf/timing.py": "N = 5\n",
        "lib/jaxperf/alpha/palette.py": "X = 1\n",  # a study module named like a shared one: measures
        "lib/jaxperf_study/alpha/plots.py": "Y = 1\n",
    }
    notebook = project / "notebooks" / "01_alpha.ipynb"
    commit = _git_project(project, {**code, "notebooks/01_alpha.ipynb": _notebook('study.start("alpha")')})
    _publish(project, commit, sorted(code))

    def why() -> str | None:
        return fresh.why_stale(project, project, "cpu", notebook, {}, None)

    assert why() is None
    for rel in list(code)[:4]:
        (project / rel).write_text(code[rel] + "CHANGED = 1\n")
    assert why() is None  # presentation only: the result holds
    assert fresh.redraw_needed(project, project, "cpu", notebook) == sorted(list(code)[:4])
    fresh.record_drawn(project, project, "cpu", notebook)  # what ./run_all.sh render notes as it publishes
    assert fresh.redraw_needed(project, project, "cpu", notebook) == []  # drawn with today's code
    (project / "lib/jaxperf/palette.py").write_text("RED = 'b'\n")
    assert fresh.redraw_needed(project, project, "cpu", notebook) == ["lib/jaxperf/palette.py"]
    (project / "lib/jaxperf/palette.py").write_text(code["lib/jaxperf/palette.py"] + "CHANGED = 1\n")
    for rel in list(code)[4:]:
        (project / rel).write_text(code[rel] + "CHANGED = 1\n")
        assert rel in (why() or ""), rel
        (project / rel).write_text(code[rel])


# --- a move is not a change (issue 47) --------------------------------------------------------------

COST = '''"""The cost of a call."""

from ..errors import bad_value
from .vocab import NAMES

FACTORY = "jaxperf.alpha.examples:seed"


def cost(x):
    """Twice x."""
    if x < 0:
        raise bad_value("x", x, "x >= 0")
    return 2 * x  # doubled


def costs(xs):
    total = 0
    for x in xs:
        total += cost(x)
    return total


def cheapest(xs):
    return min(xs, key=cost)
'''
#: the same module moved to the study package: imports spelled anew, module paths and docstrings
#: rewritten, a comment and the layout changed; the same code
COST_MOVED = '''"""What one call costs (see jaxperf_study.alpha.vocab)."""

from jaxperf.errors import bad_value

from .vocab import NAMES

FACTORY = "jaxperf_study.alpha.examples:seed"


def cost(x):
    if x < 0:
        raise bad_value("x", x, "x >= 0")
    return 2 * x


def costs(xs):
    total = 0
    for x in xs:
        total += cost(x)
    return total


def cheapest(xs):
    return min(xs, key=cost)
'''
NOTEBOOK = _notebook(
    "import jaxperf.study\nfrom jaxperf.alpha import cost", 's = jaxperf.study.start("alpha")\ncost.cost(3)'
)
NOTEBOOK_MOVED = _notebook(
    "import jaxperf_study.study\nfrom jaxperf_study.alpha import cost",
    's = jaxperf_study.study.start("alpha")\ncost.cost(3)',
)


def _moved_project(tmp_path: Path) -> tuple[Path, Path, str]:
    """A project with a result made from ``lib/jaxperf/alpha/``, then that package moved to
    ``lib/jaxperf_study/alpha/`` in a commit of its own, with the imports that name it."""
    project = tmp_path / "project"
    files = {
        "lib/jaxperf/errors.py": "def bad_value(*a):\n    return ValueError(a)\n",
        "lib/jaxperf/alpha/__init__.py": '"""The alpha study."""\n',
        "lib/jaxperf/alpha/vocab.py": "NAMES = ('a', 'b')\n",
        "lib/jaxperf/alpha/cost.py": COST,
        "lib/jaxperf/alpha/examples.py": "def seed():\n    return {'step': None}\n",
        "lib/jaxperf/study.py": "def start(name):\n    return name\n",
        "notebooks/01_alpha.ipynb": NOTEBOOK,
    }
    commit = _git_project(project, files)
    _publish(
        project,
        commit,
        sorted(f for f in files if f.startswith("lib/")),
        {"factory": "jaxperf.alpha.examples:seed"},
    )
    (project / "lib" / "jaxperf_study" / "alpha").mkdir(parents=True)
    for name in ("alpha/__init__", "alpha/vocab", "alpha/cost", "alpha/examples", "study"):
        subprocess.run(
            ["git", "mv", f"lib/jaxperf/{name}.py", f"lib/jaxperf_study/{name}.py"], cwd=project, check=True
        )
    (project / "lib" / "jaxperf_study" / "alpha" / "cost.py").write_text(COST_MOVED)
    (project / "notebooks" / "01_alpha.ipynb").write_text(NOTEBOOK_MOVED)
    _commit(project, "move")
    return project, project / "notebooks" / "01_alpha.ipynb", commit


def test_a_move_with_its_imports_and_module_paths_rewritten_keeps_a_result(tmp_path):
    project, notebook, commit = _moved_project(tmp_path)
    params = {"factory": "jaxperf_study.alpha.examples:seed"}  # the moved factory: the same one
    assert fresh.why_stale(project, project, "cpu", notebook, params, None) is None
    assert "factory=" in fresh.why_stale(project, project, "cpu", notebook, {"factory": "other:seed"}, None)
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/cost.py"]) == []


@pytest.mark.parametrize(
    ("edit", "what"),
    [
        (("return 2 * x", "return 3 * x"), "a number"),
        (("from .vocab import NAMES", "from .vocab import OTHER as NAMES"), "what an import binds"),
        (
            ("from jaxperf.errors import bad_value", "from jaxperf.checks import bad_value"),
            "an import's module",
        ),
        (('"x >= 0")', '"x > 0")'), "a string"),
    ],
)
def test_a_moved_file_whose_code_changed_stales_its_result(tmp_path, edit, what):
    project, notebook, _ = _moved_project(tmp_path)
    moved = project / "lib" / "jaxperf_study" / "alpha" / "cost.py"
    moved.write_text(COST_MOVED.replace(*edit))
    assert moved.read_text() != COST_MOVED, what
    params = {"factory": "jaxperf_study.alpha.examples:seed"}
    assert "lib/jaxperf/alpha/cost.py" in (
        fresh.why_stale(project, project, "cpu", notebook, params, None) or ""
    )


def test_a_module_named_in_a_string_relative_to_its_package_is_the_module_it_names():
    old = '_EXPORTS = {"state_step": ("..fixes", "state_step"), "Spec": (".models", "Spec")}\n'
    new = '_EXPORTS = {"state_step": ("jaxperf.fixes", "state_step"), "Spec": (".models", "Spec")}\n'
    modules = {
        "jaxperf.dispatch": "jaxperf_study.dispatch",
        "jaxperf.dispatch.models": "jaxperf_study.dispatch.models",
    }
    was = moves.code_of(old, "lib/jaxperf/dispatch/__init__.py", modules)
    assert was == moves.code_of(new, "lib/jaxperf_study/dispatch/__init__.py")
    assert was != moves.code_of(
        new.replace("jaxperf.fixes", "jaxperf.other"), "lib/jaxperf_study/dispatch/__init__.py"
    )
    # a suffix (or a name in the module's own package) moves with it, whichever package it went to
    suffix = "path = PATH.with_suffix('.csv')\n"
    assert moves.code_of(suffix, "lib/jaxperf/records.py", {}) == moves.code_of(
        suffix, "lib/jaxperf_study/records.py"
    )


def test_a_notebook_whose_code_changed_stales_its_result_and_its_imports_do_not(tmp_path):
    project, notebook, _ = _moved_project(tmp_path)
    params = {"factory": "jaxperf_study.alpha.examples:seed"}
    imports = "import jaxperf_study.study\\nfrom jaxperf_study.alpha import cost"
    notebook.write_text(
        NOTEBOOK_MOVED.replace(imports, "from jaxperf_study.alpha import cost\\nimport jaxperf_study.study")
    )
    assert notebook.read_text() != NOTEBOOK_MOVED
    assert fresh.why_stale(project, project, "cpu", notebook, params, None) is None
    notebook.write_text(NOTEBOOK_MOVED.replace("cost.cost(3)", "cost.cost(4)"))
    assert "notebooks/01_alpha.ipynb" in (
        fresh.why_stale(project, project, "cpu", notebook, params, None) or ""
    )


def test_a_notebook_s_text_is_presentation_a_render_redraws(tmp_path):
    project, notebook, _ = _moved_project(tmp_path)
    params = {"factory": "jaxperf_study.alpha.examples:seed"}
    doc = json.loads(notebook.read_text())
    doc["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": ["The alpha study."]})
    notebook.write_text(json.dumps(doc))
    assert fresh.why_stale(project, project, "cpu", notebook, params, None) is None
    assert fresh.redraw_needed(project, project, "cpu", notebook) == ["notebooks/01_alpha.ipynb"]
    fresh.record_drawn(project, project, "cpu", notebook)
    assert fresh.redraw_needed(project, project, "cpu", notebook) == []


def test_a_move_git_did_not_pair_is_found_by_its_code(tmp_path):
    """A small file moved and edited in one commit (a squashed merge): git sees a deletion and
    an addition; the one added file with the same code is where it went."""
    project, notebook, commit = _moved_project(tmp_path)
    init = project / "lib" / "jaxperf_study" / "alpha" / "__init__.py"
    init.write_text('"""The alpha study: equinox#0\'s question, on every model family there is."""\n')
    subprocess.run(["git", "reset", "-q", "--soft", commit], cwd=project, check=True)
    _commit(project, "squashed")
    seen = subprocess.run(
        ["git", "diff", "-M", "--name-status", commit, "HEAD"], cwd=project, capture_output=True, text=True
    ).stdout
    assert "lib/jaxperf/alpha/__init__.py" in seen and "R" not in [
        line[:1] for line in seen.splitlines() if "__init__" in line
    ]
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/__init__.py"]) == []
    init.write_text("X = 1\n")
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/__init__.py"]) == [
        "lib/jaxperf/alpha/__init__.py"
    ]


def test_a_declared_refactor_keeps_a_result_until_its_code_changes_again(tmp_path, monkeypatch):
    project, notebook, commit = _moved_project(tmp_path)
    moved = project / "lib" / "jaxperf_study" / "alpha" / "cost.py"
    refactored = COST_MOVED.replace("return 2 * x", "return x + x")
    moved.write_text(refactored)
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/cost.py"]) == [
        "lib/jaxperf/alpha/cost.py"
    ]
    was = moves.digest(
        moves.code_of(COST_MOVED, "lib/jaxperf_study/alpha/cost.py")
    )  # the code the result ran
    now = moves.digest(moves.code_of(refactored, "lib/jaxperf_study/alpha/cost.py"))
    ledger = tmp_path / "refactors.json"
    pins = {"lib/jaxperf_study/alpha/cost.py": {"was": was, "is": now}}
    ledger.write_text(json.dumps({"refactors": [{"why": "the same sum", "test": "none", "files": pins}]}))
    monkeypatch.setattr(moves, "REFACTORS", ledger)
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/cost.py"]) == []
    moved.write_text(refactored.replace("x + x", "x + x + 0"))
    assert fresh.changed_files(project, commit, ["lib/jaxperf/alpha/cost.py"]) == [
        "lib/jaxperf/alpha/cost.py"
    ]


def test_every_declared_refactor_says_why_and_cites_its_evidence():
    entries = json.loads(moves.REFACTORS.read_text())["refactors"]
    assert entries, "tools/runall/refactors.json declares nothing: delete it rather than keep it empty"
    for entry in entries:
        assert entry["why"].strip() and entry["evidence"].strip() and entry["files"], entry
        tests = [e.split("::")[0] for e in entry["evidence"].split() if e.startswith("tests/")]
        assert tests and all((ROOT / t).is_file() for t in tests), entry["evidence"]
        for path, pin in entry["files"].items():
            recorded = ("lib/", "notebooks/", "tools/upstream_repro.py")  # what a result's provenance names
            assert path.startswith(recorded) and set(pin) == {"was", "is"}, path
            assert all(len(h) == 64 and int(h, 16) >= 0 for h in pin.values()), path


def test_declared_refactors_are_read_only_under_the_python_that_pinned_them(tmp_path, monkeypatch):
    """ast.unparse's text differs between Python versions, so a pin read under another one would
    call the refactor a change: a skip check reruns (non-strict), a merge or this test refuses."""
    project, notebook, commit = _moved_project(tmp_path)
    moved = project / "lib" / "jaxperf_study" / "alpha" / "cost.py"
    refactored = COST_MOVED.replace("return 2 * x", "return x + x")
    moved.write_text(refactored)
    pins = {"was": moves.digest(moves.code_of(COST_MOVED, "lib/jaxperf_study/alpha/cost.py")),
            "is": moves.digest(moves.code_of(refactored, "lib/jaxperf_study/alpha/cost.py"))}  # fmt: skip
    ledger = tmp_path / "refactors.json"
    monkeypatch.setattr(moves, "REFACTORS", ledger)
    path = ["lib/jaxperf/alpha/cost.py"]
    for python in (moves.python_now(), "2.7"):
        entry = {"why": "the same sum", "files": {"lib/jaxperf_study/alpha/cost.py": pins}}
        ledger.write_text(json.dumps({"python": python, "refactors": [entry]}))
        if python == "2.7":
            with pytest.raises(
                moves.WrongPython, match=f"Python 2.7 wrote .* this is Python {moves.python_now()}"
            ):
                fresh.changed_files(project, commit, path, strict=True)
            assert fresh.changed_files(project, commit, path) == []  # no raise: this Python's pins match
        else:
            assert fresh.changed_files(project, commit, path, strict=True) == []


def test_the_declared_refactors_name_the_python_that_runs_the_tests():
    """The lock's Python (the .venv the tests run in) wrote the pins: any other reads them wrong."""
    assert moves.pins_python() == moves.python_now()
