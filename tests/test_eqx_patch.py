"""The Equinox patch (issues 38 and 63): the diff reader and applier, the two diffs (each applies
alone) built into a patched Equinox beside the shipped one (same results, the inputs flattened and
not rebuilt and the output rebuilt once per call, waits for shipped error checks in reused traces,
no cache of its own, the shipped one left as it was), the refusal when a diff does not apply, the
test-suite report and the pytree work one call does. No test asserts a timing."""

from __future__ import annotations

import importlib.util

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxperf.paths import PROJECT_ROOT
from jaxperf_study.dispatch import eqx_patch
from jaxperf_study.dispatch.eqx_patch import diff, probe, suite

# ---------------------------------------------------------------- the diff

SOURCE = "".join(f"line {i}\n" for i in range(1, 11))
DIFF = """\
diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -2,3 +2,4 @@
 line 2
-line 3
+line three
+line 3.5
 line 4
@@ -8,2 +9,2 @@ def context():
 line 8
-line 9
+line nine
"""


def test_a_diff_applies_where_its_hunks_say_and_counts_its_lines():
    (patch,) = diff.parse(DIFF)
    assert patch.path == "pkg/mod.py" and (patch.added, patch.removed) == (3, 2)
    out = diff.apply(SOURCE, patch)
    assert out.splitlines()[1:5] == ["line 2", "line three", "line 3.5", "line 4"]
    assert out.splitlines()[8:10] == ["line 8", "line nine"]
    # two lines inserted above every hunk: applied at the offset, as `patch` would
    moved = "new a\nnew b\n" + SOURCE
    assert diff.apply(moved, patch) == "new a\nnew b\n" + out


def test_a_hunk_that_does_not_match_is_refused_by_name():
    (patch,) = diff.parse(DIFF)
    with pytest.raises(diff.DoesNotApply, match=r"pkg/mod.py: hunk 1 of 2 .* not in the file .*'line 2'"):
        diff.apply(SOURCE.replace("line 3\n", "line 3 changed\n"), patch)
    twice = "x\ny\n" + "line 2\nline 3\nline 4\n" * 2  # not at its line, and at two others
    with pytest.raises(diff.DoesNotApply, match="hunk 1 of 2 .* more than once"):
        diff.apply(twice, patch)
    with pytest.raises(ValueError, match="is not a hunk line"):
        diff.parse(DIFF.replace(" line 4", "?line 4"))
    with pytest.raises(ValueError, match="ends inside hunk"):
        diff.parse(DIFF[: DIFF.index("-line 9")])


# ---------------------------------------------------------------- the patched Equinox


def test_the_committed_diffs_apply_each_alone_to_the_installed_equinox():
    sources = eqx_patch.load.patched_sources()
    assert set(sources) == {"equinox._jit", "equinox._vmap_pmap"}
    assert "def _contains_error_check(" in sources["equinox._jit"]
    assert "def _resolve_leaf_axes(" in sources["equinox._vmap_pmap"]
    # each diff is one commit on Equinox's main that applies alone, with its tests in Equinox's own
    # test files: filter_pmap's in _vmap_pmap.py, filter_jit's wait in _jit.py
    pmap_diff, jit_diff = eqx_patch.DIFF_PATHS
    assert set(eqx_patch.load.patched_sources((pmap_diff,))) == {"equinox._vmap_pmap"}
    assert set(eqx_patch.load.patched_sources((jit_diff,))) == {"equinox._jit"}
    files = [sorted(p.path for p in eqx_patch.load.read_patch(path)) for path in eqx_patch.DIFF_PATHS]
    assert files == [
        ["equinox/_vmap_pmap.py", "tests/test_pmap.py"],
        ["equinox/_jit.py", "tests/test_jit.py"],
    ]
    assert all(path.read_text().startswith("From ") for path in eqx_patch.DIFF_PATHS)
    # the pmap commit stays the size of the code it changes: at most 150 lines changed outside tests
    (source,) = [p for p in eqx_patch.load.read_patch(pmap_diff) if not p.path.startswith("tests/")]
    assert source.added + source.removed <= 150


