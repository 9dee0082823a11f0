"""Reliability of ./run_all.sh (issue 10), part 2: whole runs of the fake
notebooks (see test_reliability.py) interrupted by signals, a killed kernel, a
kill -9 of run_all.sh or mid-publish, and two runs at once. The tally goes
into the same table."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_reliability import (
    RUN_ALL,
    fake_notebooks,
    finish,
    generations,
    record,
    report_table,
    seed_old,
    staging_leftovers,
    start,
)

from jaxperf.paths import PROJECT_ROOT


@pytest.fixture(scope="module")
def nbs(tmp_path_factory):
    return fake_notebooks(tmp_path_factory.mktemp("fake_nbs"))


@pytest.fixture(scope="module", autouse=True)
def tally(request):
    yield from report_table(request)


def test_absent_backend_is_refused_before_any_notebook(nbs, tmp_path):
    root = tmp_path / "out"
    seed_old(root)
    proc = start(["--backend", "gpu", "--output-root", str(root)], nbs)
    rc, out, err = finish(proc)
    record("absent backend", lost=generations(root)["alpha"] != {"old"}, stale=bool(staging_leftovers(root)))
    assert rc == 4, err
    assert "backend 'gpu' is not available here" in err and "not measured" in err


# ---- interruption ---------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_signal_at_a_random_point(seed, nbs, tmp_path):
    sig = [signal.SIGINT, signal.SIGTERM][seed % 2]
    root, pids = tmp_path / "out", tmp_path / "pids"
    pids.mkdir()
    seed_old(root)
    delay = random.Random(seed).uniform(0.5, 9.0)
    terminal = seed == 3  # as a terminal's Ctrl-C does: to the whole foreground process group
    proc = start(
        ["--backend", "cpu", "--output-root", str(root)],
        nbs,
        session=terminal,
        JAXPERF_TEST_SLEEP=1.5,
        JAXPERF_TEST_PIDS=pids,
    )
    time.sleep(delay)
    sent = time.monotonic()
    if terminal:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    rc, out, err = finish(proc)
    waited = time.monotonic() - sent
    time.sleep(0.5)
    gens = generations(root)
    mixed = any(len(g) != 1 or "missing" in g for g in gens.values())
    stale = bool(staging_leftovers(root)) or any(_alive(int(p.name)) for p in pids.iterdir())
    record("SIGINT/SIGTERM at a random point", lost=mixed, stale=stale, late=waited > 15)
    assert rc in (0, 128 + sig), err
    if rc != 0:
        assert "interrupted by" in err


def test_sigterm_does_not_wait_for_the_notebook(nbs, tmp_path):
    root, pids = tmp_path / "out", tmp_path / "pids"
    pids.mkdir()
    seed_old(root)
    proc = start(
        ["--backend", "cpu", "--output-root", str(root), "--only", "01"],
        nbs,
        JAXPERF_TEST_SLEEP=120,
        JAXPERF_TEST_PIDS=pids,
    )
    deadline = time.monotonic() + 60
    while not any(pids.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any(pids.iterdir()), "the notebook never started"
    proc.send_signal(signal.SIGTERM)
    rc, out, err = finish(proc, timeout=30)
    kernel = int(next(pids.iterdir()).name)
    time.sleep(0.5)
    record(
        "SIGINT/SIGTERM at a random point",
        lost=generations(root)["alpha"] != {"old"},
        stale=bool(staging_leftovers(root)) or _alive(kernel),
    )
    assert rc == 143 and "interrupted by SIGTERM" in err and "published nothing" in err


def test_killed_kernel_fails_the_notebook_only(nbs, tmp_path):
    root = tmp_path / "out"
    seed_old(root)
    proc = start(["--backend", "cpu", "--output-root", str(root)], nbs, JAXPERF_TEST_KILL_KERNEL="alpha")
    rc, out, err = finish(proc)
    gens = generations(root)
    kept = root / ".staging" / "failed" / "01_alpha.ipynb"
    record(
        "killed kernel",
        lost=gens != {"alpha": {"old"}, "beta": {"new"}},
        stale=[n for n in staging_leftovers(root) if n != "failed"] != [],
    )
    assert rc == 1, err
    table = out[out.index("=== summary") :]
    assert "01_alpha" in table and "FAILED" in table and str(kept) in table
    assert "02_beta" in table and " ok " in table and "1 notebook(s) failed" in err
    executed = json.loads((root / "results" / "cpu" / "02_beta.ipynb").read_text())
    assert all(c.get("execution_count") for c in executed["cells"] if c["cell_type"] == "code")
    assert kept.exists()
    proc = subprocess.run([RUN_ALL, "clean", "--output-root", str(root)], capture_output=True, text=True)
    assert proc.returncode == 0 and not kept.exists()


def test_crash_mid_publish_is_finished_by_the_next_run(nbs, tmp_path):
    root = tmp_path / "out"
    seed_old(root)
    proc = start(
        ["--backend", "cpu", "--output-root", str(root), "--only", "01"], nbs, JAXPERF_TEST_CRASH_IN_PUBLISH=2
    )
    rc, _, err = finish(proc)
    assert rc == 137, err
    assert generations(root)["alpha"] == {"old", "new"}  # the moment of the crash: a journal pending
    proc = subprocess.run([RUN_ALL, "clean", "--output-root", str(root)], capture_output=True, text=True)
    gens = generations(root)
    record("kill -9 mid-publish", lost=gens["alpha"] != {"new"}, stale=bool(staging_leftovers(root)))
    assert proc.returncode == 0 and "finishing an interrupted publish" in proc.stdout


# ---- concurrency and stale staging ----------------------------------------------------------


def test_second_run_is_refused_or_waits(nbs, tmp_path):
    root = tmp_path / "out"
    stale = root / ".staging" / "run-20000101-000000-1"
    (stale / "01_alpha" / "results").mkdir(parents=True)
    first = start(["--backend", "cpu", "--output-root", str(root), "--only", "01"], nbs, JAXPERF_TEST_SLEEP=4)
    deadline = time.monotonic() + 30
    lock = root / ".staging" / "run.lock"
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text()):
        time.sleep(0.1)
    second = subprocess.run(
        [RUN_ALL, "--backend", "cpu", "--output-root", str(root), "--only", "02"],
        capture_output=True,
        text=True,
        env={**os.environ, "JAXPERF_NOTEBOOKS_DIR": str(nbs)},
        timeout=30,
    )
    assert second.returncode == 5, second.stderr
    assert f"pid {first.pid}" in second.stderr and "--wait" in second.stderr
    waiter = start(
        ["--backend", "cpu", "--output-root", str(root), "--only", "02", "--wait"]
        + ["-p", "repeats", "5", "-p", "unroll", "3"],
        nbs,
    )
    record("concurrent runs")  # the refused one wrote nothing and named the holder
    rc1, out1, _ = finish(first)
    rc2, out2, err2 = finish(waiter)
    gens = generations(root)
    record(
        "concurrent runs",
        lost=gens != {"alpha": {"new"}, "beta": {"new"}},
        stale=bool(staging_leftovers(root)),
    )
    assert rc1 == 0 and rc2 == 0, err2
    assert "removing stale staging" in out1 and "waiting for the run" in out2
    executed = (root / "results" / "cpu" / "02_beta.ipynb").read_text()
    injected = "".join(json.loads(executed)["cells"][1]["source"])
    assert "unroll = 3" in injected and "repeats = 5" in injected  # forwarded where declared
    assert str(tmp_path) not in executed and str(PROJECT_ROOT) not in executed  # no machine path


def test_kill_9_of_run_all_leaves_no_process_and_no_stale_result(nbs, tmp_path):
    root, pids = tmp_path / "out", tmp_path / "pids"
    pids.mkdir()
    seed_old(root)
    args = ["--backend", "cpu", "--output-root", str(root), "--only", "01"]
    proc = start(args, nbs, JAXPERF_TEST_SLEEP=120, JAXPERF_TEST_PIDS=pids)
    deadline = time.monotonic() + 60
    while not any(pids.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.kill()
    proc.communicate(timeout=30)
    kernel = int(next(pids.iterdir()).name)
    deadline = time.monotonic() + 15
    while _alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.2)
    cleaned = subprocess.run([RUN_ALL, "clean", "--output-root", str(root)], capture_output=True, text=True)
    record(
        "kill -9 of run_all.sh",
        lost=generations(root)["alpha"] != {"old"},
        stale=_alive(kernel) or bool(staging_leftovers(root)),
    )
    assert cleaned.returncode == 0, cleaned.stderr
