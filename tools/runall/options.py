"""run_all.sh's options: parsed and checked before any work or any write.

Every error names the option, the value given and what is allowed, and exits
with status 2 after the usage text (``UsageError``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

USAGE = """\
Regenerate the study headless, or run its tests.

  ./run_all.sh [options]          run the notebooks (creates .venv on first use)
  ./run_all.sh test [pytest args] run the tests (creates .venv on first use)
  ./run_all.sh setup              only create/refresh .venv and the Jupyter kernel
  ./run_all.sh lab [jupyter args] JupyterLab on the project, headless: prints the URL
  ./run_all.sh clean [--output-root DIR]  remove staging left by interrupted runs
  ./run_all.sh compare COMMITTED RERUN   the rerun check of two existing output roots
                              (no notebook runs; `compare --help` for its options)
  ./run_all.sh render [--only LIST] [--output-root DIR]
                              redraw without measuring: every notebook re-executes on
                              its published records (summaries, figures, executed
                              copies), then README.md and results/upstream/

Options for a study run:
  --backend auto|cpu|gpu|tpu  where to run (default auto: the best present)
  --quick                     small sizes, for smoke runs; writes under .quick/
                              unless --output-root is given, so a smoke run
                              never replaces the committed full results
  --only LIST                 comma-separated notebook numbers or names (01,02);
                              they run whether or not their results still hold
  --all                       run every notebook, also those whose results hold
  --output-root DIR           where results/ and figures/ go (default: here)
  --timeout SECONDS           per-cell timeout (default 7200; 1 to 10000000)
  --host-devices N            forced CPU devices (default 8, like a TPU v3-8;
                              1 to 4096)
  -p NAME VALUE               set a notebook parameter (a Python literal) in
                              the selected notebooks that declare NAME
  --python PATH               run inside an existing Python environment (its
                              own jax/jaxlib, never touched); also JAXPERF_PYTHON
  --engine auto|kernel|inprocess
                              how papermill executes a notebook: a Jupyter kernel
                              of its own, or the cells in papermill's process (for
                              a machine where no socket can be opened, such as the
                              lent TPU); auto (default): in-process only there
  --wait                      if another run holds the output root, wait for it
  --compare-to DIR            the rerun check: after the run, compare every number
                              and verdict the README renders with DIR's (an output
                              root, or its results/<backend>: results/cpu); writes
                              <output root>/results/rerun_check.md. The rerun goes
                              to --output-root (default .rerun/), never into DIR
  --allow-partial             run a notebook even when an environment it needs
                              (below) is missing and cannot be built; it ends
                              "partial"
  -h, --help                  this text

Without --only or --all, a notebook whose published results still hold is
skipped, with why: they were made from a clean commit, and since then neither
the code they loaded nor the notebook changed, nor the parameters, nor the
package versions, nor a published result they read (tools/runall/fresh.py).
Every other notebook runs, and the run says what changed. A change to presentation
code only (plots, palette, figures.py, summary_md.py, templates) keeps results:
`./run_all.sh render` redraws them.

Each notebook runs through papermill into a staging folder under
<output root>/.staging/; its outputs are published only when it succeeded, all
of them or none (a journal finishes an interrupted publish on the next run).
One failing notebook does not stop the others; the exit code is non-zero if
any failed. SIGINT/SIGTERM stop the running notebook, publish nothing from it
and exit 130/143. One run at a time per output root (a lock).

Before any notebook runs, the environments the selected notebooks need are
made ready: the Mosaic GPU compile environment (09) is built once under .envs/
(about 1.3 GB from PyPI); triton (04) and libtpu (05) come with the set-up.
If one cannot be had, the run stops (exit 3) with the command that builds it.
A notebook that skipped part of its work ends "partial" in the summary, with
what and why.

Exit status: 0 every notebook ran whole; 1 a notebook failed; 2 bad option;
3 environment set-up failed or missing; 4 backend absent; 5 output root busy;
6 a notebook ended partial (not with --allow-partial); 7 the rerun check failed
(a verdict flipped, a number outside its range, or a value missing in the rerun); 130/143 interrupted.
"""

BACKENDS = ("auto", "cpu", "gpu", "tpu")
ENGINES = ("auto", "kernel", "inprocess")
# Parameters run_all.sh sets itself: -p cannot set them (use the option instead).
RESERVED = {
    "backend": "--backend",
    "quick": "--quick",
    "host_devices": "--host-devices",
    "output_root": "--output-root",
}


_FLAGS = ("--quick", "--all", "--wait", "--allow-partial")
# Options that take a value, with what the value is (for "is missing its value").
_VALUED = {
    "--backend": "auto|cpu|gpu|tpu",
    "--only": "LIST",
    "--output-root": "DIR",
    "--timeout": "SECONDS",
    "--host-devices": "N",
    "--python": "PATH",
    "--engine": "auto|kernel|inprocess",
    "--compare-to": "DIR",
    "-p": "NAME VALUE",
}
# The largest value each integer option takes.
LIMITS = {"--timeout": 10**7, "--host-devices": 4096}


def _is_option(arg: str) -> bool:
    """Whether ``arg`` is one of run_all.sh's options (``--name=value`` included)."""
    return arg.split("=", 1)[0] in (*_FLAGS, *_VALUED, "-h", "--help")