def test_a_diff_that_does_not_apply_names_the_installed_equinox_and_the_diff(tmp_path):
    first, *rest = eqx_patch.DIFF_PATHS
    broken = tmp_path / first.name
    text = first.read_text()
    assert text.count("         cached = _filter_pmap_cache(\n") == 1
    broken.write_text(
        text.replace("         cached = _filter_pmap_cache(\n", "         cached = other_cache(\n")
    )
    with pytest.raises(
        ValueError,
        match=rf"does not apply to the installed Equinox {eqx.__version__}: {first.name}: .*_vmap_pmap.py",
    ):
        eqx_patch.load.patched_sources((broken, *rest))
    with pytest.raises(FileNotFoundError, match="results/equinox_patch"):
        eqx_patch.load.read_patch(tmp_path / "missing.diff")


def test_the_patched_equinox_computes_the_same_and_leaves_the_shipped_one_alone():
    model = eqx.nn.MLP(3, 2, 4, depth=2, key=jax.random.PRNGKey(0))
    x = jnp.arange(3.0)

    def step(m, x):
        return m(x), "static", m

    for wrap in (eqx.filter_jit, eqx_patch.patched_filter_jit):
        y, s, m = wrap(step)(model, x)
        assert np.allclose(y, model(x)) and s == "static" and eqx.tree_equal(m, model)
    stacked = jax.tree.map(lambda a: jnp.stack([a] * 2) if eqx.is_array(a) else a, model)
    devices = jax.devices()[:2]
    expected = eqx.filter_pmap(step, devices=devices)(stacked, jnp.stack([x, x + 1]))
    got = eqx_patch.patched_filter_pmap(step, devices=devices)(stacked, jnp.stack([x, x + 1]))
    assert np.allclose(got[0], expected[0]) and got[1] == "static" and eqx.tree_equal(got[2], expected[2])
    # the shipped Equinox is untouched: its filter_jit still waits (returns a marker), the patched one does not
    assert eqx.filter_jit(step).lower(model, x).lowered.out_info[0] is not None
    assert eqx_patch.patched_filter_jit(step).lower(model, x).lowered.out_info[0] is None
    assert type(eqx.filter_jit(step)).__module__ == "equinox._jit"
    assert type(eqx_patch.patched_filter_jit(step)).__module__ == "equinox._jit__jaxperf_patched"


def test_one_patched_filter_pmap_call_rebuilds_only_its_output():
    counts = probe.traversals().set_index("variant")[["flattens", "unflattens"]]
    assert counts.loc["pmap_params"].tolist() == [1, 1]
    # the inputs flattened twice (their in_axes, their split) and never rebuilt; the output rebuilt once
    assert counts.loc["filter_pmap_patched"].tolist() == [2, 1]
    assert (
        counts.loc["filter_pmap"] > 2
    ).all()  # the shipped one rebuilds the inputs (what the patch removes)
    # the filter_jit commit changes when a call waits, not the tree work of a call
    assert counts.loc["filter_jit_patched"].tolist() == counts.loc["filter_jit"].tolist()


def test_the_patched_filter_jit_waits_for_shipped_error_checks_even_in_reused_traces():
    waits = lambda fn, x: fn.lower(x).lowered.out_info[0] is not None  # noqa: E731
    x = jnp.array(1.0)

    @jax.jit
    def helper(x):
        return eqx.error_if(x, x < 0, "shipped check")

    first = eqx_patch.patched_filter_jit(lambda x: helper(x) + 1)
    second = eqx_patch.patched_filter_jit(lambda x: helper(x) * 2)  # JAX reuses helper's trace
    assert waits(first, x) and waits(second, x)
    assert not waits(eqx_patch.patched_filter_jit(lambda x: x + 1), x)
    with eqx_patch.shipped_error_checks_routed():
        assert float(second(x)) == 2.0
        with pytest.raises(eqx.EquinoxRuntimeError, match="shipped check"):
            second(-x)
    with pytest.raises(Exception, match="shipped check"):  # JAX's error, the same message
        second(-x)


