"""Equinox's whole test suite, patched and unpatched, side by side.

:func:`outcomes` reads one pytest run's JUnit XML into an outcome per test; :func:`report`
puts the two runs side by side (counts, the tests whose outcome differs, the tests the patch
adds, the tests that do not pass in either); :func:`markdown` renders that report.
``tools/equinox_patch_tests.py suite`` makes the two runs per tree (Equinox's main, the pinned
release; it needs a checkout of Equinox's repository: the sdist on PyPI has no tests) and writes
``results/equinox_patch/test_suite.json`` (``{"trees": {label: report}}``) and ``test_suite.md``.
"""

from __future__ import annotations

import collections
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from jaxperf import markdown
from jaxperf.errors import bad_value

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


def load_report(path: Path | None = None, tree: str | None = None) -> dict[str, Any]:
    """One tree's report (``tree``, default the pinned release) from the committed
    ``results/equinox_patch/test_suite.json`` (or ``path``); ``tree=""``: all of them
    (``{"trees": {label: report}}``). Raises FileNotFoundError naming the tool that writes it
    when it is missing, and ValueError naming the trees when ``tree`` is not one of them."""
    from .load import PATCH_DIR, PATCHED_RELEASE

    path = Path(path) if path is not None else PATCH_DIR / "test_suite.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no test-suite report at {path}: tools/equinox_patch_tests.py suite --checkout PATH writes it."
        )
    data = json.loads(path.read_text())
    if tree == "":
        return data
    tree = tree or PATCHED_RELEASE
    if tree not in data["trees"]:
        raise bad_value("tree", tree, f"one of the trees in {path.name}: {sorted(data['trees'])}")
    return data["trees"][tree]


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


def _count_text(counts: dict[str, int], total: int) -> str:
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o]) + f" of {total}"


def _failing(report: dict[str, Any], run: str) -> dict[str, str]:
    return {t["test"]: t["message"] for t in report["not_passed"][run] if t["outcome"] in ("failed", "error")}


def reason(report: dict[str, Any], message: str) -> str:
    """Why a test failed: the report's known reason whose key is in ``message``, else the
    message's first 160 characters."""
    for key, why in report.get("known_failures", {}).items():
        if key in message:
            return why
    return markdown.escape(message[:160])


def sentences(label: str, report: dict[str, Any]) -> list[str]:
    """The tree's counts in one sentence that adds up, then the failures present in both runs
    with their reasons, the outcomes the patch changes and how the tests it adds fare unpatched."""
    counts, totals, added = report["counts"], report["totals"], report["added"]
    failing_before = [a["test"] for a in added if a.get("unpatched") not in (None, "passed")]
    commit = report.get("equinox", {}).get("commit", "")[:12]
    lines = [
        f"Equinox {label} (`{commit}`): unpatched {_count_text(counts['unpatched'], totals['unpatched'])}; "
        f"patched {_count_text(counts['patched'], totals['patched'])} "
        f"({totals['unpatched']} + {len(added)} added by the patch"
        + (f" - {len(report['removed'])} removed" if report["removed"] else "")
        + f"); of the {len(added)} added, {len(failing_before)} fail against the unpatched Equinox."
    ]
    before, after = _failing(report, "unpatched"), _failing(report, "patched")
    both = sorted(set(before) & set(after))
    lines.append(
        "Failing in both: "
        + ("; ".join(f"`{t}` ({reason(report, before[t])})" for t in both) or "none")
        + "."
    )
    reruns = report.get("reruns", {})
    changed = [
        f"`{c['test']}` {c['unpatched']} -> {c['patched']}"
        + (
            " (run again: " + "; ".join(f"{r} {tally(reruns[c['test']].get(r, []))}" for r in RUNS) + ")"
            if c["test"] in reruns
            else ""
        )
        + (f", {reason(report, after[c['test']])}" if c["test"] in after else "")
        for c in report["changed"]
    ]
    lines.append(f"Outcomes the patch changes: {'; '.join(changed) or 'none'}.")
    lines.append(
        "Added tests failing against the unpatched Equinox (new behaviour): "
        + (", ".join(f"`{t}`" for t in failing_before) or "none")
        + "."
    )
    return lines


def markdown_report(data: dict[str, Any]) -> str:
    """``data`` (``{"trees": {label: report}}``, each from :func:`report`) as a short Markdown page:
    per tree, its counts side by side and :func:`sentences`."""
    import pandas as pd

    lines = ["# Equinox's test suite, unpatched and with the patch", ""]
    for label, rep in data["trees"].items():
        table = pd.DataFrame({"outcome": [*OUTCOMES, "total"]})
        for run in RUNS:
            table[run] = [*(rep["counts"][run][o] for o in OUTCOMES), rep["totals"][run]]
        lines += [
            f"## Equinox {label}",
            "",
            f"`{rep.get('command', 'pytest tests')}` on `{rep.get('equinox', {}).get('ref', '?')}` unpatched and "
            f"with {', '.join(f'`{p}`' for p in rep.get('patches', []))} applied in order (source and tests); "
            f"{_environment(rep.get('environment', {}))}.",
            "",
            markdown.table(table),
            "",
            *(f"- {line}" for line in sentences(label, rep)),
        ]
        if rep.get("seconds"):
            lines.append(
                "- Seconds per run (pytest's count, on a shared machine: not a measure of the patch): "
                + ", ".join(f"{run} {rep['seconds'][run]:.0f}" for run in RUNS)
                + "."
            )
        lines.append("")
    return "\n".join(lines)


def _environment(env: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in env.items()) or "environment not recorded"
