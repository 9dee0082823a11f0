"""Flax's own source distribution, cached under the git-ignored ``.envs/``: its ``nnx.jit``
tests run as shipped and with ``flax.nnx.jit`` replaced by :func:`jaxperf.cached_nnx_jit`
(:mod:`.flax_plugin`), side by side. (Its ``benchmarks/nnx_graph_overhead.py``:
:mod:`.graph_overhead`.)

The sdist is the one of the installed Flax (``pip download --no-binary :all: --no-deps
flax==<version>``), so the tests are those of the code under test. They run in a child
pytest with the sdist's own configuration (its ``pyproject.toml``: warnings are errors), from
the installed Flax (``python -P``: the sdist's ``flax/`` folder never shadows it).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd

from jaxperf.errors import bad_value
from jaxperf.paths import PROJECT_ROOT

SDIST_ROOT = PROJECT_ROOT / ".envs" / "flax-sdist"
#: the files of Flax's tests/nnx that call nnx.jit (grep), transforms_test.py's jit tests first
JIT_TEST_FILES = (
    "tests/nnx/transforms_test.py",
    "tests/nnx/integration_test.py",
    "tests/nnx/module_test.py",
    "tests/nnx/rngs_test.py",
    "tests/nnx/graph_utils_test.py",
    "tests/nnx/helpers_test.py",
    "tests/nnx/ema_test.py",
    "tests/nnx/metrics_test.py",
    "tests/nnx/mutable_array_test.py",
    "tests/nnx/nn/stochastic_test.py",
)
MODES = ("nnx.jit", "cached_nnx_jit")


class SourcesNotCarried(RuntimeError):
    """Flax's sdist is not here, not carried, and pip cannot download it (a device has no network)."""


def sdist(version: str | None = None) -> Path:
    """The unpacked sdist of Flax ``version`` (default: the installed one), downloaded from
    PyPI into ``.envs/flax-sdist`` on first use, or the one carried to a device with no network
    (``.whl-<backend>/``, tools/device/fetch_wheels.sh); :class:`SourcesNotCarried` when none has it."""
    version = version or importlib.metadata.version("flax")
    folder = SDIST_ROOT / f"flax-{version}"
    if (folder / "tests" / "nnx").is_dir():
        return folder
    archive = SDIST_ROOT / f"flax-{version}.tar.gz"
    carried = sorted(PROJECT_ROOT.glob(f".whl-*/flax-{version}.tar.gz"))
    SDIST_ROOT.mkdir(parents=True, exist_ok=True)
    if not archive.exists() and carried:
        shutil.copy(carried[0], archive)
    if not archive.exists():
        pip = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "--no-color"]
        cmd = [*pip, "--retries", "0", f"flax=={version}", "-d", str(SDIST_ROOT)]
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode != 0:
            raise SourcesNotCarried(
                f"flax=={version} (tools/device/fetch_wheels.sh --flax {version}): {got.stderr[-300:]}"
            )
    with tarfile.open(archive) as tar:
        tar.extractall(SDIST_ROOT, filter="data")
    return folder


def _outcomes(junit: Path) -> pd.DataFrame:
    """One row per test case of a JUnit XML report: file, test id, outcome."""
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        outcome = next((t for t in ("failure", "error", "skipped") if t in tags), "passed")
        rows.append(
            {
                "file": case.get("classname", "").split(".")[-2] + ".py"
                if "." in case.get("classname", "")
                else case.get("file", ""),
                "test": f"{case.get('classname')}::{case.get('name')}",
                "outcome": {"failure": "failed", "error": "error"}.get(outcome, outcome),
            }
        )
    return pd.DataFrame(rows, columns=["file", "test", "outcome"])