def test_the_patched_filter_pmap_adds_no_cache_and_is_cleared_with_equinox():
    pmap_module = eqx_patch.patched_equinox().modules["equinox._vmap_pmap"]
    assert not hasattr(pmap_module, "_pmap_cache")
    traces = []

    def f(x, y):
        traces.append(y)
        return x * y

    wrapped = eqx_patch.patched_filter_pmap(f, devices=jax.devices()[:1])
    for _ in range(2):
        assert float(wrapped(jnp.ones(1), 3.0)[0]) == 3.0
    assert len(traces) == 2  # eval_shape and pmap, once: Equinox's compile cache
    eqx.clear_caches()
    assert float(wrapped(jnp.ones(1), 3.0)[0]) == 3.0
    assert len(traces) == 4


# ---------------------------------------------------------------- the test-suite report

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" time="12.5">
<testcase classname="tests.test_jit" name="test_a" />
<testcase classname="tests.test_jit" name="test_b"><failure message="AssertionError: no">x</failure></testcase>
<testcase classname="tests.test_pmap" name="test_c[1]"><skipped type="pytest.skip" message="no gpu" /></testcase>
<testcase classname="tests.test_pmap" name="test_d"><skipped type="pytest.xfail" message="known" /></testcase>
<testcase classname="tests.test_pmap" name="test_e" />
<testcase classname="tests.test_pmap" name="test_e"><error message="teardown failed" /></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_are_read_per_test(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    got = suite.outcomes(path)
    assert {t: r["outcome"] for t, r in got.items()} == {
        "tests/test_jit.py::test_a": "passed",
        "tests/test_jit.py::test_b": "failed",
        "tests/test_pmap.py::test_c[1]": "skipped",
        "tests/test_pmap.py::test_d": "xfailed",
        "tests/test_pmap.py::test_e": "error",  # a teardown error outranks the pass
    }
    assert got["tests/test_jit.py::test_b"]["message"] == "AssertionError: no"
    assert suite.junit_seconds(path) == 12.5
    path.write_text("<testsuites><testsuite/></testsuites>")
    with pytest.raises(ValueError, match="junit_xml="):
        suite.outcomes(path)


def test_the_report_sets_two_runs_side_by_side():
    def run(**outcomes):
        return {f"tests/t.py::{k}": {"outcome": v, "message": "m"} for k, v in outcomes.items()}

    before = run(a="passed", b="failed", c="passed", gone="passed")
    after = run(a="passed", b="failed", c="failed", new="passed")
    again = {"tests/t.py::c": {"unpatched": ["passed", "failed"], "patched": ["failed", "failed"]}}
    data = suite.report(
        {"unpatched": before, "patched": after},
        run(new="failed"),
        equinox={"release": "main", "ref": "HEAD", "commit": "abc"},
        reruns=again,
        known_failures={"m": "why b fails"},
    )
    assert data["counts"]["patched"]["failed"] == 2 and data["totals"] == {"unpatched": 4, "patched": 4}
    assert data["changed"] == [{"test": "tests/t.py::c", "unpatched": "passed", "patched": "failed"}]
    assert data["added"] == [
        {"test": "tests/t.py::new", "outcome": "passed", "message": "m", "unpatched": "failed"}
    ]
    assert data["removed"] == ["tests/t.py::gone"]
    text = suite.markdown_report({"trees": {"main": data}})
    assert "## Equinox main" in text and "| failed | 1 | 2 |" in text
    assert (
        "unpatched 3 passed, 1 failed of 4; patched 2 passed, 2 failed of 4 "
        "(4 + 1 added by the patch - 1 removed)" in text
    )
    assert "of the 1 added, 1 fail against the unpatched Equinox" in text
    assert "Failing in both: `tests/t.py::b` (why b fails)." in text
    assert (
        "`tests/t.py::c` passed -> failed (run again: unpatched 1 of 2 passed, 1 failed; "
        "patched 2 of 2 failed)" in text
    )
    with pytest.raises(ValueError, match="runs="):
        suite.report({"patched": after})


def test_a_missing_report_names_the_tool_that_writes_it_and_a_tree_is_chosen_by_name(tmp_path):
    path = tmp_path / "test_suite.json"
    with pytest.raises(FileNotFoundError, match="tools/equinox_patch_tests.py"):
        suite.load_report(path)
    path.write_text('{"trees": {"0.13.8": {"counts": 1}, "main": {"counts": 2}}}')
    assert suite.load_report(path) == {"counts": 1}  # the pinned release
    assert suite.load_report(path, "main") == {"counts": 2}
    assert set(suite.load_report(path, "")["trees"]) == {"0.13.8", "main"}
    with pytest.raises(ValueError, match="tree='v1'"):
        suite.load_report(path, "v1")


def test_the_tool_needs_a_checkout(capsys):
    spec = importlib.util.spec_from_file_location(
        "equinox_patch_tests", PROJECT_ROOT / "tools" / "equinox_patch_tests.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    with pytest.raises(SystemExit) as exit_info:
        tool.main(["suite", "--python", "python3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--checkout PATH is required" in err and "sdist on PyPI has no tests" in err


def test_the_share_removed_is_taken_round_by_round_then_over_processes():
    spec = importlib.util.spec_from_file_location(
        "equinox_patch_tests", PROJECT_ROOT / "tools" / "equinox_patch_tests.py"
    )
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    base, slow, patch, dropin = tool.SHARE_PATHS
    rows = []
    # process 0: rounds removing 50% and 100%, median 75%; process 1 rounds of 20% (a slower round
    # whose mean would weigh more than its share does)
    for process, rounds in ((0, [(1, 3, 2), (1, 3, 1)]), (1, [(1, 11, 9), (2, 7, 6)])):
        for r, (b, s_, p) in enumerate(rounds):
            for path, ms in ((base, b), (slow, s_), (patch, p), (dropin, b)):
                rows.append(
                    {"depth": 2, "leaves": 20, "process": process, "round": r, "path": path, "cpu_ms": ms}
                )
    stats = {s["kind"]: s for s in tool.share_stats(rows)}
    assert stats["patch"]["share_removed"]["per_process"] == [0.75, 0.2]
    assert stats["patch"]["share_removed"]["lo"] == 0.2 and stats["patch"]["share_removed"]["hi"] == 0.75
    assert stats["dropin"]["share_removed"]["per_process"] == [1.0, 1.0]
    assert stats["patch"]["cpu_ms"][slow]["per_process"] == [3.0, 9.0]


def test_the_suite_record_ran_the_tests_the_diffs_add_now():
    """The committed suite report names exactly the test functions the diffs add: a diff that
    gains or loses a test after the suite ran (82dd025 added one; the record still said 13) fails
    here until ``tools/equinox_patch_tests.py suite`` is run again."""
    added = set()
    for path in sorted((PROJECT_ROOT / "results" / "equinox_patch").glob("*.diff")):
        current = None
        for line in path.read_text().splitlines():
            if line.startswith("+++ b/"):
                current = line[len("+++ b/") :]
            elif line.startswith("+def test_") and current and current.startswith("tests/"):
                added.add(f"{current}::{line[len('+def ') :].split('(')[0]}")
    report = suite.load_report()  # the release the texts quote
    ran = {t["test"].split("[")[0] for t in report["added"]}
    assert added and ran == added, (sorted(added - ran), sorted(ran - added))
