"""run_all.sh's study run: check everything, lock the output root, make the environments
the notebooks need ready, run each notebook into staging, publish each success all or
nothing, print a table (each notebook "ok", "partial" with what it skipped, or "FAILED"),
then, with ``--compare-to``, the rerun check.

Exit codes: 0 all ran whole; 1 a notebook failed; 2 bad option (before any work);
3 environment setup failed, or an environment a notebook needs is missing; 4 backend not
present; 5 output root busy; 6 a notebook ended partial (without ``--allow-partial``);
7 the rerun check failed; 130/143 interrupted by SIGINT/SIGTERM (nothing partial published).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import check, compare, envs, execute, fresh, inprocess, notebooks, publish, pyenv, rerun_report, status
from .options import USAGE, Options, UsageError, parse, resolve_root

PROJECT = Path(__file__).resolve().parents[2]
#: notebooks a render runs at once (it measures nothing, so they may share the cores)
RENDER_JOBS = max(1, min(4, os.cpu_count() or 1))


def say(msg: str) -> None:
    print(msg, flush=True)


def warn(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _backend(python: str, opts: Options) -> str:
    proc = subprocess.run(
        [python, "-m", "jaxperf.backend", opts.backend, str(opts.host_devices)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no reason given"])[-1]
        _backend_missing(f"backend '{opts.backend}' is not available here: {reason}")
        raise SystemExit(4)
    return proc.stdout.strip().splitlines()[-1]


def _backend_missing(message: str) -> None:
    warn(f"run_all.sh: {message}")
    warn("run_all.sh: nothing was run; that backend is reported as not measured.")


def _engine(opts: Options) -> str:
    """``kernel`` or ``inprocess`` (:mod:`inprocess`): ``auto`` takes the in-process engine only
    where a Jupyter kernel cannot start, saying why."""
    if opts.engine != "auto":
        return opts.engine
    why = inprocess.sockets_refused()
    if why is None:
        return "kernel"
    say(f"run_all.sh: {why}: papermill runs each notebook's cells in its own process (--engine inprocess)")
    return "inprocess"


def _papermill(python: str, nb: notebooks.Notebook, executed: Path, params: dict, opts: Options) -> list[str]:
    """papermill's command: parameters as YAML (JSON is YAML), only those the notebook declares."""
    executed.parent.mkdir(parents=True, exist_ok=True)
    runner = ["-m", "papermill"] if opts.engine == "kernel" else [str(Path(inprocess.__file__))]
    cmd = [python, *runner, str(nb.path), str(executed), "-k", "jaxperf"]
    cmd += ["--cwd", str(nb.path.parent), "--log-output", "--progress-bar"]
    cmd += ["--execution-timeout", str(opts.timeout)]
    for name, value in sorted(params.items()):  # by name: a render injects them as the run did
        cmd += ["-y", json.dumps({name: value})]
    return cmd


def _prepare(opts: Options, render: bool = False) -> tuple[str, list[notebooks.Notebook], Path, set[str]]:
    """Everything that can be refused is refused here, before any work and any write: the
    options, each notebook's settings object built from what it will be given (with this
    stdlib-only Python: no lock, output root or environment is needed for it), the backend's
    device, then the output root (created last, when everything else passed). Returns the
    notebooks whose settings could only be checked inside the environment."""
    nb_dir = Path(os.environ.get("JAXPERF_NOTEBOOKS_DIR") or PROJECT / "notebooks")
    selected = notebooks.select(notebooks.discover(nb_dir), opts)
    if not selected:
        raise UsageError(f"no notebook to run in {nb_dir}")
    notebooks.check_params(selected, opts)
    python = pyenv.check_python(opts.python) if opts.python else ""
    # A render opens no device: a TPU run's records redraw on a CPU.
    unchecked = check.run(PROJECT, _settings_checks(selected, opts), "auto" if render else opts.backend)
    for nb in unchecked:
        why = f"its settings need more than the standard library ({nb['why']})"
        warn(f"run_all.sh: warning: {nb['name']}: {why}; they are checked after the set-up")
    if opts.compare_to:
        try:
            committed, _ = compare.split_results(opts.compare_to)
        except ValueError as err:
            raise UsageError(f"--compare-to {err}") from None
        if committed == resolve_root(opts, PROJECT).resolve():
            raise UsageError(
                f"--compare-to '{opts.compare_to}': the rerun would overwrite what it is compared with; "
                "give another --output-root"
            )
        opts.compare_to = os.path.abspath(os.path.expanduser(opts.compare_to))
    root = publish.check_root(resolve_root(opts, PROJECT))
    return python, selected, root, {nb["name"] for nb in unchecked}


