"""A notebook's frame: start (backend, provenance, output folders), then write
records, figures and the summary through one object.

    study = jaxperf.study.start("dispatch", parameters, backend="auto", host_devices=8)
    study.records(df, "timings")
    study.figure(fig, "dispatch_it_per_s_vs_leaves", data, drawn_by="dispatch.plot_it_per_s")
    study.summary(summary_dict, markdown_text)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from . import backend as _backend
from . import paths, plots, provenance, records


def progress(total: int, desc: str, **kwargs: Any):
    """A text progress bar on stderr: readable in JupyterLab and in run_all.sh's log."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, mininterval=2.0, ascii=True, **kwargs)


@dataclass
class Study:
    name: str
    info: _backend.BackendInfo
    parameters: dict[str, Any]
    provenance: dict[str, Any]
    results_dir: Path
    figures_dir: Path
    written: list[Path] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return self.info.backend

    def records(self, df: pd.DataFrame, name: str) -> Path:
        path = records.write_records(df, self.results_dir / name, self.provenance)
        self.written += [path, path.with_suffix(".json")]
        return path

    def figure(self, fig, name: str, data: pd.DataFrame, *, drawn_by: str, note: str = "") -> dict[str, Path]:
        """Save a figure under figures/<backend>/, prefixed with the study's name."""
        full = name if name.startswith(self.name) else f"{self.name}_{name}"
        out = plots.save(fig, self.figures_dir, full, data, self.provenance, drawn_by=drawn_by, note=note)
        self.written += list(out.values())
        return out

    def summary(self, summary: dict[str, Any], markdown: str) -> tuple[Path, Path]:
        """Write summary.json (with provenance) and summary.md (with the environment block)."""
        payload = {"study": self.name, "backend": self.backend, **summary, "provenance": self.provenance}
        text = markdown.rstrip() + "\n\n" + provenance.environment_block(self.provenance) + "\n"
        out = records.write_summary(self.results_dir, payload, text)
        self.written += list(out)
        return out

    def environment(self) -> str:
        return provenance.environment_block(self.provenance)


def start(
    name: str,
    parameters: dict[str, Any],
    *,
    backend: str = "auto",
    host_devices: int = 8,
    output_root: str | None = None,
) -> Study:
    """Configure the backend (before JAX starts), capture provenance, make folders."""
    info = _backend.configure(backend, host_devices)
    prov = provenance.capture(parameters)
    return Study(
        name=name,
        info=info,
        parameters=dict(parameters),
        provenance=prov,
        results_dir=paths.results_dir(info.backend, name, output_root),
        figures_dir=paths.figures_dir(info.backend, output_root),
    )
