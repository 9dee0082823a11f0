"""Shared fixtures. Tests run on CPU with 8 forced host devices, set before JAX starts (as
the notebooks do), so multi-device code paths are exercised. Helper functions that tests
import live in ``notebook_support`` (a test importing ``conftest`` by name would get
whichever conftest.py pytest loaded last: tests/core has its own).

The suite runs on two pytest-xdist workers by default (see ``pytest_cmdline_main`` below):
``-n 0`` runs it in one process, as do ``-s`` and ``--pdb``."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

from jaxperf.paths import PROJECT_ROOT

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def image_env(name: str) -> Path:
    """The stand-in for a lent machine's image (tools/make_alt_env.sh NAME): built from PyPI on
    first use (a minute or two), else from the carried wheels; skipped only when neither can build it."""
    env = PROJECT_ROOT / ".envs" / name
    tail = ""
    for args in ([], ["--offline"]):
        try:
            build = subprocess.run(
                ["bash", str(PROJECT_ROOT / "tools" / "make_alt_env.sh"), name, *args],
                capture_output=True,
                text=True,
                timeout=900,
            )
        except subprocess.TimeoutExpired:
            tail += f"make_alt_env.sh {name} {' '.join(args)} timed out after 900 s\n"
            continue
        if build.returncode == 0 and (env / ".complete").exists():
            return env / "bin" / "python"
        tail += build.stderr[-500:]
    pytest.skip(f"no {name} environment at {env} (tools/make_alt_env.sh needs PyPI):\n{tail}")


@pytest.fixture(scope="session")
def alt_python() -> Path:
    """Another JAX: the GPU image's stand-in, jax/jaxlib 0.11.2 and triton 3.6.0 on Python 3.12, no
    Jupyter stack. ``./run_all.sh --python`` (tests/test_run_all.py) adds what it lacks to it."""
    return image_env("image-gpu")


@pytest.fixture(scope="session")
def tpu_image_python() -> Path:
    """The TPU image's stand-in: Python 3.11, jax/jaxlib 0.10.2 and what the TPU's own index
    installs; no equinox, no papermill (the device run carries them). Nothing else installs into it."""
    return image_env("image-tpu")


@pytest.fixture(scope="session", autouse=True)
def _cpu_backend():
    from jaxperf import backend

    return backend.configure("cpu", 8)


# ------------------------------------------------------------------ two workers (pytest-xdist)

#: Workers unless the command line says otherwise. The long tests mostly wait on other
#: processes (papermill kernels, pip, JupyterLab, chromium), so two overlap well on two cores.
WORKERS = 2

#: Tests that must run on one worker, one after another (one unit of xdist's work):
#: - the project's ./run_all.sh runs tools/setup_env.sh, whose `git config` writes take
#:   .git/config's lock (two at once: one fails) and which rewrites JupyterLab's settings;
#: - the ``alt_python`` environment is built on first use (two builds at once would remove
#:   each other's), and ``./run_all.sh --python`` installs into it while the device dry run
#:   (test_gpu_script) runs from it;
#: - the two reliability modules keep one tally of their cases.
#: One unit for all: test_run_all's --python test is in the first two.
PROJECT_ENV_MODULES = {
    "tests/test_browser.py",
    "tests/test_run_all.py",
    "tests/test_reliability.py",
    "tests/test_reliability_runs.py",
    "tests/test_gpu_script.py",
}
PROJECT_ENV = "project-env"
TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``-n 2`` unless the command line chose (``-n``, ``--dist``, ``--tx``), wants one process
    (``-s``, ``--pdb``, ``--collect-only``), or xdist is not there (``-p no:xdist``). Set
    here, not in pyproject.toml's addopts: tests/core is run with the same
    [tool.pytest.ini_options] in test_core_envs' clean environments, which lack xdist."""
    opt = config.option
    if hasattr(config, "workerinput") or not hasattr(opt, "numprocesses"):
        return
    if opt.numprocesses is not None or opt.dist != "no" or opt.tx:
        return
    if opt.usepdb or opt.capture == "no" or opt.collectonly:
        return
    opt.numprocesses, opt.dist = WORKERS, "loadscope"  # in units: pytest_xdist_make_scheduler
    opt.loadscopereorder = False  # keep pytest_collection_modifyitems' order: longest first