def run(argv: list[str], render: bool = False) -> int:
    opts = parse(argv)
    opts.engine = _engine(opts)
    if render:
        _render_options(opts)
    try:
        python, selected, root, unchecked = _prepare(opts, render)
    except check.BackendMissing as err:
        _backend_missing(str(err))
        return 4
    command = "./run_all.sh " + shlex.join(argv)
    lock = publish.RootLock(root, command)
    try:
        lock.acquire(opts.wait, on_wait=say)
    except publish.LockedError as err:
        warn(f"run_all.sh: {err}")
        return 5
    try:
        publish.recover(root, say)
        publish.clean_stale(root, say=say)
        if render:
            return _render_locked(opts, python, selected, root, unchecked)
        return _run_locked(opts, python, selected, root, unchecked)
    finally:
        lock.release()


def _render_options(opts: Options) -> None:
    """``render`` redraws what a measuring run published: the parameters are the ones that run
    was given, every selected notebook is redrawn, nothing is compared."""
    given = [
        name
        for name, on in (
            ("-p", bool(opts.params)),
            ("--all", opts.all),
            ("--compare-to", bool(opts.compare_to)),
            ("--allow-partial", opts.allow_partial),
        )
        if on
    ]
    if given:
        raise UsageError(
            f"render takes no {', '.join(given)}: it redraws every selected notebook with the parameters "
            "its published run was given (--only, --backend, --output-root, --quick, --python, --timeout, "
            "--wait are its options)"
        )


def _published_parameters(root: Path, backend: str, nb: notebooks.Notebook) -> dict | None:
    """The parameters the published executed copy of ``nb`` ran with; None when it has none."""
    path = root / "results" / backend / nb.path.name
    try:
        meta = json.loads(path.read_text())["metadata"]["papermill"]
    except (OSError, ValueError, KeyError):
        return None
    return dict(meta.get("parameters") or {})


def _render_locked(
    opts: Options, python: str, selected: list[notebooks.Notebook], root: Path, unchecked: set[str]
) -> int:
    """Re-execute each notebook with ``JAXPERF_RENDER=1`` (``Study.measure`` reads the published
    records, ``study.start`` keeps their provenance), publish what it redrew (summaries, figures,
    the executed copy; the records stay), then render README.md and results/upstream/.
    No device opens: without ``--backend``, this machine's backend and every other backend with
    published runs (a TPU run's records redraw on a CPU) are redrawn."""
    try:
        python = python or pyenv.project_python(PROJECT)
        if opts.python:
            pyenv.prepare_external(python, PROJECT, say)
    except pyenv.SetupError as err:
        warn(f"run_all.sh: {err}")
        return 3
    pyenv.preflight(python, [c for c in _settings_checks(selected, opts) if c["name"] in unchecked])
    if opts.backend != "auto":
        backends = [opts.backend]
    else:
        here = _backend(python, opts)
        others = [
            b for b in ("cpu", "gpu", "tpu") if b != here and any((root / "results" / b).glob("*.ipynb"))
        ]
        backends = [here, *others]
    started, failed = time.monotonic(), 0
    for backend in backends:
        outcome = _render_backend(opts, python, selected, root, backend, required=backend == backends[0])
        if outcome < 0:
            return -outcome
        failed += outcome
    if failed:
        warn(f"run_all.sh: {failed} notebook(s) could not be redrawn; README.md was not rendered")
        return 1
    if os.environ.get("JAXPERF_NOTEBOOKS_DIR") or opts.only is not None:  # the README reads every study
        why = "--only: it reads every study" if opts.only is not None else "not the project's notebooks"
        say(f"run_all.sh: README.md and results/upstream/ not rendered ({why})")
        return 0
    readme = [sys.executable, str(PROJECT / "tools" / "readme.py"), "--root", str(root)]
    if subprocess.run(readme).returncode != 0:
        warn("run_all.sh: README.md and the upstream texts could not be rendered (above)")
        return 1
    say(f"{'README.md, results/upstream/':<32} {status.OK:<7}")
    say(f"{'all':<32} {'':<7} {round(time.monotonic() - started):>6}s")
    return 0


