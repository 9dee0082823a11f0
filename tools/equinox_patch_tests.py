"""Run Equinox's whole test suite unpatched and with the patch, and write the comparison.

    .venv/bin/python tools/equinox_patch_tests.py --checkout PATH [--python PY] [--scratch DIR]

Needs a checkout of Equinox's repository (a clone, or the git directory that
``fetch github:patrick-kidger/equinox`` gives): the Equinox sdist on PyPI has no tests. From it,
the tag ``v0.13.8`` (``equinox/``, ``tests/``, ``pyproject.toml``) is exported twice into the
scratch folder; one copy gets ``results/equinox_patch/equinox-0.13.8.diff`` (source and tests),
applied by ``jaxperf.eqx_patch.diff``. Each copy's suite runs with ``python -m pytest tests`` from
its own folder, so ``import equinox`` is that copy (checked before the run), under Equinox's own
pytest settings (warnings are errors), on the CPU with the two host devices its conftest asks for.

``--python`` is an interpreter with this project's jax and jaxlib and Equinox's test
dependencies (pytest, optax, beartype). Without it, a virtual environment is made in the
scratch folder that sees this project's ``.venv`` (its jax, jaxlib, optax, pytest) through a
``.pth`` file and gets ``beartype``, which the project does not install, from the package index.

Then the tests the patch adds run against the unpatched Equinox (a test of new behaviour fails
there), and each test whose outcome differs between the two trees runs ``--reruns`` more times
in each (a timing test that fails now and then on a busy machine shows as such). ``--reuse``
resumes in a scratch folder an earlier run left (a run whose JUnit XML is there is read, not run).
Writes ``results/equinox_patch/test_suite.json`` and ``test_suite.md`` (``--output`` elsewhere).
About 20 + 10 minutes on the project's 2-core VM.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

from jaxperf import records
from jaxperf.eqx_patch import diff, load, suite

ROOT = Path(__file__).resolve().parents[1]
TAG = f"v{load.PATCHED_RELEASE}"
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
VERSIONS = (
    "import json, sys, importlib.metadata as m; print(json.dumps({'python': sys.version.split()[0], "
    "**{p: m.version(p) for p in ('jax', 'jaxlib', 'numpy', 'optax', 'beartype', 'jaxtyping', 'pytest')}}))"
)


def _run(cmd: list[str], **kwargs: object) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def export(checkout: Path, into: Path) -> str:
    """Equinox at :data:`TAG` exported into ``into``; returns the tag's commit."""
    commit = _run(["git", "-C", str(checkout), "rev-parse", f"{TAG}^{{commit}}"]).strip()
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(checkout), "archive", TAG, "equinox", "tests", "pyproject.toml"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return commit


def apply_patch(tree: Path, under: str = "") -> None:
    """The committed diff applied to every file of ``tree`` it names (under ``under`` only)."""
    for patch in load.read_patch():
        if not patch.path.startswith(under):
            continue
        file = tree / patch.path
        file.write_text(diff.apply(file.read_text(), patch))


