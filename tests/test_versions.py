"""The Equinox version matrix (notebook 03): pin files, release names, the
child-process protocol of bench_old.py, failed environments, tables, summary.

No test builds an old environment: the benchmark runs in the current
interpreter (today's release, whose pins match the project's .venv).
"""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from notebook_support import assert_clean_source, run_notebook

from jaxperf import versions

TINY = versions.BenchConfig(
    warmup=1,
    repeats=2,
    number=2,
    mlp_depth=2,
    mlp_width=16,
    d_model=16,
    blocks=1,
    heads=2,
    seq_len=4,
    vocab=32,
    batch=1,
)
CURRENT = "0.13.8"


def test_pin_files_parse_and_pin_exact_versions():
    known = versions.available_releases()
    assert list(known) == [
        "0.7.1",
        "0.9.2",
        "0.10.2",
        "0.11.6",
        "0.11.7",
        "0.11.8",
        "0.11.9",
        "0.11.10",
        "0.11.12",
        "0.13.8",
    ]
    for release, pins in known.items():
        assert pins.equinox == release
        assert pins.python in ("3.10", "3.12")
        assert {"equinox", "jax", "jaxlib", "numpy"} <= set(pins.pins)
        for line in pins.pin_file.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                assert "==" in line and not any(op in line for op in ("<", ">", "~", "!", "*", "@")), line
    # The first three share one JAX: that is what isolates Equinox's change; so do 0.11.6-0.11.10.
    assert {known[r].jax for r in ("0.7.1", "0.9.2", "0.10.2")} == {"0.4.13"}
    assert {known[r].jax for r in ("0.11.6", "0.11.7", "0.11.8", "0.11.9", "0.11.10")} == {"0.4.35"}


def test_current_release_pins_match_the_project():
    import importlib.metadata as md

    pins = versions.available_releases()[CURRENT]
    for name in ("jax", "jaxlib", "equinox"):
        assert md.version(name) == pins.pins[name], "pyproject.toml and pins/0.13.8.txt disagree"


@pytest.mark.parametrize(
    "text, match",
    [
        ("# python: 3.10\nequinox==0.7.1\nnumpy<2\n", "not an exact pin"),
        ("equinox==0.7.1\n", "no '# python: X.Y' line"),
        ("# python: 3.10\njax==0.4.13\n", "no 'equinox==...' pin"),
        ("# python: 3.10\nequinox==0.9.2\n", "named for 0.7.1"),
    ],
)
def test_read_pins_rejects_anything_but_exact_pins(tmp_path, text, match):
    path = tmp_path / "0.7.1.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        versions.read_pins(path)


def test_bad_release_name_is_a_clear_error():
    with pytest.raises(ValueError) as err:
        versions.check_releases(["0.7.1", "0.99.0"])
    message = str(err.value)
    assert "releases=" in message and "0.99.0" in message and "0.10.2" in message and "0.13.8" in message
    with pytest.raises(ValueError, match="quick_releases="):
        versions.check_releases("0.7.1", name="quick_releases")
    with pytest.raises(ValueError, match="at most once"):
        versions.check_releases(["0.7.1", "0.7.1"])
    assert versions.check_releases(["0.13.8", "0.7.1"]) == ["0.7.1", "0.13.8"]


def test_bench_config_validates():
    with pytest.raises(ValueError, match="repeats=0"):
        versions.BenchConfig(repeats=0)
    with pytest.raises(ValueError, match="models="):
        versions.BenchConfig(models=("resnet",))
    assert "--mlp-depth" in versions.BenchConfig().argv()


def test_bench_protocol_in_the_current_interpreter():
    import equinox
    import jax

    doc = versions.run_bench(sys.executable, TINY, host_devices=8, timeout_s=300)
    assert doc["protocol"] == "jaxperf.versions.bench_old/1"
    assert doc["versions"]["jax"] == jax.__version__ and doc["versions"]["equinox"] == equinox.__version__
    assert doc["device_count"] == 8 and "--xla_force_host_platform_device_count=8" in doc["xla_flags"]
    rows = pd.DataFrame(doc["rows"])
    assert len(rows) == len(versions.MODELS) * len(versions.VARIANTS) * TINY.repeats
    assert set(rows["variant"]) == set(versions.VARIANTS)
    assert (rows["wall_s_per_call"] > 0).all() and (rows["dispatch_s_per_call"] > 0).all()
    # Rotated order: every variant takes every position once over len(VARIANTS) repeats.
    assert rows.groupby("repeat")["position"].nunique().eq(len(versions.VARIANTS)).all()
    for info in doc["models"].values():
        assert info["same_pytree"] is True
        assert info["arrays_per_call"] == 2 * info["param_arrays"] + 1  # params + momentum + x