def _render_backend(
    opts: Options, python: str, selected: list[notebooks.Notebook], root: Path, backend: str, required: bool
) -> int:
    """Redraw ``backend``'s published notebooks: the number that failed, or minus an exit status
    (interrupted). ``required``: a selected notebook without a published run fails (else it is
    left out: another backend's run may cover fewer notebooks)."""
    say(f"run_all.sh: render (no measuring) backend={backend} output root={root}")
    run_dir = publish.new_run_dir(root)
    env = dict(os.environ, JAXPERF_RENDER="1")
    env["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(pyenv.kernelspec(run_dir / "jupyter", python)), os.environ.get("JUPYTER_PATH")])
    )
    rows: dict[str, str] = {}
    failed, running = 0, []
    todo = []
    for nb in selected:
        params = _published_parameters(root, backend, nb)
        if params is None and required:
            executed = f"results/{backend}/{nb.path.name}"
            rows[nb.name] = (
                f"{nb.name:<32} {status.FAILED:<7} {0:>6}s  nothing to redraw: {executed} is missing "
                f"(./run_all.sh --only {nb.number} measures it)"
            )
            failed += 1
        elif params is not None:
            todo.append((nb, params))
    # No measuring, so notebooks may share the machine: RENDER_JOBS at once, each published (in
    # this thread) as it ends. One that reads another's summary reads the same bytes either way.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=RENDER_JOBS)
    try:
        futures = {
            pool.submit(_execute, nb, python, backend, opts, root, run_dir, env, params, running.append): nb
            for nb, params in todo
        }
        pending = set(futures)
        while pending:
            done, pending = concurrent.futures.wait(pending, timeout=0.5)
            for future in done:
                nb = futures[future]
                outcome, rows[nb.name], _ = _finish(nb, backend, root, run_dir, *future.result(), [], True)
                failed += outcome == status.FAILED
    except execute.Interrupted as sig:
        for proc in running:
            execute.stop_tree(proc)
        warn(f"run_all.sh: interrupted by {sig}: stopped the running notebooks; published nothing from them")
        return -(128 + sig.signum)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(run_dir, ignore_errors=True)
    say(f"\n=== render (backend={backend}, output root={root})")
    for nb in selected:
        if nb.name in rows:
            say(rows[nb.name])
    return failed


def _settings_checks(selected: list[notebooks.Notebook], opts: Options) -> list[dict]:
    """What the settings check needs to build each notebook's settings object."""
    return [
        {
            "name": nb.name,
            "source": nb.source,
            "injected": notebooks.parameters(nb, opts, opts.backend),
            "imports": nb.settings_imports,
            "cls": nb.settings_class,
        }
        for nb in selected
        if nb.settings_class and nb.settings_imports
    ]