@functools.cache
def _modules_with_module_fixtures() -> frozenset[str]:
    """Test modules that define a module-scoped fixture: each worker that runs one of their
    tests sets it up again, so their tests go to one worker."""
    found = set()
    for path in TESTS.rglob("test_*.py"):
        if re.search(r"""scope=["']module["']""", path.read_text()):
            found.add(path.relative_to(TESTS.parent).as_posix())
    return frozenset(found)


def _unit(nodeid: str) -> str:
    """The unit of work (one worker's, in order) that a test belongs to."""
    module = nodeid.split("::")[0]
    if module in PROJECT_ENV_MODULES:
        return PROJECT_ENV
    return module if module in _modules_with_module_fixtures() else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """(xdist's controller) Work handed out in the units of ``_unit``, in the workers'
    collection order. Its own ``--dist loadgroup`` cannot do it here: it renames a test's
    nodeid, which pytest 9's nodes no longer take."""
    if config.option.dist not in ("load", "loadscope", "loadgroup"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    return UnitScheduling(config, log)


#: Seconds each long test (or group) took in one process on the 2-core CI machine; the
#: workers start the longest first, so no long one is left for last. Only an order: a stale
#: or missing entry makes a run slower, never wrong.
COST_S = {
    "tests/test_dispatch.py::test_quick_notebook_run": 200,
    "tests/test_gpu_script.py::test_dry_run_of_the_harness_part": 145,  # every_part_run's dry run
    "tests/test_core_envs.py::test_the_core_alone_passes_its_tests_at_each_end_of_the_range[oldest]": 140,
    "tests/test_lint.py::test_a_run_notebook_reaches_git": 100,
    "tests/test_loop_study.py::test_notebook_quick_run": 97,
    "tests/test_browser.py::test_a_notebook_quick_run": 80,
    "tests/test_browser.py::test_executed_notebook": 10,
    "tests/test_run_all.py::test_python_option": 42,
    "tests/test_lint.py::test_mypy": 35,
    "tests/test_mosaic_gpu_study.py::test_notebook_quick_run": 32,
    "tests/test_figure_rules.py::test_every_figure": 25,
    "tests/test_dispatch.py::test_every_method_computes": 18,
    "tests/test_reliability_runs.py": 7,
    "tests/test_answers.py::test_the_notebook_runs": 14,
    "tests/test_loops_forms.py::test_hand_unrolled": 14,
    "tests/test_packed.py::test_packed_pmap_trains_like_filter_pmap": 8,
    "tests/test_triton_mechanism.py": 5,
    "tests/test_tpu_study.py::test_notebook_without_libtpu": 10,
    "tests/test_loops_fori_equivalence.py::test_equals_fori_loop_for_every_bound_kind": 10,
}


def _cost(item: pytest.Item) -> float:
    return next((s for prefix, s in COST_S.items() if item.nodeid.startswith(prefix)), 0.0)


@pytest.hookimpl(trylast=True)  # after pytest's own grouping by fixture: the order xdist is sent
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # one process: the usual order
    # Longest first, a unit as long as its tests together; ties keep the collection order.
    units = {item: _unit(item.nodeid) for item in items}
    total: dict[str, float] = {}
    for item, unit in units.items():
        total[unit] = total.get(unit, 0.0) + _cost(item)
    items.sort(key=lambda item: -total[units[item]])


@pytest.fixture(autouse=True)
def _rerun_inflation_unset(monkeypatch):
    """Every test starts with rerun ranges unwidened: ``jaxperf_study.study.start`` sets the committed
    calibration process-wide, and a test run in the same worker afterwards must not see it."""
    from jaxperf_study import reruns

    monkeypatch.setattr(reruns, "_INFLATION", [1.0])
