"""What a notebook needs beyond the run's Python, made ready before any notebook runs.

Each environment is checked with the study's own check (the ``status()`` a notebook calls to
decide whether it can compile: the same answer the notebook would get), run once in the run's
Python. One that is missing is built when it has a builder (``tools/make_*_env.sh``: once,
since a builder keeps a stamp and returns at once when its environment is complete), with
its output and a line every 30 s while it works. When it still is not there, the run stops
before any notebook runs, with the command that builds it, unless ``--allow-partial`` was
given: then the notebooks that need it run without it and end "partial" in the summary.

For tests only: ``JAXPERF_ENVIRONMENTS`` names a JSON file whose list replaces
:data:`ENVIRONMENTS` (each item has the fields of :class:`Environment`).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import execute

HEARTBEAT_S = 30.0


@dataclass(frozen=True)
class Environment:
    name: str  # what it is, as the run prints it
    notebooks: tuple[str, ...]  # the numbers of the notebooks that need it
    status: str  # "module:function" returning an object with .available and .reason
    build: tuple[str, ...] = ()  # the command that builds it, from the project root; () none
    how: str = ""  # how to get it when there is no builder
    # The backends whose runs need it: the compilers that read GPU and TPU code on a CPU serve
    # the CPU run; on an accelerator notebook 02 times the kernels on the device itself.
    backends: tuple[str, ...] = ("cpu",)


ENVIRONMENTS = (
    Environment(
        "the Mosaic GPU compile environment (.envs/mosaic-gpu-0.12.0.1, about 1.3 GB from PyPI)",
        ("02",),
        "jaxperf.compilers.mosaic_gpu.toolchain:status",
        ("bash", "tools/make_mosaic_gpu_env.sh"),
    ),
    Environment(
        "triton with its ptxas and cuobjdump (the triton extra)",
        ("02",),
        "jaxperf.compilers.triton.toolchain:status",
        how="./run_all.sh setup installs it in .venv (JAXPERF_EXTRAS=triton,tpu); with --python, "
        "pip install the pinned triton there",
    ),
    Environment(
        "libtpu (the tpu extra)",
        ("02",),
        "jaxperf.compilers.mosaic_tpu.topology:status",
        how="./run_all.sh setup installs it in .venv (JAXPERF_EXTRAS=triton,tpu); with --python, "
        "pip install 'jax[tpu]' at that environment's jax version there",
    ),
)


class EnvironmentMissing(Exception):
    """An environment a selected notebook needs is missing and could not be built (exit 3)."""


_PROBE = """
import importlib, json, sys
out = {}
for spec in json.loads(sys.argv[1]):
    module, function = spec.split(":")
    try:
        got = getattr(importlib.import_module(module), function)()
        out[spec] = [bool(got.available), str(got.reason or "")]
    except Exception as err:  # a check that cannot run is a missing environment
        out[spec] = [False, f"its check failed: {type(err).__name__}: {err}"]
print(json.dumps(out))
"""


def table() -> tuple[Environment, ...]:
    path = os.environ.get("JAXPERF_ENVIRONMENTS")
    if not path:
        return ENVIRONMENTS
    items = json.loads(Path(path).read_text())
    return tuple(
        Environment(
            i["name"],
            tuple(i["notebooks"]),
            i["status"],
            tuple(i.get("build", ())),
            i.get("how", ""),
            tuple(i.get("backends", ("cpu",))),
        )
        for i in items
    )


def needed(numbers: list[str], backend: str = "cpu") -> list[Environment]:
    """The environments the notebooks numbered ``numbers`` need on ``backend``."""
    return [env for env in table() if set(env.notebooks) & set(numbers) and backend in env.backends]


def probe(python: str, project: Path, envs: list[Environment]) -> dict[str, tuple[bool, str]]:
    """``{status spec: (available, reason)}``, each from its check run in ``python``."""
    if not envs:
        return {}
    specs = sorted({env.status for env in envs})
    proc = subprocess.run(
        [python, "-c", _PROBE, json.dumps(specs)], capture_output=True, text=True, cwd=project
    )
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {spec: (False, f"its check could not run in {python}: {why}") for spec in specs}
    return {spec: (bool(ok), reason) for spec, (ok, reason) in json.loads(proc.stdout).items()}


def build(env: Environment, project: Path, say: Callable[[str], None]) -> int:
    """Run ``env``'s builder, its output prefixed and a line every 30 s; its exit status."""
    start = time.monotonic()
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT_S):
            say(f"  [build] still building ({time.monotonic() - start:.0f} s)")

    proc = subprocess.Popen(
        list(env.build),
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
        preexec_fn=execute._die_with_parent,
    )
    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            say(f"  [build] {line.rstrip()}")
        return proc.wait()
    except execute.Interrupted:
        execute.stop_tree(proc)
        raise
    finally:
        done.set()
        if proc.poll() is None:
            execute.stop_tree(proc)


def ensure(
    python: str,
    project: Path,
    numbers: list[str],
    allow_partial: bool,
    say: Callable[[str], None],
    backend: str = "cpu",
) -> dict[str, list[str]]:
    """Make every environment the notebooks ``numbers`` need on ``backend`` ready, building what has
    a builder.

    Returns ``{notebook number: [what it will run without, and why]}`` (empty when all is
    ready). Raises EnvironmentMissing, naming each missing environment, the notebooks that need
    it and the command that builds it, unless ``allow_partial``.
    """
    envs = needed(numbers, backend)
    state = probe(python, project, envs)
    for env in envs:
        if state[env.status][0] or not env.build:
            continue
        users = ", ".join(n for n in env.notebooks if n in numbers)
        say(f"run_all.sh: building {env.name} for notebook {users}: {' '.join(env.build)}")
        start = time.monotonic()
        rc = build(env, project, say)
        state.update(probe(python, project, [env]))
        if rc != 0 and not state[env.status][0]:
            why = f"the build failed ({' '.join(env.build)} exited with status {rc})"
            state[env.status] = (False, f"{why}; {state[env.status][1]}")
        outcome = "ready" if state[env.status][0] else f"still missing ({state[env.status][1]})"
        say(f"run_all.sh: {env.name}: {outcome} after {time.monotonic() - start:.0f} s")
    missing = [env for env in envs if not state[env.status][0]]
    if missing and not allow_partial:
        lines = []
        for env in missing:
            users = ", ".join(n for n in env.notebooks if n in numbers)
            fix = f"build it with: {' '.join(env.build)}" if env.build else env.how
            lines.append(f"notebook {users} needs {env.name}: {state[env.status][1]}; {fix}")
        raise EnvironmentMissing(
            "nothing was run: " + "\n  ".join(["", *lines]) + "\nor leave those notebooks out (--only), "
            "or run them without it (--allow-partial: they end 'partial')"
        )
    without: dict[str, list[str]] = {}
    for env in missing:
        for number in set(env.notebooks) & set(numbers):
            without.setdefault(number, []).append(f"{env.name}: {state[env.status][1]}")
    return without
