"""Equinox's whole test suite, patched and unpatched, side by side.

:func:`outcomes` reads one pytest run's JUnit XML into an outcome per test; :func:`report`
puts the two runs side by side (counts, the tests whose outcome differs, the tests the patch
adds, the tests that do not pass in either); :func:`markdown` renders that report.
``tools/equinox_patch_tests.py`` makes the two runs (it needs a checkout of Equinox's
repository: the sdist on PyPI has no tests) and writes ``results/equinox_patch/test_suite.json``
and ``test_suite.md``.
"""

from __future__ import annotations

import collections
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from .. import markdown
from ..errors import bad_value

#: every outcome a test can have here, in the order tables list them
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")
RUNS = ("unpatched", "patched")
# when a test appears twice (pytest reports a teardown error as a second entry), the worse holds
_WORSE = {"error": 4, "failed": 3, "xfailed": 2, "skipped": 1, "passed": 0}


def _outcome(case: ET.Element) -> tuple[str, str]:
    """(outcome, first line of its message) of one ``<testcase>``."""
    for tag in ("error", "failure", "skipped"):
        child = case.find(tag)
        if child is None:
            continue
        message = (child.get("message") or child.text or "").strip().splitlines()
        first = message[0] if message else ""
        if tag == "skipped":
            return ("xfailed" if child.get("type") == "pytest.xfail" else "skipped"), first
        return ("failed" if tag == "failure" else "error"), first
    return "passed", ""


def load_report(path: Path | None = None) -> dict[str, Any]:
    """The committed report (``results/equinox_patch/test_suite.json``, or ``path``). Raises
    FileNotFoundError naming the tool that writes it when it is missing."""
    from .load import DIFF_PATH

    path = Path(path) if path is not None else DIFF_PATH.parent / "test_suite.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no test-suite report at {path}: tools/equinox_patch_tests.py --checkout PATH writes it."
        )
    return json.loads(path.read_text())


def outcomes(junit_xml: str | Path) -> dict[str, dict[str, str]]:
    """Test id (``tests/test_jit.py::test_filter_jit[all]``) -> ``{"outcome", "message"}`` of
    the pytest JUnit XML file ``junit_xml``. Raises ValueError naming the file when it holds
    no test case (a run that crashed before collecting, or another kind of file)."""
    root = ET.parse(junit_xml).getroot()
    found: dict[str, dict[str, str]] = {}
    for case in root.iter("testcase"):
        module = (case.get("classname") or "").replace(".", "/")
        test = f"{module}.py::{case.get('name')}"
        outcome, message = _outcome(case)
        if test not in found or _WORSE[outcome] > _WORSE[found[test]["outcome"]]:
            found[test] = {"outcome": outcome, "message": message}
    if not found:
        raise bad_value("junit_xml", str(junit_xml), "a pytest JUnit XML file with at least one <testcase>")
    return found


def junit_seconds(junit_xml: str | Path) -> float:
    """The run's own duration, as pytest wrote it in its JUnit XML (summed over test suites)."""
    root = ET.parse(junit_xml).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return float(sum(float(s.get("time") or 0.0) for s in suites))


def counts(tests: dict[str, dict[str, str]]) -> dict[str, int]:
    """How many tests had each outcome (every outcome of :data:`OUTCOMES`, zeros included)."""
    tally = dict.fromkeys(OUTCOMES, 0)
    for result in tests.values():
        tally[result["outcome"]] += 1
    return tally