def _run_locked(
    opts: Options, python: str, selected: list[notebooks.Notebook], root: Path, unchecked: set[str]
) -> int:
    try:
        if python:
            pyenv.prepare_external(python, PROJECT, say)
        else:
            python = pyenv.project_python(PROJECT)
    except pyenv.SetupError as err:
        warn(f"run_all.sh: {err}")
        return 3
    differ = pyenv.pin_report(python, PROJECT)
    # Only a notebook whose settings the stdlib check could not import (none of the project's:
    # tests/test_settings_stdlib.py; a notebook of JAXPERF_NOTEBOOKS_DIR or one added later may)
    # is checked here, in the environment, after the set-up and before anything runs.
    pyenv.preflight(python, [c for c in _settings_checks(selected, opts) if c["name"] in unchecked])
    backend = _backend(python, opts)
    say(f"run_all.sh: backend={backend} quick={opts.quick} output root={root} python={python}")
    say(f"run_all.sh: notebooks: {' '.join(nb.name for nb in selected)}")
    if differ:
        say(
            "run_all.sh: NOTE: this environment differs from the pins in pyproject.toml: " + "; ".join(differ)
        )
    try:
        # the environments of the backend whose presets run (a device run's dry run: the device's)
        target = os.environ.get("JAXPERF_PRESET") or backend
        without = envs.ensure(
            python, PROJECT, [nb.number for nb in selected], opts.allow_partial, say, target
        )
    except envs.EnvironmentMissing as err:
        warn(f"run_all.sh: {err}")
        return 3
    run_dir = publish.new_run_dir(root)
    env = dict(os.environ)
    env["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(pyenv.kernelspec(run_dir / "jupyter", python)), os.environ.get("JUPYTER_PATH")])
    )
    if differ:
        env["JAXPERF_PIN_DIFFERENCES"] = "; ".join(differ)
    table, outcomes, made = [], [], set()
    versions = _versions(python) if opts.only is None and not opts.all else None
    started = time.monotonic()
    try:
        for nb in selected:
            if versions is not None:
                why = fresh.why_stale(
                    PROJECT, root, backend, nb.path, notebooks.parameters(nb, opts, backend), versions
                )
                if why is None:
                    redraw = fresh.redraw_needed(PROJECT, root, backend, nb.path)
                    hint = (
                        f"; presentation changed ({', '.join(redraw)}): ./run_all.sh render" if redraw else ""
                    )
                    say(f"\n=== {nb.name}: skipped, its published results still hold (--all reruns it){hint}")
                    table.append(
                        f"{nb.name:<32} {status.UNCHANGED:<7} {0:>6}s  its published results still hold"
                    )
                    continue
                say(f"\n=== {nb.name}: runs, {why}")
            outcome, row, studies = _one(
                nb, python, backend, opts, root, run_dir, env, without.get(nb.number, [])
            )
            table.append(row)
            outcomes.append(outcome)
            made |= studies
    except execute.Interrupted as sig:
        warn(f"run_all.sh: interrupted by {sig}: stopped the running notebook; published nothing from it")
        for row in table:
            warn("  " + row)
        return 128 + sig.signum
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    say(f"\n=== summary (backend={backend}, quick={opts.quick}, output root={root})")
    say(f"{'notebook':<32} {'status':<7} {'wall':>7}  outputs")
    for row in table:
        say(row)
    say(f"{'all':<32} {'':<7} {round(time.monotonic() - started):>6}s")
    if differ:
        say("versions that ran differ from the pins: " + "; ".join(differ))
    failed, partial = outcomes.count(status.FAILED), outcomes.count(status.PARTIAL)
    if failed:
        warn(f"run_all.sh: {failed} notebook(s) failed")
    if partial:
        warn(f"run_all.sh: {partial} notebook(s) skipped part of their work (partial: see above)")
    checked = rerun_report.run_check(opts.compare_to, root, studies=made, say=say) if opts.compare_to else 0
    if failed:
        return 1
    return checked or (6 if partial and not opts.allow_partial else 0)