def _fake_python(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_child_failure_surfaces_its_stderr(tmp_path):
    broken = _fake_python(
        tmp_path, 'echo "ImportError: no module named equinox (from the child)" >&2; exit 3'
    )
    with pytest.raises(versions.BenchmarkError, match="(?s)exited 3.*no module named equinox"):
        versions.run_bench(broken, TINY)


def test_child_printing_no_json_is_an_error(tmp_path):
    chatty = _fake_python(tmp_path, 'echo "hello, not json"; echo "warning on stderr" >&2')
    with pytest.raises(versions.BenchmarkError, match="(?s)no valid JSON.*hello, not json"):
        versions.run_bench(chatty, TINY)


def test_bench_old_rejects_bad_flags():
    import subprocess

    proc = subprocess.run(
        [sys.executable, str(versions.BENCH_SCRIPT), "--models", "resnet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and proc.stdout == ""
    assert "--models" in proc.stderr and "resnet" in proc.stderr


def test_cached_environment_is_reused_without_building(tmp_path):
    """A venv whose stamp matches its pin file is reused as-is (no pip run)."""
    release = versions.available_releases()[CURRENT]
    env = tmp_path / f"equinox-{CURRENT}"
    (env / "bin").mkdir(parents=True)
    # A stand-in for a built venv: a launcher for this interpreter (a bare symlink would lose the venv's packages).
    _fake_python(env / "bin", f'exec "{sys.executable}" "$@"')
    base = versions.find_python(release.python)
    (env / versions.STAMP_NAME).write_text(versions._stamp(release, base))
    status = versions.ensure_env(release, envs_dir=tmp_path, reuse_project_env=False)
    assert status.ok, status.error
    assert status.kind == "cached" and status.build_s == 0.0
    assert status.versions["equinox"] == CURRENT


def test_failed_environment_is_reported_not_raised(tmp_path):
    pins_dir = tmp_path / "pins"
    pins_dir.mkdir()
    shutil.copy(versions.PINS_DIR / f"{CURRENT}.txt", pins_dir)
    broken = versions.PINS_DIR.joinpath("0.7.1.txt").read_text().replace("# python: 3.10", "# python: 2.1")
    (pins_dir / "0.7.1.txt").write_text(broken)
    logged = []
    matrix = versions.gather(
        ["0.7.1", CURRENT], TINY, envs_dir=tmp_path / "envs", pins_dir=pins_dir, log=logged.append
    )
    envs = matrix.environments.set_index("release")
    assert envs.loc["0.7.1", "status"] == "failed"
    assert "Python 2.1" in envs.loc["0.7.1", "error"] and "JAXPERF_PYTHON_2_1" in envs.loc["0.7.1", "error"]
    assert envs.loc[CURRENT, "status"] == "ok" and envs.loc[CURRENT, "environment"] == "project .venv"
    assert set(matrix.timings["release"]) == {CURRENT}
    assert any("0.7.1" in line for line in logged)

    table = versions.tabulate(matrix)
    failed = table[table["release"] == "0.7.1"]
    assert len(failed) == 1 and failed.iloc[0]["model"] == "-" and "Python 2.1" in failed.iloc[0]["error"]
    shown = versions.display_table(table)
    assert "failed" in set(shown["filter_pmap / pmap it/s"])
    summary, markdown = versions.summarize(table, matrix.environments, bench=TINY, rounds=1, host_devices=8)
    assert summary["releases_failed"].keys() == {"0.7.1"}
    assert "Environments that failed" in markdown and "Not answered in this run" in markdown


def _synthetic_matrix(
    extra_s: dict[str, float], jax_of: dict[str, str], repeats: int = 8
) -> versions.VersionMatrix:
    """filter_pmap costs ``extra_s`` more per call than jax.pmap (1 ms), with a little jitter."""
    rng = np.random.default_rng(0)
    rows = []
    for release, extra in extra_s.items():
        for model in versions.MODELS:
            for repeat in range(repeats):
                base = 1e-3 * (1 + 0.05 * rng.standard_normal())
                for variant, wall in (
                    ("pmap_params", base),
                    ("filter_pmap", base + extra),
                    ("pmap_cached", 0.9 * base),
                ):
                    rows.append(
                        {
                            "release": release,
                            "equinox": release,
                            "jax": jax_of[release],
                            "python": "3.10",
                            "round": 0,
                            "model": model,
                            "variant": variant,
                            "repeat": repeat,
                            "position": 0,
                            "calls": 10,
                            "wall_s_per_call": wall,
                            "cpu_s_per_call": wall,
                            "it_per_s": 1 / wall,
                            "dispatch_s_per_call": wall / 2,
                        }
                    )
    envs = pd.DataFrame(
        [
            {
                "release": r,
                "python": "3.10",
                "jax": jax_of[r],
                "jaxlib": jax_of[r],
                "numpy": "1.26.4",
                "environment": "cached",
                "build_s": 0.0,
                "bench_wall_s": 1.0,
                "rounds_run": 1,
                "status": "ok",
                "error": "",
            }
            for r in extra_s
        ]
    )
    return versions.VersionMatrix(timings=pd.DataFrame(rows), environments=envs, documents={})


def test_tabulate_and_summary_answer_the_question():
    jax_of = {"0.7.1": "0.4.13", "0.9.2": "0.4.13", "0.10.2": "0.4.13", "0.13.8": "0.12.0.1"}
    matrix = _synthetic_matrix({"0.7.1": 10e-3, "0.9.2": 11e-3, "0.10.2": 6e-3, "0.13.8": 4e-3}, jax_of)
    table = versions.tabulate(matrix)
    row = table[(table["release"] == "0.9.2") & (table["model"] == "mlp")].iloc[0]
    assert row["extra_ms_median"] == pytest.approx(11.0, abs=1e-6)  # per-pair difference is exact here
    assert row["extra_cpu_ms_median"] == pytest.approx(11.0, abs=1e-6)
    assert row["filter_pmap_ratio_median"] == pytest.approx(1 / 12, rel=0.1)
    assert row["pmap_cached_ratio_median"] == pytest.approx(1 / 0.9, rel=1e-6)
    summary, markdown = versions.summarize(
        table, matrix.environments, bench=versions.BenchConfig(), rounds=1, host_devices=8
    )
    verdict = summary["verdict"]
    assert verdict["before"] == "0.9.2" and verdict["after"] == "0.10.2" and verdict["answer"] == "yes"
    change = summary["fixed_jax_comparisons"]["mlp: 0.9.2 -> 0.10.2"]
    assert change["extra_cpu_ms"]["cut_fraction"] == pytest.approx(5 / 11)
    assert change["extra_wall_ms"]["cut_fraction"] == pytest.approx(5 / 11)
    answer = markdown.split("<details>")[0]
    assert "- **Yes.** Equinox 0.9.2 -> 0.10.2" in answer and "Today's release (0.13.8" in answer
    assert "cannot be reproduced" in markdown

    fig, data = versions.plot_overhead_vs_release(table)
    assert list(data["release"].unique()) == ["0.7.1", "0.9.2", "0.10.2", "0.13.8"]
    # the judged measure and the it/s ratio are drawn; extra wall ms stays in the table
    assert {"extra_cpu_ms_median", "filter_pmap_ratio_q75", "jax"} <= set(data.columns)
    assert len(fig.axes) == 2 and "extra_ms_median" not in data
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_no_change_is_not_called_help():
    jax_of = {"0.9.2": "0.4.13", "0.10.2": "0.4.13"}
    table = versions.tabulate(_synthetic_matrix({"0.9.2": 5e-3, "0.10.2": 5e-3}, jax_of))
    summary, markdown = versions.summarize(
        table, pd.DataFrame(columns=["status"]), bench=versions.BenchConfig(), rounds=1, host_devices=8
    )
    assert summary["verdict"]["answer"] == "no measurable change"


def test_notebook_source_is_clean():
    assert_clean_source("03_equinox_versions")


@pytest.mark.notebook
def test_notebook_runs_on_the_current_release_only(tmp_path):
    """Tiny sizes restricted to today's release: no old environment is built."""
    import json

    run_notebook(
        "03_equinox_versions",
        tmp_path,
        releases=[CURRENT],
        rounds=1,
        repeats=2,
        number=2,
        warmup=1,
        runahead_releases=[CURRENT],
        runahead_repeats=2,
        runahead_number=2,
    )
    summary = json.loads((tmp_path / "results" / "cpu" / "versions" / "summary.json").read_text())
    assert summary["releases_measured"] == [CURRENT] and summary["releases_failed"] == {}
    assert (tmp_path / "figures" / "cpu" / "versions_filter_pmap_overhead_vs_release.png").exists()
    environments = pd.read_csv(tmp_path / "results" / "cpu" / "versions" / "environments.csv")
    assert environments["environment"].tolist() == ["project .venv"]  # nothing was built
    # The runs-ahead matrix ran in the same environment and judged both variants of today's release.
    runahead = summary["filter_jit_runahead"]
    assert {row["variant"] for row in runahead["table"]} == {"jax.jit", "eqx.filter_jit"}
    assert all(row["release"] == CURRENT for row in runahead["table"])
    assert runahead["release_that_waits"] is None  # one release cannot name a change
    assert (tmp_path / "figures" / "cpu" / "versions_filter_jit_runahead_vs_release.png").exists()