def make_python(scratch: Path) -> Path:
    """A virtual environment that sees this project's .venv and has beartype."""
    venv = scratch / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    Path(purelib, "jaxperf_project_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([str(python), "-m", "pip", "install", "-q", "beartype"])
    return python


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def run_suite(
    python: Path, tree: Path, timeout_s: int, tests: list[str] | None = None, name: str = "junit"
) -> dict[str, dict[str, str]]:
    """``python -m pytest tests`` (or only ``tests``, pytest node ids) in ``tree``, its JUnit XML
    written to ``tree/<name>.xml``: the outcomes. A run whose XML is already there is read, not
    run again (``--reuse``: an interrupted comparison resumes)."""
    junit = tree / f"{name}.xml"
    if not junit.exists():
        where = _run(
            [str(python), "-c", "import equinox; print(equinox.__file__)"], cwd=tree, env=_env()
        ).strip()
        if not Path(where).resolve().is_relative_to(tree.resolve()):
            raise SystemExit(f"in {tree}, `import equinox` is {where}, not the exported copy")
        command = [str(python), *PYTEST[:-1], *(tests or PYTEST[-1:]), f"--junitxml={junit}"]
        subprocess.run(command, cwd=tree, env=_env(), timeout=timeout_s, check=False)
    return suite.outcomes(junit)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, help="Equinox's repository: a clone or its git directory")
    parser.add_argument(
        "--python", type=Path, help="an interpreter with jax, jaxlib, pytest, optax, beartype"
    )
    parser.add_argument("--scratch", type=Path, default=ROOT / ".scratch" / "equinox_patch_tests")
    parser.add_argument("--output", type=Path, default=load.DIFF_PATH.parent)
    parser.add_argument("--timeout-s", type=int, default=4 * 3600, help="per run")
    parser.add_argument(
        "--reruns", type=int, default=3, help="runs of each test whose outcome differs, per tree"
    )
    parser.add_argument("--reuse", action="store_true", help="resume in a --scratch left by an earlier run")
    args = parser.parse_args(argv)
    if args.checkout is None:
        parser.error(
            "--checkout PATH is required: a clone of https://github.com/patrick-kidger/equinox (or the "
            "git directory `fetch github:patrick-kidger/equinox` gives). The Equinox sdist on PyPI has no tests."
        )
    if not args.reuse and args.scratch.exists() and any(args.scratch.iterdir()):
        parser.error(f"--scratch {args.scratch} is not empty: give an empty or new folder, or --reuse")
    # the two trees, and one with only the patch's tests, to run the tests it adds without it
    trees = {run: args.scratch / run for run in (*suite.RUNS, "tests_only")}
    commit = ""
    for run, tree in trees.items():
        if tree.exists():
            commit = _run(["git", "-C", str(args.checkout), "rev-parse", f"{TAG}^{{commit}}"]).strip()
            continue
        commit = export(args.checkout, tree)
        if run != "unpatched":
            apply_patch(tree, under="" if run == "patched" else "tests/")
    venv_python = args.scratch / "venv" / "bin" / "python"
    python = args.python or (
        venv_python if args.reuse and venv_python.exists() else make_python(args.scratch)
    )
    environment = json.loads(_run([str(python), "-c", VERSIONS]))
    runs = {}
    for run in suite.RUNS:
        print(f"running Equinox's suite, {run} ...", flush=True)
        runs[run] = run_suite(python, trees[run], args.timeout_s)
    added = sorted(set(runs["patched"]) - set(runs["unpatched"]))
    added_unpatched = run_suite(python, trees["tests_only"], args.timeout_s, added) if added else {}
    # A test whose outcome differs is run again in both trees: a timing test that fails now and
    # then on a busy machine shows as such, rather than as the patch's doing.
    differ = sorted(
        t
        for t in set(runs["unpatched"]) & set(runs["patched"])
        if runs["unpatched"][t]["outcome"] != runs["patched"][t]["outcome"]
    )
    reruns = {}
    for run in suite.RUNS:
        for k in range(args.reruns if differ else 0):
            print(
                f"running the {len(differ)} tests whose outcome differs, {run}, {k + 1} of {args.reruns} ...",
                flush=True,
            )
            for test, result in run_suite(python, trees[run], args.timeout_s, differ, f"rerun{k}").items():
                reruns.setdefault(test, {}).setdefault(run, []).append(result["outcome"])
    data = suite.report(
        runs,
        added_unpatched,
        equinox={"release": load.PATCHED_RELEASE, "tag": TAG, "commit": commit},
        patch=load.DIFF_PATH.relative_to(ROOT).as_posix(),
        command=" ".join(["python", *PYTEST]) + " (JAX_PLATFORMS=cpu)",
        environment=environment,
        seconds={run: suite.junit_seconds(trees[run] / "junit.xml") for run in suite.RUNS},
        reruns=reruns,
    )
    records.write_json(args.output / "test_suite.json", data)
    records.write_text(args.output / "test_suite.md", suite.markdown_report(data))
    print(suite.markdown_report(data))


if __name__ == "__main__":
    main()