class UsageError(Exception):
    """A bad option: run_all.sh prints it with the usage text and exits 2."""


@dataclass
class Options:
    backend: str = "auto"
    quick: bool = False
    only: list[str] | None = None  # None: the default set
    all: bool = False  # run even the notebooks whose published results still hold
    output_root: str | None = None
    timeout: int = 7200
    host_devices: int = 8
    params: list[tuple[str, str]] = field(default_factory=list)
    python: str | None = None
    wait: bool = False
    compare_to: str | None = None
    allow_partial: bool = False
    engine: str = "auto"


def _positive_int(option: str, value: str, what: str) -> int:
    """``value`` as an integer from 1 to ``LIMITS[option]``, written in ASCII digits (``str.isdigit``
    also accepts '²' or '٣', which ``int`` refuses or reads as another number)."""
    text, limit = value.strip(), LIMITS[option]
    allowed = f"{what}: an integer from 1 to {limit}"
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise UsageError(f"{option} '{value}' is not a positive integer ({allowed})")
    if int(text) > limit:
        raise UsageError(f"{option} '{value}' is out of range ({allowed})")
    return int(text)


def _only(value: str) -> list[str]:
    items = [w.strip() for w in value.split(",")]
    if not value.strip() or any(not w for w in items):
        raise UsageError(f"--only '{value}' has an empty name: give notebook numbers or names, e.g. 01,02")
    seen: list[str] = []
    for w in items:
        if w in seen:
            raise UsageError(f"--only '{value}' names '{w}' twice")
        seen.append(w)
    return seen


def parse(argv: list[str], env: dict[str, str] | None = None) -> Options:
    """Parse a study run's options (no file is touched). Raises UsageError."""
    env = os.environ if env is None else env
    opts = Options(python=env.get("JAXPERF_PYTHON") or None)
    args = list(argv)

    def value(option: str, shown: str | None = None) -> str:
        """The next argument as ``option``'s value; refused when there is none or it is an option
        (``-p repeats --output-root R``: the value was forgotten, not ``--output-root``)."""
        shown = shown or option
        what = _VALUED.get(option, "VALUE") if shown == option else "VALUE"
        if not args:
            raise UsageError(f"{shown} is missing its value: {shown} {what}")
        if _is_option(args[0]) or (args[0].startswith("--") and args[0] != "--"):
            raise UsageError(
                f"{shown} is missing its value: {shown} {what} (the next argument, '{args[0]}', is an option)"
            )
        return args.pop(0)

    while args:
        arg = args.pop(0)
        if "=" in arg and arg.startswith("--"):
            arg, rest = arg.split("=", 1)
            if arg in _FLAGS:
                raise UsageError(f"{arg} takes no value (got '{rest}')")
            args.insert(0, rest)
        if arg == "--backend":
            opts.backend = value(arg)
            if opts.backend not in BACKENDS:
                raise UsageError(f"--backend '{opts.backend}' is not one of {', '.join(BACKENDS)}")
        elif arg == "--quick":
            opts.quick = True
        elif arg == "--all":
            opts.all = True
        elif arg == "--only":
            opts.only = _only(value(arg))
        elif arg == "--output-root":
            opts.output_root = value(arg)
            if not opts.output_root.strip():
                raise UsageError("--output-root '' is empty: give a folder")
        elif arg == "--timeout":
            opts.timeout = _positive_int(arg, value(arg), "seconds per cell")
        elif arg == "--host-devices":
            opts.host_devices = _positive_int(arg, value(arg), "forced CPU devices")
        elif arg == "-p":
            name = value(arg)
            if not name.isidentifier() or not name.isascii():
                raise UsageError(
                    f"-p '{name}' is not a parameter name (a notebook's parameter, e.g. repeats)"
                )
            if name in RESERVED:
                raise UsageError(f"-p {name}: use {RESERVED[name]} instead")
            opts.params.append((name, value(arg, f"-p {name}")))
        elif arg == "--python":
            opts.python = value(arg)
            if not opts.python.strip():
                raise UsageError("--python '' is empty: give the path of a Python executable")
        elif arg == "--engine":
            opts.engine = value(arg)
            if opts.engine not in ENGINES:
                raise UsageError(f"--engine '{opts.engine}' is not one of {', '.join(ENGINES)}")
        elif arg == "--wait":
            opts.wait = True
        elif arg == "--compare-to":
            opts.compare_to = value(arg)
            if not opts.compare_to.strip():
                raise UsageError("--compare-to '' is empty: give the committed results, e.g. results/cpu")
        elif arg == "--allow-partial":
            opts.allow_partial = True
        else:
            raise UsageError(f"unknown option '{arg}' (the options are listed below)")
    if opts.all and opts.only is not None:
        raise UsageError("--all with --only: --only already runs every notebook it names; give one of them")
    return opts


def resolve_root(opts: Options, project: Path) -> Path:
    """The output root as an absolute path: the option (relative to the current
    folder), else ``.quick/`` for a quick run, ``.rerun/`` for a rerun check
    (``--compare-to``), else the project itself."""
    if opts.output_root is None:
        if opts.quick:
            return project / ".quick"
        return project / ".rerun" if opts.compare_to else project
    return Path(os.path.abspath(os.path.expanduser(opts.output_root)))