def report(
    runs: dict[str, dict[str, dict[str, str]]],
    added_unpatched: dict[str, dict[str, str]] | None = None,
    **context: Any,
) -> dict[str, Any]:
    """The two runs (``{"unpatched": outcomes(...), "patched": outcomes(...)}``) side by side;
    ``added_unpatched``: the outcomes of the tests the patch adds when run against the
    unpatched Equinox (a test of new behaviour fails there); ``context`` (Equinox's commit,
    the environment, the command, seconds per run) is kept as it is. Raises ValueError when a
    run is missing."""
    if set(runs) != set(RUNS):
        raise bad_value("runs", sorted(runs), f"the runs {list(RUNS)}")
    before, after = runs["unpatched"], runs["patched"]
    added_unpatched = added_unpatched or {}
    changed = [
        {"test": test, "unpatched": before[test]["outcome"], "patched": after[test]["outcome"]}
        for test in sorted(set(before) & set(after))
        if before[test]["outcome"] != after[test]["outcome"]
    ]
    return {
        **context,
        "counts": {run: counts(runs[run]) for run in RUNS},
        "totals": {run: len(runs[run]) for run in RUNS},
        "changed": changed,
        "added": [
            {"test": test, **after[test], "unpatched": added_unpatched.get(test, {}).get("outcome")}
            for test in sorted(set(after) - set(before))
        ],
        "removed": sorted(set(before) - set(after)),
        "not_passed": {
            run: [
                {"test": test, **result}
                for test, result in sorted(runs[run].items())
                if result["outcome"] != "passed"
            ]
            for run in RUNS
        },
    }


def tally(outcomes: list[str]) -> str:
    """``["passed", "failed", "passed"]`` -> ``"2 of 3 passed, 1 failed"``."""
    found = collections.Counter(outcomes)
    return (
        ", ".join(
            f"{n} of {len(outcomes)} {o}" if i == 0 else f"{n} {o}"
            for i, (o, n) in enumerate((o, found[o]) for o in OUTCOMES if found[o])
        )
        or "not run"
    )


def _tests(items: list[str]) -> str:
    return "; ".join(items) if items else "none"


def markdown_report(data: dict[str, Any]) -> str:
    """``data`` (from :func:`report`) as a short Markdown page: the counts side by side, the
    tests whose outcome the patch changes, the tests it adds (and how they fare without the
    patch), and every test that fails or errors."""
    import pandas as pd

    table = pd.DataFrame({"outcome": [*OUTCOMES, "total"]})
    for run in RUNS:
        table[run] = [*(data["counts"][run][o] for o in OUTCOMES), data["totals"][run]]
    equinox = data.get("equinox", {})
    added = data["added"]
    lines = [
        "# Equinox's test suite, unpatched and with the patch",
        "",
        f"Equinox {equinox.get('release', '?')} (tag {equinox.get('tag', '?')}, `{equinox.get('commit', '?')[:12]}`): "
        f"the whole suite (`{data.get('command', 'pytest tests')}`) on the unpatched source and with "
        f"`{data.get('patch', 'the patch')}` applied (source and tests); {_environment(data.get('environment', {}))}.",
        "",
        markdown.table(table),
        "",
        "- Tests whose outcome the patch changes: "
        + _tests([f"`{c['test']}` {c['unpatched']} -> {c['patched']}" for c in data["changed"]])
        + ".",
        f"- Tests the patch adds ({len(added)}), with the patch / against the unpatched Equinox: "
        + _tests([f"`{a['test']}` {a['outcome']} / {a.get('unpatched') or 'not run'}" for a in added])
        + ".",
    ]
    for run in RUNS:
        failing = [t for t in data["not_passed"][run] if t["outcome"] in ("failed", "error")]
        lines.append(
            f"- Failed or errored, {run}: "
            + _tests([f"`{t['test']}` ({markdown.escape(t['message'][:160])})" for t in failing])
            + "."
        )
    for test, again in data.get("reruns", {}).items():
        tallies = "; ".join(f"{run}: {tally(again.get(run, []))}" for run in RUNS)
        lines.append(f"- Run again (its outcome differs): `{test}`, {tallies}.")
    if data.get("seconds"):
        lines.append(
            "- Seconds per run (pytest's count, on a shared machine: not a measure of the patch): "
            + ", ".join(f"{run} {data['seconds'][run]:.0f}" for run in RUNS)
            + "."
        )
    return "\n".join(lines) + "\n"


def _environment(env: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in env.items()) or "environment not recorded"