def run_tests(mode: str, files: tuple[str, ...] = JIT_TEST_FILES, timeout_s: int = 1800) -> pd.DataFrame:
    """Flax's ``files`` (paths inside the sdist) under ``mode`` (``"nnx.jit"``: as shipped;
    ``"cached_nnx_jit"``: with the drop-in patched in as ``flax.nnx.jit``): one row per test;
    under the drop-in, ``rows.attrs["dropin"]`` says how it served the run (hits, misses,
    fallbacks by reason: :mod:`.flax_plugin`)."""
    if mode not in MODES:
        raise bad_value("mode", mode, "one of " + ", ".join(map(repr, MODES)))
    root = sdist()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "report.xml"
        cmd = [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
        cmd += ["--import-mode=importlib", "--continue-on-collection-errors", f"--junitxml={junit}"]
        cmd += ["-o", "junit_family=xunit1"]
        if mode == "cached_nnx_jit":
            cmd += ["-p", "jaxperf_study.dispatch.nnx.flax_plugin"]
        stats = Path(tmp) / "dropin.json"
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAXPERF_NNX_STATS": str(stats)}
        subprocess.run(
            [*cmd, *files], cwd=root, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if not junit.exists():
            raise RuntimeError(f"Flax's tests wrote no report under mode={mode!r} (pytest failed to start).")
        rows = _outcomes(junit).assign(mode=mode)
        if stats.exists():
            rows.attrs["dropin"] = json.loads(stats.read_text())
        return rows


def side_by_side(rows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Counts of passed, failed, error and skipped per file and mode, and the ids of the tests
    that pass as shipped but not with the drop-in."""
    counts = rows.groupby(["file", "mode", "outcome"]).size().unstack("outcome", fill_value=0)
    counts = counts.reindex(columns=["passed", "failed", "error", "skipped"], fill_value=0).reset_index()
    by_mode = rows.pivot_table(index="test", columns="mode", values="outcome", aggfunc="first")
    shipped, dropin = by_mode.get(MODES[0]), by_mode.get(MODES[1])
    if shipped is None or dropin is None:
        return counts, []
    only = by_mode[(shipped == "passed") & (dropin != "passed")].index
    return counts, sorted(only)


def compare(
    files: tuple[str, ...] = JIT_TEST_FILES, timeout_s: int = 1800
) -> tuple[pd.DataFrame, list[str], dict]:
    """:func:`run_tests` under both modes, then :func:`side_by_side`, and how the drop-in
    served its run (``rows.attrs["dropin"]``)."""
    runs = [run_tests(mode, files, timeout_s) for mode in MODES]
    counts, only = side_by_side(pd.concat(runs, ignore_index=True))
    return counts, only, runs[1].attrs.get("dropin", {})


#: where :func:`main` writes Flax's test counts (a run takes tens of minutes: notebook 11 reads
#: the committed report rather than running the tests itself)
REPORT = PROJECT_ROOT / "results" / "flax_dropin" / "report.json"


def load_report(path: Path = REPORT) -> dict | None:
    """The committed report of :func:`main`, or None when there is none (never run here)."""
    return json.loads(path.read_text()) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxperf_study.dispatch.nnx.flax_sdist``: run Flax's ``nnx.jit`` tests as shipped and with the
    drop-in, and write :data:`REPORT` (counts per file and mode, the tests failing only with the
    drop-in, how it served the run, the versions and when)."""
    import datetime

    from ... import provenance

    args = sys.argv[1:] if argv is None else argv
    if args:  # no options: say what it does (-h) or name what it does not take
        print(main.__doc__ if args[0] in ("-h", "--help") else f"unknown argument {args[0]!r}: takes none")
        return 0 if args[0] in ("-h", "--help") else 2
    counts, only, served = compare()
    report = {
        "flax": importlib.metadata.version("flax"),
        "jax": importlib.metadata.version("jax"),
        "ran_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "git": provenance.git_commit(),
        "files": list(JIT_TEST_FILES),
        "counts": counts.to_dict(orient="records"),
        "only_dropin": only,
        "dropin": served,
    }
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"wrote {REPORT.relative_to(PROJECT_ROOT)}: {len(only)} tests fail only with the drop-in")
    return 0


if __name__ == "__main__":
    sys.exit(main())
