"""A notebook's frame: start (backend, provenance, output folders), then write
records, figures and the summary through one object.

    settings = DispatchSettings.from_parameters(globals())
    study = jaxperf_study.study.start("dispatch", settings)
    df = study.measure("timings", sweep, cells, processes=3)  # written as records; a render reads them
    fig, data = report.plot_it_per_s(df)       # a function marked @plots.draws
    study.figure(fig, "it_per_s_vs_leaves", data)  # saved, then shown inline
    study.summary(summary_dict, markdown_text)

A part the study could not do here is recorded with :meth:`Study.skip` (:func:`skip` from library
code); long loops report progress with :func:`progress` or :func:`track`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from jaxperf import backend as _backend
from jaxperf import paths
from jaxperf.errors import bad_value, check_int

from . import display, provenance, records
from .settings import StudySettings

if TYPE_CHECKING:  # drawing modules load when a figure is drawn: a measuring child needs none
    import matplotlib.figure

    from . import plots

T = TypeVar("T")
RENDER_ENV = "JAXPERF_RENDER"  # set: Study.measure reads committed records instead of measuring
PROGRESS_ENV = "JAXPERF_PROGRESS"  # "widget", "text" or "auto" (the default)
TEXT_INTERVAL_S = 10.0


@dataclass
class Study:
    """What a notebook writes through: its folders, its provenance, what it saved."""

    name: str
    info: _backend.BackendInfo
    parameters: dict[str, Any]
    provenance: dict[str, Any]
    results_dir: Path
    figures_dir: Path
    settings: StudySettings | None = None
    figures: dict[str, plots.SavedFigure] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"part", "reason"}, in order
    _drawing: Any = field(default=None, init=False, repr=False, compare=False)  # the open progress bar
    code: list[str] | None = None  # rendering: the measuring run's code files, kept as they were

    @property
    def backend(self) -> str:
        return self.info.backend

    def records(self, df: pd.DataFrame, name: str) -> None:
        """Write ``df`` as ``results/<backend>/<study>/<name>.csv`` with its provenance sidecar (and return
        nothing, so a cell that ends with it prints no path of this machine)."""
        records.write_records(df, self.results_dir / name, self.provenance)

    def measure(
        self,
        names: str | tuple[str, ...],
        fn: Callable[..., Any],
        *args: Any,
        processes: int = 1,
        **kwargs: Any,
    ) -> Any:
        """Run a measuring step ``fn(*args, **kwargs)`` and write what it returns as records
        ``names`` (one DataFrame per name, in order); returns what ``fn`` returned.

        ``processes=n`` runs the step in n fresh processes, one after another (``fn`` importable by
        name, its arguments picklable; each child starts JAX as this process did), and concatenates
        each record with a ``process`` column 0..n-1; a child that raises makes this raise
        RuntimeError with its traceback. A run that only redraws (``./run_all.sh render``,
        :data:`RENDER_ENV` set) reads the committed records instead, so the cells after it run on
        the same data. ValueError for a bad ``processes`` or an ``fn`` a fresh process cannot
        import; FileNotFoundError (naming the file) when rendering without a committed record.
        """
        single = isinstance(names, str)
        wanted: tuple[str, ...] = (names,) if isinstance(names, str) else tuple(names)
        check_int("processes", processes, minimum=1)

        def returned(out: Any) -> tuple[pd.DataFrame, ...]:
            frames = (out,) if single else tuple(out)
            if len(frames) != len(wanted) or not all(isinstance(f, pd.DataFrame) for f in frames):
                raise TypeError(
                    f"measure: {getattr(fn, '__name__', fn)} must return {len(wanted)} DataFrame(s) for {wanted}"
                )
            return frames

        if rendering():
            folder = _published(self.backend, self.name)
        else:
            folder = self.results_dir
            if processes > 1 or in_children(self.backend):
                _check_importable(fn)
                runs = [
                    returned(self._in_fresh_process(fn, args, kwargs, k, processes)) for k in range(processes)
                ]
                frames = tuple(
                    pd.concat([r[i].assign(process=k) for k, r in enumerate(runs)], ignore_index=True)
                    if processes > 1
                    else runs[0][i]
                    for i in range(len(wanted))
                )
            else:
                frames = returned(fn(*args, **kwargs))
            for name, df in zip(wanted, frames, strict=True):
                self.records(df, name)
        # What was written (rendering: what the measuring run wrote), read back: the cells after this
        # compute on the very records a render reads (CSV round trip included), so both agree.
        back = tuple(records.read_records(_committed(folder / f"{name}.csv"))[0] for name in wanted)
        return back[0] if single else back

    def _in_fresh_process(self, fn: Callable[..., Any], args: tuple, kwargs: dict, k: int, n: int) -> Any:
        """``fn(*args, **kwargs)`` in a new (spawned) Python process set up as this one; the
        parts it skipped (:func:`skip`) are recorded here too."""
        bare = dataclasses.replace(self, figures={}, skipped=[], settings=None)
        status, value, skipped = _spawned(_child, (bare, _jax_settings(), fn, args, kwargs), f"measure-{k}")
        if status != "ok":
            raise RuntimeError(
                f"measure: {getattr(fn, '__qualname__', fn)} failed in fresh process {k} (of {n}):\n{value}"
            )
        for entry in skipped:
            self.skip(entry["part"], entry["reason"])
        return value

    def figure(
        self,
        fig: matplotlib.figure.Figure,
        name: str,
        data: pd.DataFrame,
        *,
        drawn_by: str | Callable[..., Any] | None = None,
        note: str = "",
    ) -> None:
        """Save ``fig`` under ``figures/<backend>/`` (PNG + SVG + ``data`` as CSV, the name prefixed with
        the study's), kept in ``study.figures`` for summary.json, then show it inline. ``drawn_by``:
        the plotting function, unless it is marked ``@plots.draws`` (:func:`plots.who_drew`)."""
        from . import plots

        full = name if name.startswith(self.name) else f"{self.name}_{name}"
        saved = plots.save(fig, self.figures_dir, full, data, self.provenance, drawn_by=drawn_by, note=note)
        self.figures[full] = saved
        plots.show(fig, saved.png)
        if self._drawing is not None:
            self._drawing.update(1)

    @contextlib.contextmanager
    def drawing(self, n: int) -> Iterator[None]:
        """A progress bar over the next ``n`` :meth:`figure` calls of a cell (each figure is
        laid out, fitted for a notebook and saved twice: a few seconds each)."""
        with progress(n, "figures") as bar:
            self._drawing = bar
            try:
                yield
            finally:
                self._drawing = None

    def skip(self, part: str, reason: str) -> None:
        """Record that ``part`` of this study was not done here, and why (the command that builds
        what was missing), before :meth:`summary` writes the list as summary.json's ``skipped`` and
        ``./run_all.sh`` reports the notebook "partial". What a backend cannot have and a smoke run's
        sizes are the study's scope, not skipped parts. The same part twice is kept once; ValueError
        for an empty ``part`` or ``reason``."""
        for name, text in (("part", part), ("reason", reason)):
            if not isinstance(text, str) or not text.strip():
                raise bad_value(name, text, "a non-empty string")
        entry = {"part": part.strip(), "reason": reason.strip()}
        if entry not in self.skipped:
            self.skipped.append(entry)

    def summary(self, summary: dict[str, Any], markdown: str) -> None:
        """Write summary.json (with the figures drawn so far, the parts skipped (:meth:`skip`)
        and provenance) and summary.md (with the environment block) in the study's results
        folder."""
        figures = {
            name: {
                "files": [paths.relative(p) for p in saved.files()],
                "drawn_by": saved.drawn_by,
            }
            for name, saved in self.figures.items()
        }
        own = type(self.settings).__module__.rpartition(".")[0] if self.settings is not None else None
        code = self.code if self.code is not None else provenance.code_files(own)
        payload = {
            "study": self.name,
            "backend": self.backend,
            **summary,
            "figures": figures,
            "skipped": list(self.skipped),
            "provenance": {**self.provenance, "code": code},
        }
        text = markdown.rstrip() + "\n\n" + provenance.environment_block(self.provenance) + "\n"
        records.write_summary(self.results_dir, payload, text)

    def environment(self) -> str:
        """The environment block, and where this run's files go (project-relative), for
        the top of the notebook."""
        return (
            provenance.environment_block(self.provenance)
            + f"\n\nOutputs: `{paths.relative(self.results_dir)}/` and `{paths.relative(self.figures_dir)}/`"
        )


_current: Study | None = None  # the study :func:`start` made last, for :func:`skip`


def _committed(path: Path, what: str = "record") -> Path:
    """``path``, the committed file a run that only redraws reads; FileNotFoundError if missing."""
    if not path.is_file():
        raise FileNotFoundError(
            f"render: the committed {what} {paths.relative(path)} is missing; measure it first "
            "(./run_all.sh without render reruns this notebook)"
        )
    return path


def _check_importable(fn: Callable[..., Any]) -> None:
    """A fresh process finds ``fn`` by its module and name: not one defined in a notebook or
    inside another function."""
    if not inspect.isfunction(fn):
        return  # a partial or a callable object: pickling says whether it travels
    main = sys.modules.get("__main__")
    if "<locals>" in fn.__qualname__ or (fn.__module__ == "__main__" and not getattr(main, "__file__", None)):
        raise bad_value(
            "fn",
            fn.__qualname__,
            "a function defined at the top level of an importable module (processes > 1 runs it in "
            "fresh processes, which import it by name; a notebook's own functions cannot be imported)",
        )


def _jax_settings() -> dict[str, Any]:
    """This process's JAX settings that a fresh process can be given (plain values)."""
    import jax

    plain = (bool, int, float, str, type(None))
    # not the platforms: a parent that stays on the CPU sends its children to the accelerator
    return {k: v for k, v in jax.config.values.items() if isinstance(v, plain) and k != "jax_platforms"}


def _child(
    send: Any, study: Study, settings: dict[str, Any], fn: Callable[..., Any], args: tuple, kwargs: dict
):
    """A fresh process's measuring step: JAX set up as the parent's, then ``fn``; sends back
    ("ok", result, skipped) or ("error", traceback text, [])."""
    global _current
    try:
        import jax

        for name, value in settings.items():  # before JAX starts a backend
            if jax.config.values.get(name, value) != value:
                jax.config.update(name, value)
        host = int(settings.get("jax_num_cpu_devices") or 0)
        if study.backend == "cpu" or host < 1:  # the parent's CPU devices (no CPU override: JAX's 8)
            host = study.info.device_count if study.backend == "cpu" else 8
        study.info = _backend.configure(study.backend, host)
        _current = study
        message: tuple[str, Any, list] = ("ok", fn(*args, **kwargs), study.skipped)
    except BaseException:
        message = ("error", traceback.format_exc(), [])
    try:
        send.send(message)
    except Exception:  # the result does not pickle
        send.send(("error", traceback.format_exc(), []))
    finally:
        send.close()


def start(
    name: str,
    settings: StudySettings | Mapping[str, Any],
    *,
    backend: str | None = None,
    host_devices: int | None = None,
    output_root: str | None = None,
) -> Study:
    """Configure the backend (before JAX starts), capture provenance, make the folders. ``settings``:
    the study's :class:`~jaxperf_study.settings.StudySettings` (its ``backend``, ``host_devices`` and
    ``output_root`` used, ``as_dict()`` recorded) or a dict of parameters (then the keywords say where
    to run: auto, 8 host devices, the default output root); a keyword given wins over the field. The
    recorded ``output_root`` never names a folder of this machine."""
    if isinstance(settings, StudySettings):
        parameters = settings.as_dict()
        backend = settings.backend if backend is None else backend
        host_devices = settings.host_devices if host_devices is None else host_devices
        output_root = settings.output_root if output_root is None else output_root
    elif isinstance(settings, Mapping):
        parameters = dict(settings)
    else:
        raise bad_value("settings", settings, "a StudySettings (or a dict of the notebook's parameters)")
    root = paths.output_root(output_root or None)  # validates before any work
    if parameters.get("output_root"):
        parameters["output_root"] = paths.relative(str(parameters["output_root"]))
    host = 8 if host_devices is None else host_devices
    display.install()  # in a notebook: tables wrap at the notebook's width
    code, skipped = None, []
    if rendering():  # redrawn, not measured: the measuring run's provenance stands, no device opens
        info = _committed_info(backend or "auto", host, name)
        committed = _committed_summary(info.backend, name)
        prov = {k: v for k, v in committed["provenance"].items() if k != "code"}
        code, skipped = list(committed["provenance"].get("code", [])), list(committed.get("skipped", []))
    elif in_children(backend or "auto"):
        info, environment = _probe(backend or "auto", host)
        _backend.configure("cpu", host)  # this process never opens the accelerator
        prov = provenance.capture(parameters, info, environment)
        prov["rerun_inflation"] = _inflation(info.backend)
    else:
        info = _backend.configure(backend or "auto", host)
        prov = provenance.capture(parameters, info)
        prov["rerun_inflation"] = _inflation(info.backend)
    from . import reruns

    reruns.set_rerun_inflation(float(prov.get("rerun_inflation") or 1.0))
    global _current
    _current = Study(
        name=name,
        info=info,
        parameters=parameters,
        provenance=prov,
        results_dir=paths.results_dir(info.backend, name, root),
        figures_dir=paths.figures_dir(info.backend, root),
        settings=settings if isinstance(settings, StudySettings) else None,
        skipped=skipped,
        code=code,
    )
    return _current


#: the rerun check's calibration: how much wider than their processes' spread the medians of
#: full runs on this machine moved (tools/runall/compare.py writes it; copied here by hand)
CALIBRATION = "rerun_calibration.json"


def _inflation(backend: str) -> float:
    """The committed calibration's factor for ``backend`` (1 where none is committed)."""
    path = paths.PROJECT_ROOT / "results" / backend / CALIBRATION
    if not path.is_file():
        return 1.0
    factor = json.loads(path.read_text()).get("inflation")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor >= 1:
        raise bad_value(f"{paths.relative(str(path))} inflation", factor, "a number >= 1")
    return float(factor)


#: Set (to 1) by tools/device/run.sh: every measurement runs in fresh processes, as on an accelerator.
CHILDREN_ENV = "JAXPERF_MEASURE_IN_CHILDREN"


def in_children(backend: str) -> bool:
    """Whether measurements run in fresh processes while the notebook's stays on the CPU: on a GPU or
    TPU (one process at a time holds a TPU chip; a GPU's memory would be claimed twice), or when
    :data:`CHILDREN_ENV` asks for it (the device run's dry run on a CPU)."""
    if os.environ.get(CHILDREN_ENV) == "1" or backend in ("gpu", "tpu"):
        return True
    return (
        backend == "auto"
        and _backend.missing("auto") is None
        and any(sign for name, sign in _backend.hardware().items() if name != "cpu")
    )


def _spawned(target: Callable[..., None], args: tuple, name: str) -> tuple:
    """What ``target(send, *args)`` sent back from a new (spawned) process: ("ok", value, ...),
    or ("error", text, []) when it died without a word (a crash, a kill)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=target, args=(send, *args), name=name)
    child.start()
    send.close()
    try:
        return receive.recv()
    except EOFError:
        child.join()
        return "error", f"the process ended with exit code {child.exitcode}", []
    finally:
        receive.close()
        child.join()


def _probe(backend: str, host: int) -> tuple[_backend.BackendInfo, str]:
    """The accelerator's description and JAX's environment report, from a fresh process that
    opens it and exits (so that the measuring processes can open it after)."""
    status, value, *_ = _spawned(_probe_child, (backend, host), "probe-device")
    if status != "ok":
        raise _backend.BackendUnavailableError(f"backend={backend!r} could not be opened: {value}")
    return value


def _probe_child(send: Any, backend: str, host: int) -> None:
    try:
        import jax

        info = _backend.configure(backend, host)
        send.send(("ok", (info, jax.print_environment_info(return_string=True))))
    except BaseException as err:
        send.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        send.close()


def _committed_info(backend: str, host: int, name: str) -> _backend.BackendInfo:
    """A render's backend: the one its published run measured on, from that run's provenance (no
    device is opened, so a TPU run's figures redraw on a CPU); ``auto``: this machine's."""
    if backend == "auto":
        return _backend.configure("auto", host)
    _backend.configure("cpu", host)
    prov = _committed_summary(backend, name)["provenance"]
    return _backend.BackendInfo(
        backend,
        str(prov.get("device_kind")),
        int(prov.get("device_count") or 0),
        str(prov.get("platform_version", "")),
    )


def rendering() -> bool:
    """Whether this run only redraws (``./run_all.sh render``): :data:`RENDER_ENV` is set."""
    return bool(os.environ.get(RENDER_ENV))


def _published(backend: str, name: str) -> Path:
    """Where the measuring run published study ``name``'s records and summary."""
    return paths.published_root() / "results" / backend / name


def _committed_summary(backend: str, name: str) -> dict[str, Any]:
    """The measuring run's summary.json, whose provenance a render keeps."""
    return json.loads(_committed(_published(backend, name) / "summary.json", "summary").read_text())


def skip(part: str, reason: str) -> None:
    """:meth:`Study.skip` on the study this process started last (library code that decides to
    leave a part out need not hold the study). Raises RuntimeError when no study was started."""
    if _current is None:
        raise RuntimeError(
            "jaxperf_study.study.skip: no study started in this process (jaxperf_study.study.start first)"
        )
    _current.skip(part, reason)


def _under_papermill() -> bool:
    """papermill (and nbclient) start the kernel as their own child process; papermill's
    in-process engine (tools/runall/inprocess.py) runs the cells in its own and says so."""
    if os.environ.get("JAXPERF_INPROCESS") == "1":
        return True
    try:
        cmdline = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return False
    # A word of the command line, not any mention: `pytest -k papermill` is not papermill.
    return any(os.path.basename(word) in (b"papermill", b"nbclient") for word in cmdline.split(b"\0"))


def progress_mode() -> str:
    """``"widget"`` in an interactive notebook (JupyterLab) with ipywidgets installed,
    ``"text"`` elsewhere (papermill, scripts, tests); ``$JAXPERF_PROGRESS`` overrides."""
    chosen = os.environ.get(PROGRESS_ENV, "auto") or "auto"
    if chosen not in ("auto", "widget", "text"):
        raise bad_value(PROGRESS_ENV, chosen, '"auto", "widget" or "text"')
    if chosen != "auto":
        return chosen
    if display.kernel_shell() is None or _under_papermill():
        return "text"
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return "text"
    return "widget"


_TIMES = re.compile(r"\s*\[[^\]]*(?:<|it/s|s/it)[^\]]*\]$")  # tqdm's "[elapsed<left, rate]"


class _Lines:
    """tqdm's stream in text mode: outside a kernel each redraw a whole line on stdout; in a kernel
    one output line updated in place (the executed notebook stores the bar's last state), and under
    papermill every redraw also on the kernel's own terminal (run_all.sh's log)."""

    def __init__(self) -> None:
        self.in_kernel = display.kernel_shell() is not None
        self.echo = self.in_kernel and _under_papermill()
        self.handle: Any = None

    def write(self, text: str) -> None:
        line = text.strip("\r\n ")
        if not line:
            return
        if not self.in_kernel:
            sys.stdout.write(line + "\n")
            return
        from IPython.display import display as show_output

        # The notebook keeps the bar without its times ("[00:03<00:00, 1.54it/s]"): a run and a
        # render of the same records then write the same bytes; the terminal gets them.
        kept = _TIMES.sub("", line)
        if self.handle is None:  # papermill's --log-output prints this first line itself
            self.handle = show_output({"text/plain": kept}, raw=True, display_id=True)
            return
        self.handle.update({"text/plain": kept}, raw=True)
        if self.echo:  # on the kernel process's own stdout (in-process, papermill's: sys.__stdout__)
            stream = sys.__stdout__ if os.environ.get("JAXPERF_INPROCESS") == "1" else sys.stdout
            with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
                os.write(stream.fileno(), (line + "\n").encode())  # type: ignore[union-attr]

    def flush(self) -> None:
        sys.stdout.flush()


def progress(total: int, desc: str, **kwargs: Any) -> Any:
    """A progress bar for ``total`` steps (a context manager; call ``update()``): a widget in
    JupyterLab, else a line at most every 10 s and at the end (:class:`_Lines`; never on stderr,
    which notebooks show as an error box)."""
    if progress_mode() == "widget":
        from tqdm.notebook import tqdm as notebook_tqdm

        return notebook_tqdm(total=total, desc=desc, **kwargs)
    from tqdm import tqdm

    # the bar's width fixed, not what the times beside it leave: a run and a render draw the same bar
    kwargs.setdefault("bar_format", "{l_bar}{bar:44}{r_bar}")
    return tqdm(total=total, desc=desc, file=_Lines(), mininterval=TEXT_INTERVAL_S, ascii=True, **kwargs)


def track(items: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """Yield from ``items`` with a :func:`progress` bar (``total`` defaults to ``len(items)``)."""
    if total is None:
        total = len(items) if hasattr(items, "__len__") else 0  # type: ignore[arg-type]
    with progress(total, desc) as bar:
        for item in items:
            yield item
            bar.update(1)