def _versions(python: str) -> dict[str, str]:
    """The package versions installed in the run's Python, as a result's provenance names them."""
    code = (
        "import json; from jaxperf.backend import package_versions; from jaxperf_study.provenance import PACKAGES; "
        "print(json.dumps(package_versions(PACKAGES)))"
    )
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"run_all.sh: could not read the package versions of {python}: {proc.stderr.strip()[-800:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _one(
    nb: notebooks.Notebook,
    python: str,
    backend: str,
    opts: Options,
    root: Path,
    run_dir: Path,
    env: dict,
    without: list[str],
) -> tuple[str, str, set[str]]:
    """Run one notebook into staging; publish it only if it succeeded. Returns its status (ok,
    partial or FAILED), its table row, and the studies it published (``backend/study``).
    ``without``: the environments it runs without (``--allow-partial``), each with why."""
    rc, secs = _execute(nb, python, backend, opts, root, run_dir, env)
    return _finish(nb, backend, root, run_dir, rc, secs, without)


def _execute(
    nb: notebooks.Notebook,
    python: str,
    backend: str,
    opts: Options,
    root: Path,
    run_dir: Path,
    env: dict,
    params: dict | None = None,
    started: Any = None,
) -> tuple[int, int]:
    """papermill on ``nb`` into its staging folder: (exit status, seconds). ``params`` (a render):
    the published run's parameters. ``started`` is told the papermill process (a render runs
    several at once and stops them all on a signal)."""
    stage = run_dir / nb.name
    executed = f"results/{backend}/{nb.path.name}"
    given = notebooks.parameters(nb, opts, backend) if params is None else params
    cmd = _papermill(python, nb, stage / executed, given, opts)
    if params is not None:  # a render: several at once, each one line (their cells would interleave)
        cmd = [c for c in cmd if c not in ("--log-output", "--progress-bar")] + ["--no-progress-bar"]
    say(f"\n=== {nb.name} ({time.strftime('%H:%M:%S')})")
    start = time.monotonic()
    # Outputs go to staging; a notebook that reads what earlier ones published reads the root.
    rc = execute.run_papermill(
        cmd, {**env, "JAXPERF_OUTPUT_ROOT": str(stage), "JAXPERF_PUBLISHED_ROOT": str(root)}, started
    )
    return rc, round(time.monotonic() - start)


def _finish(
    nb: notebooks.Notebook,
    backend: str,
    root: Path,
    run_dir: Path,
    rc: int,
    secs: int,
    without: list[str],
    render: bool = False,
) -> tuple[str, str, set[str]]:
    """Publish a notebook that succeeded (in the main thread: signals are held meanwhile), or
    keep the executed copy of one that failed; see :func:`_one`. ``render``: the notebook's
    records stay (only its old figures are replaced)."""
    stage = run_dir / nb.name
    executed = f"results/{backend}/{nb.path.name}"
    if rc != 0:
        kept = publish.keep_failed(root, stage / executed)
        where = f"executed copy kept in {kept}" if kept else "no executed copy"
        if kept and (error := _first_error(kept)):
            where = f"{error}; {where}"
        return (
            status.FAILED,
            f"{nb.name:<32} {status.FAILED:<7} {secs:>6}s  {where} (results untouched)",
            set(),
        )
    _relative_paths(stage / executed, nb, executed)
    crash = os.environ.get("JAXPERF_TEST_CRASH_IN_PUBLISH")  # tests only: a SIGKILL mid-publish
    with execute.deferred_signals():
        files = publish.publish(
            root, stage, nb.name, executed, int(crash) if crash else None, keep_records=render
        )
    fresh.record_drawn(PROJECT, root, backend, nb.path)  # what its figures and text were drawn with
    shown = " ".join(f for f in files if f.endswith(("summary.md", ".ipynb")))
    skipped = [f"ran without {what}" for what in without] + status.skipped(root, files)
    outcome = status.PARTIAL if skipped else status.OK
    row = f"{nb.name:<32} {outcome:<7} {secs:>6}s  {len(files)} files: {shown}"
    return outcome, "\n".join([row, *(f"{'':<32} skipped: {s}" for s in skipped)]), status.studies(files)


