"""Run one notebook through papermill, stoppable within seconds.

papermill starts in its own session (process group), so a Ctrl-C at the
terminal reaches only run_all.sh, which then stops what it started: the
papermill group and every descendant of it (the kernel runs in a session of
its own, and may start worker processes), found by parent pid in /proc. No
other process is signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

_HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def install_handlers() -> None:
    for sig in _HANDLED:
        signal.signal(sig, _raise)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a publish runs (milliseconds), then deliver them."""
    pending: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, _f: pending.append(s)) for sig in _HANDLED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pending:
            raise Interrupted(pending[0])


def descendants(pid: int) -> list[int]:
    """Every live process whose parent chain leads to ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"  # a zombie has exited


def stop_tree(proc: subprocess.Popen, grace_s: float = 3.0) -> None:
    """SIGTERM papermill's group and all its descendants, then SIGKILL what is left."""
    tree = descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if proc.poll() is not None and not any(_alive(p) for p in tree):
                return
            time.sleep(0.05)
    proc.wait()


def _die_with_parent() -> None:
    """In the child: SIGKILL when run_all.sh dies, even by SIGKILL (Linux prctl);
    the kernel then exits by itself when it sees its parent change."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_papermill(cmd: list[str], env: dict[str, str], started=None) -> int:
    """Run papermill to completion and return its exit status; on SIGINT/SIGTERM
    stop it and everything it started, then re-raise ``Interrupted``. ``started`` (if given)
    is called with the process (a caller in another thread stops it on a signal)."""
    proc = subprocess.Popen(
        cmd, env=env, start_new_session=True, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
    )
    if started is not None:
        started(proc)
    try:
        return proc.wait()
    except Interrupted:
        stop_tree(proc)
        raise
    finally:
        if proc.poll() is None:
            stop_tree(proc)
