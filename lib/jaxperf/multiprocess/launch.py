"""Launch N local processes that form one ``jax.distributed`` job on 127.0.0.1.

``run(argv, processes=N, ...)`` starts ``argv`` N times. Each child learns
its place from environment variables (read back by
:func:`jaxperf.multiprocess.runtime.initialize`): the coordinator address
(a free port on 127.0.0.1, found here), the process count and id, its local
CPU device count, the folder to write its result files to, and the launcher's
pid. Each child's stdout and stderr go to ``process_<i>.log`` in that folder.

Contract:

- every child exits 0 -> a :class:`LaunchResult` (pids, exit codes, logs, seconds);
- a child exits non-zero -> the others are killed at once and
  :class:`LaunchError` is raised, naming the child and quoting its log tail;
- the run exceeds ``timeout_s`` -> every child is killed, :class:`LaunchError`;
- Ctrl-C (KeyboardInterrupt), SIGTERM, or an error in the launcher -> every
  child is killed before the exception propagates.

Each child runs in a session (process group) of its own, so a kill reaches
whatever it started too; an ``atexit`` hook kills any group still registered,
and each child also kills itself if the launcher dies (see ``runtime.guard_parent``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import bad_value, check_int

#: Environment variables a child reads (``runtime.initialize``).
ENV_COORDINATOR = "JAXPERF_COORDINATOR"
ENV_NUM_PROCESSES = "JAXPERF_NUM_PROCESSES"
ENV_PROCESS_ID = "JAXPERF_PROCESS_ID"
ENV_LOCAL_DEVICES = "JAXPERF_LOCAL_DEVICES"
ENV_OUT_DIR = "JAXPERF_OUT_DIR"
ENV_PARENT_PID = "JAXPERF_PARENT_PID"

LOG_TAIL_LINES = 40
_POLL_S = 0.05
_live_groups: set[int] = set()  # process-group ids of children not yet reaped


class LaunchError(RuntimeError):
    """A launch failed: a child died, or the run timed out. ``logs`` maps process id -> log path."""

    def __init__(self, message: str, logs: Mapping[int, Path]):
        super().__init__(message)
        self.logs = dict(logs)


@dataclass(frozen=True)
class LaunchResult:
    processes: int
    out_dir: Path
    pids: tuple[int, ...]
    returncodes: tuple[int, ...]
    logs: tuple[Path, ...]
    seconds: float


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it; a race is possible but rare)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: fall back to a signal-0 probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log ('' if it does not exist)."""
    try:
        text = Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _kill_groups(groups: Sequence[int]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        _live_groups.discard(pgid)


@atexit.register
def _kill_leftovers() -> None:
    _kill_groups(sorted(_live_groups))


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while launching, so cleanup runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def child_env(
    base: Mapping[str, str],
    *,
    coordinator: str,
    processes: int,
    process_id: int,
    local_devices: int,
    out_dir: Path,
) -> dict[str, str]:
    """The environment of child ``process_id``: ``base`` plus the launch variables.

    ``JAX_PLATFORMS=cpu`` keeps an installed libtpu or CUDA plugin from claiming
    the run, and a forced host-device count in ``XLA_FLAGS`` is removed: the
    child sets its own with ``jax_num_cpu_devices``.
    """
    env = dict(base)
    flags = [f for f in env.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f]
    env["XLA_FLAGS"] = " ".join(flags)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("TPU_ACCELERATOR_TYPE", "none")  # quiets libtpu's host discovery, if installed
    env["PYTHONUNBUFFERED"] = "1"
    env[ENV_COORDINATOR] = coordinator
    env[ENV_NUM_PROCESSES] = str(processes)
    env[ENV_PROCESS_ID] = str(process_id)
    env[ENV_LOCAL_DEVICES] = str(local_devices)
    env[ENV_OUT_DIR] = str(out_dir)
    env[ENV_PARENT_PID] = str(os.getpid())
    return env


def run(
    argv: Sequence[str],
    *,
    processes: int,
    out_dir: str | os.PathLike,
    local_devices: int = 1,
    timeout_s: float = 300.0,
    env: Mapping[str, str] | None = None,
) -> LaunchResult:
    """Run ``argv`` as ``processes`` local processes of one job; see the module docstring.

    ``argv`` is a full command (e.g. ``[sys.executable, "-m", "jaxperf.multiprocess.worker", ...]``).
    ``out_dir`` receives ``process_<i>.log`` and whatever the children write.
    """
    if isinstance(argv, (str, bytes)) or not argv:
        raise bad_value("argv", argv, "a non-empty list of command-line words")
    check_int("processes", processes, minimum=1)
    check_int("local_devices", local_devices, minimum=1)
    if not timeout_s > 0:
        raise bad_value("timeout_s", timeout_s, "a number of seconds > 0")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    coordinator = f"127.0.0.1:{free_port()}"
    base = os.environ if env is None else env
    children: list[subprocess.Popen] = []
    logs = {i: out / f"process_{i}.log" for i in range(processes)}
    start = time.monotonic()
    try:
        with _sigterm_as_interrupt():
            for i in range(processes):
                with open(logs[i], "wb") as log:
                    child = subprocess.Popen(
                        list(argv),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=child_env(
                            base,
                            coordinator=coordinator,
                            processes=processes,
                            process_id=i,
                            local_devices=local_devices,
                            out_dir=out,
                        ),
                        start_new_session=True,  # its own process group: one kill reaches its children
                    )
                children.append(child)
                _live_groups.add(child.pid)
            _wait(children, logs, start + timeout_s, timeout_s)
    finally:
        _kill_groups([c.pid for c in children])
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
    return LaunchResult(
        processes=processes,
        out_dir=out,
        pids=tuple(c.pid for c in children),
        returncodes=tuple(int(c.returncode) for c in children),
        logs=tuple(logs[i] for i in range(processes)),
        seconds=time.monotonic() - start,
    )


def _wait(
    children: list[subprocess.Popen], logs: Mapping[int, Path], deadline: float, timeout_s: float
) -> None:
    """Poll until every child exited 0; raise LaunchError at the first failure or at the deadline."""
    while True:
        codes = [c.poll() for c in children]
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            i = failed[0]
            _kill_groups([c.pid for c in children])
            raise LaunchError(
                f"process {i} of {len(children)} exited with code {codes[i]}; the others were stopped. "
                f"Its log ({logs[i]}), last lines:\n{log_tail(logs[i])}",
                logs,
            )
        if all(code == 0 for code in codes):
            return
        if time.monotonic() > deadline:
            _kill_groups([c.pid for c in children])
            running = [i for i, code in enumerate(codes) if code is None]
            tails = "\n".join(f"--- process {i} ({logs[i]}):\n{log_tail(logs[i], 15)}" for i in running)
            raise LaunchError(
                f"timeout_s={timeout_s} passed with processes {running} still running; all were stopped.\n{tails}",
                logs,
            )
        time.sleep(_POLL_S)


def python_module(module: str, *args: str) -> list[str]:
    """The command that runs ``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *args]
