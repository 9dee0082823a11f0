"""paths: which output root wins, and that what a notebook prints names no machine path."""

from __future__ import annotations

import pytest

from jaxperf import paths
from jaxperf.paths import ENV_VAR, PROJECT_ROOT, SCRATCH_ROOT


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_an_interactive_run_writes_under_the_ignored_scratch_root(no_env):
    assert paths.output_root() == SCRATCH_ROOT
    assert paths.output_root("") == SCRATCH_ROOT
    assert SCRATCH_ROOT.parent == PROJECT_ROOT
    ignored = (PROJECT_ROOT / ".gitignore").read_text().splitlines()
    assert ".scratch/" in ignored


def test_the_environment_variable_wins_over_scratch(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert paths.output_root("") == tmp_path.resolve()
    assert paths.output_root(None) == tmp_path.resolve()


def test_an_explicit_root_wins_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert paths.output_root(tmp_path / "mine") == (tmp_path / "mine").resolve()
    assert paths.output_root(str(tmp_path / "mine")) == (tmp_path / "mine").resolve()


@pytest.mark.parametrize("name", [".", "project", " . "])
def test_the_committed_root_only_when_named(monkeypatch, name, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert paths.output_root(name) == PROJECT_ROOT


def test_a_relative_root_hangs_off_the_project_not_the_cwd(no_env, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert paths.output_root("elsewhere/run1") == PROJECT_ROOT / "elsewhere" / "run1"


@pytest.mark.parametrize("bad", [3, 1.5, ["a"], {"a": 1}, True, "a\0b"])
def test_a_root_that_is_not_a_path_is_a_clear_error(no_env, bad):
    with pytest.raises(ValueError, match=r"output_root=.* is not allowed: expected .*folder path"):
        paths.output_root(bad)


def test_an_uncreatable_root_names_the_parameter(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(ValueError, match="output_root="):
        paths.results_dir("cpu", "demo", blocker)


def test_results_and_figures_dirs_are_made_under_the_root(tmp_path):
    assert paths.results_dir("cpu", "demo", tmp_path) == tmp_path / "results" / "cpu" / "demo"
    assert paths.figures_dir("cpu", tmp_path) == tmp_path / "figures" / "cpu"
    assert (tmp_path / "results" / "cpu" / "demo").is_dir()


def test_relative_names_no_machine_path(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert paths.relative(SCRATCH_ROOT / "results" / "cpu" / "x.csv") == ".scratch/results/cpu/x.csv"
    assert paths.relative(PROJECT_ROOT) == "."
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "stage"))
    # Under run_all.sh's staging root: where the file lands once published.
    assert paths.relative(tmp_path / "stage" / "figures" / "cpu" / "f.png") == "figures/cpu/f.png"
    assert paths.relative("/somewhere/else.txt") == "/somewhere/else.txt"


def test_scrub_takes_machine_folders_out_of_a_text(monkeypatch, tmp_path):
    import sysconfig

    site = sysconfig.get_paths()["purelib"]
    stdlib = sysconfig.get_paths()["stdlib"]
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "stage"))
    text = (
        f"{site}/equinox/_module.py:412(__getattribute__) | {stdlib}/functools.py:1 | "
        f"{PROJECT_ROOT}/lib/jaxperf/timing.py:41 | {tmp_path}/stage/results/cpu/x.csv"
    )
    assert paths.scrub(text) == (
        "equinox/_module.py:412(__getattribute__) | <stdlib>/functools.py:1 | "
        "lib/jaxperf/timing.py:41 | results/cpu/x.csv"
    )
