"""The launcher: results as files, a dying child fails the run with its log,
and no process outlives a launch (success, failure, timeout, Ctrl-C, SIGTERM,
or the launcher killed outright)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jaxperf.multiprocess import launch
from jaxperf.multiprocess.launch import LaunchError, alive, python_module
from jaxperf.multiprocess.runtime import read_results

# A child that starts a grandchild (recorded in pids_<i>.txt, as a real worker's
# helpers would be), then does what MODE says.
CHILD = textwrap.dedent(
    """
    import os, subprocess, sys, time, json
    from pathlib import Path
    from jaxperf.multiprocess import runtime
    place = runtime.place_from_env()
    runtime.guard_parent()
    grandchild = subprocess.Popen(["sleep", "60"])
    (place.out_dir / f"pids_{place.process_id}.txt").write_text(f"{os.getpid()} {grandchild.pid}")
    mode = sys.argv[1]
    if mode == "ok":
        runtime.write_result(place, "hello", {"id": place.process_id, "of": place.processes})
    elif mode == "fail" and place.process_id == 1:
        print("boom: process 1 gives up", flush=True)
        sys.exit(3)
    else:
        time.sleep(60)
    """
)


def _child(mode: str) -> list[str]:
    return [sys.executable, "-c", CHILD, mode]


def _recorded_pids(out_dir: Path) -> list[int]:
    pids = []
    for path in out_dir.glob("pids_*.txt"):
        pids += [int(p) for p in path.read_text().split()]
    return pids


def _assert_all_gone(pids: list[int], within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if alive(p)], "processes left behind"


def _wait_for_pids(out_dir: Path, count: int, within_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while len(list(out_dir.glob("pids_*.txt"))) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return _recorded_pids(out_dir)


def test_ten_launches_in_a_row_return_results_and_leave_no_process(tmp_path):
    for attempt in range(10):
        out = tmp_path / f"launch{attempt}"
        result = launch.run(_child("ok"), processes=2, out_dir=out, timeout_s=30)
        assert result.returncodes == (0, 0)
        assert [r["id"] for r in read_results(out, "hello", 2)] == [0, 1]
        pids = _recorded_pids(out)
        assert len(pids) == 4 and set(result.pids) <= set(pids)
        _assert_all_gone(pids)


def test_a_dying_process_fails_the_run_with_its_log_and_stops_the_others(tmp_path):
    start = time.monotonic()
    with pytest.raises(LaunchError, match="process 1 of 2 exited with code 3") as info:
        launch.run(_child("fail"), processes=2, out_dir=tmp_path, timeout_s=30)
    assert "boom: process 1 gives up" in str(info.value)
    assert time.monotonic() - start < 20  # not the sleeping sibling's 60 s
    assert set(info.value.logs) == {0, 1}
    _assert_all_gone(_recorded_pids(tmp_path))


def test_a_timeout_stops_every_process(tmp_path):
    with pytest.raises(LaunchError, match=r"timeout_s=2 passed with processes \[0, 1\] still running"):
        launch.run(_child("sleep"), processes=2, out_dir=tmp_path, timeout_s=2)
    _assert_all_gone(_recorded_pids(tmp_path))


LAUNCHER = textwrap.dedent(
    """
    import sys
    from jaxperf.multiprocess import launch
    launch.run([sys.executable, "-c", sys.argv[2], "sleep"], processes=2, out_dir=sys.argv[1], timeout_s=60)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_process_outlives_an_interrupted_or_killed_launcher(tmp_path, sig):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(tmp_path), CHILD])
    try:
        pids = _wait_for_pids(tmp_path, 2)
        assert len(pids) == 4
        launcher.send_signal(sig)
        launcher.wait(timeout=20)
        _assert_all_gone(pids)
    finally:
        launcher.kill()


def test_jax_distributed_ping_across_two_processes(tmp_path):
    result = launch.run(
        python_module("jaxperf.multiprocess.worker", "ping"),
        processes=2,
        local_devices=2,
        out_dir=tmp_path,
        timeout_s=120,
    )
    pings = read_results(tmp_path, "ping", 2)
    assert [p["process_id"] for p in pings] == [0, 1]
    assert all(p["global_devices"] == 4 and p["local_devices"] == 2 and p["psum"] == 4.0 for p in pings)
    assert all(log.exists() for log in result.logs)
    _assert_all_gone(list(result.pids))


def test_child_env_names_its_place_and_drops_a_forced_device_count(tmp_path):
    env = launch.child_env(
        {"XLA_FLAGS": "--xla_force_host_platform_device_count=8 --xla_other=1"},
        coordinator="127.0.0.1:1234",
        processes=4,
        process_id=3,
        local_devices=2,
        out_dir=tmp_path,
    )
    assert env["XLA_FLAGS"] == "--xla_other=1"
    assert env[launch.ENV_PROCESS_ID] == "3" and env[launch.ENV_NUM_PROCESSES] == "4"
    assert env[launch.ENV_PARENT_PID] == str(os.getpid())
    assert json.loads(json.dumps(env))  # plain strings only


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"argv": [], "processes": 2}, "argv=.*non-empty list"),
        ({"argv": "python", "processes": 2}, "argv=.*non-empty list"),
        ({"argv": ["true"], "processes": 0}, "processes=0"),
        ({"argv": ["true"], "processes": 1, "timeout_s": 0}, "timeout_s=0"),
    ],
)
def test_bad_arguments_are_named(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        launch.run(out_dir=tmp_path, **kwargs)


def test_free_port_is_bindable():
    import socket

    port = launch.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