def clean(argv: list[str]) -> int:
    """``clean [--output-root DIR]``: finish interrupted publishes, remove staging."""
    opts = parse(argv)
    if argv and argv[0] != "--output-root" or len(argv) not in (0, 2):
        raise UsageError("clean takes only --output-root DIR")
    root = resolve_root(opts, PROJECT)
    if not (root / publish.STAGING).is_dir():
        say(f"run_all.sh: nothing to clean in {root}")
        return 0
    lock = publish.RootLock(root, "./run_all.sh clean " + shlex.join(argv))
    try:
        lock.acquire(wait=False)
    except publish.LockedError as err:
        warn(f"run_all.sh: {err}")
        return 5
    try:
        publish.recover(root, say)
        publish.clean_stale(root, say=lambda m: None)
        shutil.rmtree(root / publish.STAGING / "failed", ignore_errors=True)
        say(f"run_all.sh: cleaned {root / publish.STAGING}")
        return 0
    finally:
        lock.release()


def _first_error(path: Path) -> str:
    """The first error a failed executed notebook shows (``FileNotFoundError: render: the
    committed record ... is missing``), on one line; empty when it shows none."""
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return ""
    for cell in cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                first = str(out.get("evalue", "")).splitlines()
                return f"{out.get('ename', '')}: {first[0] if first else ''}"
    return ""


#: papermill's and nbclient's per-run metadata: when each cell ran and for how long
_VOLATILE = ("start_time", "end_time", "duration")


def _relative_paths(path: Path, nb: notebooks.Notebook, executed: str) -> None:
    """papermill records absolute input/output paths, and a warning in an output names its
    file: keep no machine path in a published notebook (project-relative). Times and
    durations are dropped too, so a render of the same records writes the same bytes."""
    doc = json.loads(path.read_text())
    meta = doc.get("metadata", {}).get("papermill", {})
    for key in _VOLATILE:
        meta.pop(key, None)
    for cell in doc.get("cells", []):
        cell.get("metadata", {}).pop("execution", None)
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            cell["id"] = "injected-parameters"  # papermill draws a new random id each run
        for key in _VOLATILE:
            cell.get("metadata", {}).get("papermill", {}).pop(key, None)
    try:
        meta["input_path"] = str(nb.path.resolve().relative_to(PROJECT))
    except ValueError:
        meta["input_path"] = nb.path.name
    meta["output_path"] = executed
    text = json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    # A warning printed in an output names the module's file: keep it project-relative.
    path.write_text(text.replace(str(PROJECT) + "/", ""))


def main(argv: list[str]) -> int:
    """Entry point: ``[lab|clean] ARGS`` or a study run's options."""
    if argv[:1] == ["help"] or (argv[:1] not in (["lab"], ["compare"]) and {"-h", "--help"} & set(argv)):
        print(USAGE)
        return 0
    if argv[:1] == ["lab"]:
        from .lab import run_lab

        return run_lab(argv[1:], PROJECT, Path(sys.executable).parent)
    if argv[:1] == ["compare"]:
        return rerun_report.main(argv[1:])
    execute.install_handlers()
    try:
        if argv[:1] == ["clean"]:
            return clean(argv[1:])
        if argv[:1] == ["render"]:
            return run(argv[1:], render=True)
        return run(argv)
    except UsageError as err:
        warn(f"run_all.sh: {err}\n\n{USAGE}")
        return 2
    except execute.Interrupted as sig:
        warn(f"run_all.sh: interrupted by {sig} before any notebook ran; nothing was published")
        return 128 + sig.signum
