"""``./run_all.sh render`` (issue 36 item 4) on a trivial notebook folder (``JAXPERF_NOTEBOOKS_DIR``):
a render reads the published records instead of measuring, and rewrites what a measuring run
published byte for byte (summary, figures, executed copy), provenance included."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from jaxperf.paths import PROJECT_ROOT

BODY = """\
import difflib
import os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import jaxperf_study.study

study = jaxperf_study.study.start("STUDY", {"quick": quick}, backend=backend, host_devices=host_devices)


def measuring():
    with open(os.environ["JAXPERF_TEST_MEASURED"], "a") as marker:
        marker.write("measured\\n")
    return pd.DataFrame({"x": [1, 2, 3], "ms": [0.5, 0.25, 0.125]})


df = study.measure("timings", measuring)
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot(df.x, df.ms)
study.figure(fig, "ms", df, drawn_by="measuring")
study.summary({"median_ms": float(df.ms.median())}, f"The median is {df.ms.median():.2f} ms.")
print(df.ms.sum())
"""


@pytest.fixture(scope="module")
def nbs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("render_nbs")
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('backend = "auto"\nquick = False\nhost_devices = 8')
    params.metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {"name": "jaxperf", "display_name": "jaxperf", "language": "python"}
    for number, study in (("01", "alpha"), ("02", "beta")):  # a render runs them at once
        nb.cells = [params, nbformat.v4.new_code_cell(BODY.replace("STUDY", study))]
        nbformat.write(nb, folder / f"{number}_{study}.ipynb")
    return folder


def run_all(*args: str, nbs: Path, marker: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JAXPERF_NOTEBOOKS_DIR": str(nbs), "JAXPERF_TEST_MEASURED": str(marker)}
    cmd = [str(PROJECT_ROOT / "run_all.sh"), *args, "--backend", "cpu", "--python", sys.executable]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def published(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".staging" not in p.parts
    }


def test_render_rewrites_what_was_measured_byte_for_byte_and_never_measures(nbs, tmp_path):
    root, marker = tmp_path / "out", tmp_path / "measured.txt"
    measured = run_all("--output-root", str(root), nbs=nbs, marker=marker)
    assert measured.returncode == 0, measured.stdout[-2000:] + measured.stderr[-2000:]
    assert marker.read_text() == "measured\n" * 2
    before = published(root)
    assert {
        "results/cpu/alpha/summary.json",
        "figures/cpu/alpha_ms.svg",
        "results/cpu/01_alpha.ipynb",
    } <= set(before)
    assert b"start_time" not in before["results/cpu/01_alpha.ipynb"]  # no run's clock in the copy

    rendered = run_all("render", "--output-root", str(root), nbs=nbs, marker=marker)
    assert rendered.returncode == 0, rendered.stdout[-2000:] + rendered.stderr[-2000:]
    assert marker.read_text() == "measured\n" * 2  # the steps were not run again
    after = published(root)
    assert sorted(after) == sorted(before)
    changed = [name for name in before if before[name] != after[name]]
    diff = "".join(
        difflib.unified_diff(
            before[n].decode(errors="replace").splitlines(True),
            after[n].decode(errors="replace").splitlines(True),
        )
        for n in changed[:1]
    )
    assert changed == [], diff[:3000]

    (root / "results/cpu/alpha/timings.csv").unlink()
    missing = run_all("render", "--output-root", str(root), nbs=nbs, marker=marker)
    assert missing.returncode == 1
    assert "results/cpu/alpha/timings.csv is missing" in missing.stdout + missing.stderr
    assert "02_beta                          ok" in missing.stdout  # the other one still redrawn
    assert marker.read_text() == "measured\n" * 2
    assert published(root)["results/cpu/alpha/summary.json"] == before["results/cpu/alpha/summary.json"]


def test_render_refuses_what_only_a_measuring_run_takes(nbs, tmp_path):
    for args in (["-p", "repeats", "3"], ["--all"], ["--compare-to", "results/cpu"]):
        out = run_all("render", *args, nbs=nbs, marker=tmp_path / "m")
        assert out.returncode == 2
        assert f"render takes no {args[0]}" in out.stderr
    assert not (tmp_path / "m").exists()
