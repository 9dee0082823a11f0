"""The study on a lent accelerator (issue 46): tools/device/run.sh, tried on this CPU first.

The dry run is the TPU run with the backend changed: the TPU image's stand-in (Python 3.11, its
JAX 0.10.2, what the TPU's own index installs; tools/make_alt_env.sh image-tpu), the carried
wheels (tools/device/fetch_wheels.sh), every Internet socket refused as on that machine (the
shim of tests/test_inprocess.py), papermill's in-process engine, every measurement in fresh
processes, the TPU's presets at quick sizes. It must publish what a TPU run publishes, with its
provenance, and never claim a device number. Then what comes back goes in through unpack.sh,
which refuses anything that is not a clean device run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from hashlib import sha256
from pathlib import Path

import pandas as pd
import pytest

from jaxperf.paths import PROJECT_ROOT

RUN = PROJECT_ROOT / "tools" / "device" / "run.sh"
UNPACK = PROJECT_ROOT / "tools" / "device" / "unpack.sh"
MANIFEST = PROJECT_ROOT / "tools" / "device" / "manifest.py"
SHIM = PROJECT_ROOT / "tests" / "fixtures" / "nosockets" / "nosockets.c"


def wheels(backend: str) -> Path:
    """.whl-<backend>/, fetched from PyPI (kept when already there: the device call carries it)."""
    where = PROJECT_ROOT / f".whl-{backend}"
    if not any(where.glob("equinox-*.whl")):
        proc = subprocess.run(
            ["bash", str(PROJECT_ROOT / "tools" / "device" / "fetch_wheels.sh"), "--backend", backend],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            pytest.skip(f"the {backend} wheels could not be fetched (PyPI?): {proc.stderr[-1000:]}")
    return where


def dry(tmp: Path, backend: str, only: str, shim: bool, offline: bool = False) -> Path:
    """run.sh --backend BACKEND --dry-run --only ONLY into ``tmp``; ``shim``: with no Internet socket;
    ``offline``: pip reaches no index (PIP_NO_INDEX), as on the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXPERF_", "JAX_", "XLA_", "PIP_"))}
    if offline:
        env["PIP_NO_INDEX"] = "1"
    if shim:
        if shutil.which("gcc") is None:
            pytest.skip("gcc is needed to build the socket-refusing shim")
        lib = tmp / "nosockets.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(SHIM), "-ldl"], check=True)
        env["LD_PRELOAD"] = str(lib)
    subprocess.run(["python3", str(MANIFEST), "write"], capture_output=True)  # a clean tree's commit
    env.update(TMPDIR=str(tmp), OUT=str(tmp / "out"), PYTHONPATH="")
    proc = subprocess.run(
        ["bash", str(RUN), "--backend", backend, "--dry-run", "--only", only],
        capture_output=True,
        text=True,
        env=env,
        timeout=1500,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return tmp / "out"


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, tpu_image_python) -> Path:
    """The TPU run of notebooks 01, 02, 10 and 11, dry, with no socket, in the image's stand-in."""
    wheels("tpu")
    return dry(tmp_path_factory.mktemp("device"), "tpu", "01,02,10,11", shim=True)


def test_the_gpu_run_s_dry_run_ends_ok(tmp_path, alt_python):
    """The GPU's run (no GPU has been lent yet): notebook 02 in the GPU image's stand-in."""
    wheels("gpu")
    out = dry(tmp_path, "gpu", "02", shim=False)
    log = (out / "run.log").read_text()
    assert "python 3.12" in log and "jax 0.11.2" in log
    with tarfile.open(out / "jaxperf_gpu_results.tar.gz") as tar:
        assert "results/cpu/02_pallas_loops.ipynb" in tar.getnames()
        # the dry run lowered every kernel the GPU preset plans for CUDA, a refusal a row
        lowered = json.loads(tar.extractfile("results/cpu/cli/gpu_lowering.json").read())
    assert lowered and {row["jax"] for row in lowered} == {"0.11.2"}
    refused = [row for row in lowered if row["lowered"] != "ok"]
    assert refused and all(
        row["variant"].startswith("fori u=") and row["variant"] != "fori u=1" for row in refused
    )


def test_notebook_11_runs_offline_in_the_gpu_image_and_says_flax_s_suite_was_not_run(tmp_path, alt_python):
    """The GPU image has no network and its Flax's sources are not carried: notebook 11 ends ok,
    with a row that says so where Flax's benchmark would be."""
    wheels("gpu")
    out = dry(tmp_path, "gpu", "11", shim=False, offline=True)
    log = (out / "run.log").read_text()
    assert "machine: Flax's sources (notebook 11): not carried" in log
    with tarfile.open(out / "jaxperf_gpu_results.tar.gz") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    table = pd.read_csv(tmp_path / "back" / "results" / "cpu" / "nnx" / "flax_benchmark.csv", comment="#")
    assert "Flax's suite not run: its sources are not carried" in set(table["source"])
    assert (tmp_path / "back" / "results" / "cpu" / "11_flax_nnx.ipynb").is_file()  # published: it ended ok
    assert "11_flax_nnx                      ok" in log


def test_the_dry_run_executes_the_notebooks_in_process_without_sockets(dry_run):
    log = (dry_run / "run.log").read_text()
    assert "python 3.11" in log and "jax 0.10.2" in log
    assert "Errno 97" in log and "--engine inprocess" in log  # a kernel could not have started
    assert "equinox-0.13.8" in log.split("pinned, first on PYTHONPATH:")[1].splitlines()[0]  # carried, pinned
    assert "papermill" in log.split("carried and installed:")[1].splitlines()[0]  # the image lacks it
    with tarfile.open(dry_run / "jaxperf_tpu_results.tar.gz") as tar:
        names = tar.getnames()
    assert {n.split("/")[1] for n in names if "/" in n} == {"cpu"}  # a dry run names no device
    for nb in ("01_filter_pmap_dispatch", "02_pallas_loops", "10_your_step", "11_flax_nnx"):
        assert f"results/cpu/{nb}.ipynb" in names


def test_the_dry_run_records_say_where_and_how_they_were_made(dry_run, tmp_path):
    with tarfile.open(dry_run / "jaxperf_tpu_results.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    for study in ("dispatch", "loops"):
        summary = json.loads((tmp_path / "results" / "cpu" / study / "summary.json").read_text())
        prov = summary["provenance"]
        assert prov["backend"] == "cpu" and prov["python"].startswith("3.11")
        assert prov["packages"]["jax"] == "0.10.2" and "equinox" in prov["packages"]
        assert prov["versus_lock"]["jax"].startswith("ran 0.10.2, locked ")
        assert prov["parameters"]["quick"] is True
    executed = json.loads((tmp_path / "results" / "cpu" / "01_filter_pmap_dispatch.ipynb").read_text())
    outputs = [o for c in executed["cells"] for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # figures inline, in-process too


def test_unpack_refuses_a_dry_run(dry_run, tmp_path):
    proc = subprocess.run(
        ["bash", str(UNPACK), str(dry_run)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAXPERF_UNPACK_ROOT": str(tmp_path)},
    )
    assert proc.returncode == 1 and "refusing" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_the_tools_run_on_the_device_in_the_run_s_environment(tmp_path, tpu_image_python):
    """--exec: a reader's command after the notebooks (here none), with what run.sh installed on
    the path; what it writes under $JAXPERF_CLI_OUT comes back as results/<backend>/cli/."""
    wheels("tpu")
    cmd = 'python -c "import equinox, papermill, jaxperf" && echo made >"$JAXPERF_CLI_OUT/made.txt"'
    cmd += ' && echo \'{"verdict": "pays"}\' >"$JAXPERF_CLI_OUT/made.json"'
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXPERF_", "JAX_", "XLA_"))}
    env.update(TMPDIR=str(tmp_path), OUT=str(tmp_path / "out"), PYTHONPATH="")
    env["PATH"] = f"{tpu_image_python.parent}:{env['PATH']}"  # `python` is the image's, as there
    proc = subprocess.run(
        ["bash", str(RUN), "--backend", "tpu", "--dry-run", "--only", "none", "--exec", cmd],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    with tarfile.open(tmp_path / "out" / "jaxperf_tpu_results.tar.gz") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    cli = tmp_path / "back" / "results" / "cpu" / "cli"
    assert sorted(p.name for p in cli.iterdir()) == ["made.json", "made.txt", "made.txt.provenance.json"]
    made = json.loads((cli / "made.json").read_text())  # each output names the run's own commit
    assert made["verdict"] == "pays" and made["provenance"]["git"]["commit_source"] == "run"
    assert made["provenance"]["command"] == cmd
    side = json.loads((cli / "made.txt.provenance.json").read_text())
    assert side["git"] == made["provenance"]["git"] and side["sha256"] == sha256(b"made\n").hexdigest()


def _device_tarball(where: Path, backend: str, studies: dict[str, dict], extra: tuple[str, ...] = ()) -> Path:
    """A tarball shaped as run.sh packs one: per study a summary.json with the given provenance."""
    stage = where / "stage"
    for study, prov in studies.items():
        folder = stage / "results" / backend / study
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"backend": backend, "provenance": prov}))
        (folder / "timings.csv").write_text("x\n1\n")
        (stage / "figures" / backend).mkdir(parents=True, exist_ok=True)
        (stage / "figures" / backend / f"{study}_fig.png").write_bytes(b"png")
    for name in extra:
        (stage / name).parent.mkdir(parents=True, exist_ok=True)
        (stage / name).write_text("x")
    back = where / "back"
    back.mkdir()
    with tarfile.open(back / f"jaxperf_{backend}_results.tar.gz", "w:gz") as tar:
        for top in ("results", "figures", *{n.split("/")[0] for n in extra}):
            if (stage / top).exists():
                tar.add(stage / top, arcname=top)
    (back / "run.log").write_text("log\n")
    return back


CLEAN = {"git": {"commit": "a" * 40, "dirty": False}}


def unpack(back: Path, root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAXPERF_UNPACK_ROOT": str(root)}
    return subprocess.run(["bash", str(UNPACK), str(back)], capture_output=True, text=True, env=env)


def test_unpack_merges_a_run_of_some_notebooks_into_the_others(tmp_path):
    root = tmp_path / "root"
    (root / "results" / "tpu" / "loops").mkdir(parents=True)
    (root / "results" / "tpu" / "loops" / "summary.json").write_text("{}")
    (root / "results" / "tpu" / "dispatch").mkdir(parents=True)
    (root / "results" / "tpu" / "dispatch" / "old.csv").write_text("old")
    (root / "figures" / "tpu").mkdir(parents=True)
    (root / "figures" / "tpu" / "dispatch_old.png").write_bytes(b"old")
    back = _device_tarball(tmp_path, "tpu", {"dispatch": CLEAN})
    proc = unpack(back, root)
    assert proc.returncode == 0, proc.stderr
    assert (root / "results/tpu/loops/summary.json").read_text() == "{}"  # not in this run: kept
    assert not (root / "results/tpu/dispatch/old.csv").exists()  # this run's study replaced whole
    assert (root / "results/tpu/dispatch/timings.csv").exists()
    assert sorted(p.name for p in (root / "figures/tpu").iterdir()) == ["dispatch_fig.png"]
    assert [p.read_text() for p in (root / "results/tpu/logs").iterdir()] == ["log\n"]


def _record(folder: Path, name: str, rows: list[dict], prov: dict) -> None:
    """A record as jaxperf_study.records writes it (CSV + sidecar)."""
    from jaxperf_study import records

    records.write_records(pd.DataFrame(rows), folder / name, prov)


def test_unpack_merges_the_parts_and_reruns_of_one_commit_and_a_new_commit_replaces_them(tmp_path):
    """A study's parts and reruns, each a device command of the same clean commit, are told
    together: every record gains its run, processes stay apart across runs, summary.json lists
    the runs; a command of another commit replaces them (the code changed)."""
    from jaxperf_study import records

    root = tmp_path / "root"
    calls = [("noop", "a"), ("train", "a"), ("noop", "a"), ("noop", "b")]
    for i, (part, commit) in enumerate(calls):
        prov = {"git": {"commit": commit * 40, "dirty": False}, "timestamp_utc": f"t{i}",
                "parameters": {"part": part, "processes": 2}}  # fmt: skip
        back = _device_tarball(tmp_path / f"call{i}", "tpu", {"dispatch": prov})
        stage = tmp_path / f"call{i}" / "stage"
        folder = stage / "results" / "tpu" / "dispatch"
        rows = [{"cell": part, "process": p, "value": 10 * i + p} for p in (0, 1)]
        _record(folder, "timings", rows, {"call": i})
        (back / "jaxperf_tpu_results.tar.gz").unlink()
        with tarfile.open(back / "jaxperf_tpu_results.tar.gz", "w:gz") as tar:
            tar.add(stage / "results", arcname="results")
            tar.add(stage / "figures", arcname="figures")
        (back / "run.log").write_text(f"run.sh: 2026-12-06T10:00:0{i}Z backend=tpu\n")
        proc = unpack(back, root)
        assert proc.returncode == 0, proc.stderr
        merged, _ = records.read_records(root / "results/tpu/dispatch/timings.csv")
        summary = json.loads((root / "results/tpu/dispatch/summary.json").read_text())
        if i == 2:  # noop, train, noop again: three runs, six processes
            assert "dispatch merged" in proc.stdout
            assert list(merged["run"]) == [0, 0, 1, 1, 2, 2]
            assert list(merged["process"]) == [0, 1, 2, 3, 4, 5]
            assert list(merged["cell"]) == ["noop", "noop", "train", "train", "noop", "noop"]
            assert [r["part"] for r in summary["provenance"]["runs"]] == ["noop", "train", "noop"]
            # each run names the commit it ran from, as the run wrote it
            assert [(r["commit"], r["dirty"], r["commit_source"]) for r in summary["provenance"]["runs"]] == [
                ("a" * 40, False, "run")
            ] * 3
            assert summary["provenance"]["parameters"]["part"] == ""
    assert "dispatch replaced" in proc.stdout  # commit b: the earlier runs no longer hold
    assert list(merged["value"]) == [30, 31] and len(summary["provenance"]["runs"]) == 1
    assert len(list((root / "results/tpu/logs").iterdir())) == 4  # one log per command, none replaced


def _stamped(git: dict | None) -> str:
    record = {"verdict": "pays"}
    return json.dumps({**record, "provenance": {"git": git}} if git else record)


@pytest.mark.parametrize(
    ("files", "laid"),
    [
        ({"diagnose.json": _stamped({"commit": "b" * 40, "dirty": False})}, True),
        ({"diagnose.json": _stamped({"commit": "b" * 40, "dirty": True})}, False),
        ({"diagnose.json": _stamped(None)}, False),  # no commit of its own
        ({"a.md": "# x\n", "a.md.provenance.json": json.dumps(
            {"sha256": sha256(b"# x\n").hexdigest(), "git": {"commit": "b" * 40, "dirty": False}})}, True),
        ({"a.md": "# changed\n", "a.md.provenance.json": json.dumps(
            {"sha256": sha256(b"# x\n").hexdigest(), "git": {"commit": "b" * 40, "dirty": False}})}, False),
    ],
    ids=["clean", "dirty", "no-commit", "sidecar", "sidecar-of-other-content"],
)  # fmt: skip
def test_unpack_lays_over_the_tools_outputs_that_each_name_a_clean_commit(tmp_path, files, laid):
    """No shared tree.json speaks for every tool output: each carries its own commit (in its
    provenance, or in a sidecar whose SHA-256 names its content), and is refused without one."""
    names = tuple(f"results/tpu/cli/{n}" for n in files)
    back = _device_tarball(tmp_path, "tpu", {}, names)
    stage = tmp_path / "stage"
    for name, text in files.items():
        (stage / "results" / "tpu" / "cli" / name).write_text(text)
    with tarfile.open(back / "jaxperf_tpu_results.tar.gz", "w:gz") as tar:
        tar.add(stage / "results", arcname="results")
    (tmp_path / "root" / "results" / "tpu" / "cli").mkdir(parents=True)
    (tmp_path / "root" / "results" / "tpu" / "cli" / "older.json").write_text("{}")
    proc = unpack(back, tmp_path / "root")
    cli = tmp_path / "root" / "results" / "tpu" / "cli"
    if laid:
        assert proc.returncode == 0, proc.stderr
        assert sorted(p.name for p in cli.iterdir()) == sorted(["older.json", *files])  # the others stay
    else:
        assert proc.returncode == 1 and "each must carry the clean commit" in proc.stderr, proc.stderr
        assert [p.name for p in cli.iterdir()] == ["older.json"]


@pytest.mark.parametrize(
    ("studies", "extra", "why"),
    [
        ({"dispatch": {"git": {"commit": "a" * 40, "dirty": True}}}, (), "clean commit"),
        ({"dispatch": {"git": {"commit": "unknown", "dirty": None}}}, (), "clean commit"),
        ({"dispatch": CLEAN}, ("results/cpu/x.csv",), "holds more than"),
        ({"dispatch": CLEAN}, ("tools/evil.sh",), "holds more than"),
    ],
    ids=["dirty", "unknown-commit", "another-backend", "outside-results"],
)
def test_unpack_refuses_what_is_not_a_clean_device_run(tmp_path, studies, extra, why):
    root = tmp_path / "root"
    proc = unpack(_device_tarball(tmp_path, "tpu", studies, extra), root)
    assert proc.returncode == 1 and why in proc.stderr, proc.stderr
    assert not root.exists()


def test_unpack_refuses_a_long_foreign_listing_with_exit_1_even_if_its_reader_quits(tmp_path):
    """The refusal prints the listing's head; a head that quits unread must not turn exit 1 into
    SIGPIPE's 141 (a here-string, not a pipe)."""
    many = tuple(f"tools/{i:05d}-{'x' * 60}.txt" for i in range(1200))  # more than a 64 KiB pipe
    back = _device_tarball(tmp_path, "tpu", {"dispatch": CLEAN}, many)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "head").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "head").chmod(0o755)
    env = {
        **os.environ,
        "JAXPERF_UNPACK_ROOT": str(tmp_path / "root"),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    proc = subprocess.run(["bash", str(UNPACK), str(back)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1


def test_the_manifest_says_whether_the_copy_is_the_commit(tmp_path):
    """A device's copy has no .git: manifest.py check finds it clean when every tracked file hashes
    as committed, dirty once one differs or is gone; write refuses a tree that is not HEAD."""
    import sys

    sys.path.insert(0, str(MANIFEST.parent))
    import manifest

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("print(1)\n")
    (repo / "results").mkdir()
    (repo / "results" / "r.csv").write_text("x\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    (repo / "a.py").write_text("print(2)\n")
    assert manifest.write(repo) == 1 and not (repo / ".device").exists()  # not HEAD: refused
    subprocess.run([*git, "checkout", "-q", "a.py"], check=True)
    assert manifest.write(repo) == 0
    shutil.rmtree(repo / ".git")
    (repo / "results" / "r.csv").write_text("a run writes here\n")  # results/ is not code
    commit, dirty, differ = manifest.check(repo)
    assert len(commit) == 40 and not dirty and differ == []
    (repo / "a.py").write_text("print(3)\n")
    assert manifest.check(repo)[1:] == (True, ["a.py"])
    (repo / "a.py").unlink()
    assert manifest.check(repo)[1:] == (True, ["a.py"])


def test_run_refuses_a_time_that_is_not_whole_seconds_and_names_it(tmp_path):
    env = {**os.environ, "JAXPERF_DEVICE_TOTAL_S": "9m"}
    proc = subprocess.run(
        ["bash", str(RUN), "--backend", "tpu", "--dry-run", "--only", "none", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2 and "JAXPERF_DEVICE_TOTAL_S='9m' is not allowed: whole seconds" in proc.stderr


def test_a_rerun_after_a_declared_refactor_merges_and_another_python_refuses_rather_than_replace(
    tmp_path, monkeypatch
):
    """The second TPU run of notebook 01's noop part (aa527ed) measured the code of the first
    (429a5c3): between them only declared refactors changed it (NNX summary keys, papermill's
    parameters as JSON gives them). Unpacked under Python 3.11, whose ast.unparse writes other
    text than the 3.12 that pinned them, it read as changed code and replaced the first run. Now
    the pins' Python reads them, and any other refuses, leaving the committed runs as they were."""
    import sys

    sys.path.insert(0, str(PROJECT_ROOT / "tools" / "device"))
    sys.path.insert(0, str(PROJECT_ROOT / "tools"))
    import merge
    from runall import moves

    git = subprocess.run(["git", "cat-file", "-e", "429a5c3^{commit}"], cwd=PROJECT_ROOT, capture_output=True)
    if git.returncode != 0:
        pytest.skip("needs the git history")
    old = subprocess.run(
        ["git", "show", "5aeaea3^:results/tpu/dispatch/summary.json"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    ).stdout
    committed, incoming = tmp_path / "committed", tmp_path / "incoming"
    for folder, commit in ((committed, None), (incoming, "aa527ed181966f0c9899bd6829a1bd7f5f816d26")):
        folder.mkdir()
        summary = json.loads(old)
        if commit:
            summary["provenance"]["git"]["commit"] = commit
        (folder / "summary.json").write_text(json.dumps(summary))
    assert json.loads(old)["provenance"]["git"]["commit"].startswith("429a5c3")
    # the tree as it was when the rerun was unpacked (the code has changed since, for real)
    tree = tmp_path / "tree"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(tree), "aa527ed"],
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
    )
    try:
        monkeypatch.setattr(merge, "PROJECT", tree)
        monkeypatch.setattr(moves, "REFACTORS", tree / "tools" / "runall" / "refactors.json")
        assert merge.same_code(committed, incoming)
        ledger = tmp_path / "refactors.json"
        other = "3.11" if moves.python_now() != "3.11" else "3.12"
        ledger.write_text(json.dumps({**json.loads(moves.REFACTORS.read_text()), "python": other}))
        monkeypatch.setattr(moves, "REFACTORS", ledger)
        with pytest.raises(SystemExit, match=f"Python {other} wrote .* this is Python {moves.python_now()}"):
            merge.merge(committed, incoming)
        assert json.loads((committed / "summary.json").read_text()) == json.loads(old)  # nothing replaced
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(tree)], cwd=PROJECT_ROOT, capture_output=True
        )


# ------------------------------------------------------------------ the GPU image as it is


def _fake_python(where: Path, sees: str) -> Path:
    """A Python whose JAX "opens" ``sees`` when run.sh asks which backend it opens (that question
    only: everything else runs in the project's own Python, on this CPU)."""
    where.mkdir(parents=True, exist_ok=True)
    fake = where / "python3"
    fake.write_text(
        f'#!/bin/sh\ncase "$*" in *default_backend*) echo {sees}; exit 0 ;; esac\nexec "{sys.executable}" "$@"\n'
    )
    fake.chmod(0o755)
    return fake


def _gpu_call(
    tmp: Path, env_extra: dict[str, str], path_first: Path | None = None
) -> subprocess.CompletedProcess:
    """run.sh --backend gpu --only none, as on the machine (not a dry run), no notebook."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAXPERF_", "JAX_", "XLA_"))}
    env.update(TMPDIR=str(tmp), PYTHONPATH="", **env_extra)
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env['PATH']}"
    return subprocess.run(
        ["bash", str(RUN), "--backend", "gpu", "--only", "none", "--out", str(tmp / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("image", "on_path", "chosen", "why"),
    [
        ("gpu", None, "image", "the image's Python: its JAX sees the GPU"),
        (None, "gpu", "path", "python3 on PATH: its JAX sees the GPU"),
        ("cpu", "gpu", "path", "python3 on PATH: its JAX sees the GPU"),
        ("cpu", "cpu", None, "no Python to run"),
    ],
    ids=["image", "no-image", "image-sees-no-gpu", "none-sees-a-gpu"],
)
def test_run_uses_the_python_whose_jax_sees_the_gpu_and_says_why(tmp_path, image, on_path, chosen, why):
    """The image's /opt/torch/.venv/bin/python3 first, then python3 on PATH; on a GPU the first
    whose JAX opens the GPU; none: nothing runs. The memory policy is set and said."""
    fakes = {
        "image": _fake_python(tmp_path / "image", image) if image else tmp_path / "absent" / "python3",
        "path": _fake_python(tmp_path / "path", on_path) if on_path else None,
    }
    proc = _gpu_call(
        tmp_path, {"JAXPERF_IMAGE_PYTHON": str(fakes["image"])}, fakes["path"] and fakes["path"].parent
    )
    log = proc.stdout + proc.stderr
    if chosen is None:
        assert proc.returncode == 3 and why in log, log[-3000:]
        return
    assert proc.returncode == 0, log[-3000:]
    assert f"run.sh: chose {fakes[chosen]} ({why})" in log
    if image == "cpu":
        assert f"{fakes['image']}: its JAX opens 'cpu', not the GPU" in log
    assert "GPU memory: XLA_PYTHON_CLIENT_PREALLOCATE=false" in log
    machine = json.loads((tmp_path / "out" / "machine.json").read_text())
    assert machine["memory_policy"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # what the processes see


def test_a_memory_policy_set_for_the_call_is_kept_and_said(tmp_path):
    fake = _fake_python(tmp_path / "image", "gpu")
    extra = {"JAXPERF_IMAGE_PYTHON": str(fake), "XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
    proc = _gpu_call(tmp_path, {**extra, "XLA_PYTHON_CLIENT_MEM_FRACTION": ".30"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION=.30" in proc.stdout
    machine = json.loads((tmp_path / "out" / "machine.json").read_text())
    assert machine["memory_policy"]["XLA_PYTHON_CLIENT_MEM_FRACTION"] == ".30"


def test_the_pinned_equinox_runs_ahead_of_the_image_s_and_the_versions_that_ran_are_printed(
    tmp_path, alt_python
):
    """The GPU image has an Equinox of its own (the stand-in: 0.13.7); the carried 0.13.8 the study
    is pinned to goes first on PYTHONPATH, and what imports is printed with where it came from.
    The image's JAX is never replaced, and the other carried wheels go only where it lacks them."""
    wheels("gpu")
    image = subprocess.run([str(alt_python), "-c", "import equinox; print(equinox.__version__)"],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})  # fmt: skip
    assert image.stdout.strip() not in ("", "0.13.8"), "the stand-in must hold another Equinox"
    out = dry(tmp_path, "gpu", "none", shim=False)
    log = (out / "run.log").read_text()
    site = tmp_path / "jaxperf_device_site"
    order = log.split("run.sh: PYTHONPATH, in order: ")[1].splitlines()[0].split(";")[0].split(":")
    assert order[0] == str(site / "pinned")
    carried = log.split("run.sh: carried and installed:")[1].splitlines()[0].split()
    if carried:  # only what the image lacks, after the project's own code
        assert order.index(str(site / "carried")) > order.index(str(PROJECT_ROOT / "lib"))
    else:  # the image has every carried package (a stand-in built from the same wheels)
        assert str(site / "carried") not in order
    assert "equinox-0.13.8" in log.split("pinned, first on PYTHONPATH:")[1].splitlines()[0]
    assert f"machine: equinox 0.13.8 ({site / 'pinned' / 'equinox'})" in log
    assert (
        "machine: jax 0.11.2 (" in log
        and str(site) not in log.split("machine: jax 0.11.2 (")[1].splitlines()[0]
    )
    left = log.split("left out, the machine has them:")[1].splitlines()[0]
    assert "jaxtyping (the machine has 0.3.11)" in left  # carried, but the image has one
    machine = json.loads((out / "machine.json").read_text())
    assert machine["versions"]["equinox"]["version"] == "0.13.8" and machine["backend"] == "cpu"


def test_the_machine_print_says_gpu_versions_ptxas_sockets_and_the_clock(tmp_path):
    """What the first GPU call prints and brings back (machine.json), read here with a fake
    nvidia-smi and ptxas; a loopback socket refused as on the TPU (the shim) is said."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(
        '#!/bin/sh\ncase "$*" in *--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,memory.total*)\n'
        '  echo "name, driver_version, clocks.current.sm [MHz], clocks.max.sm [MHz], clocks.current.memory [MHz], memory.total [MiB]"\n'
        '  echo "NVIDIA H200, 580.65.06, 345 MHz, 1980 MHz, 2619 MHz, 143771 MiB"; exit 0 ;; esac\n'
        'echo "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |"\n'
    )
    (bin_dir / "ptxas").write_text(
        "#!/bin/sh\necho 'ptxas: NVIDIA (R) Ptx optimizing assembler'\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n"
    )
    for tool in ("nvidia-smi", "ptxas"):
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    if shutil.which("gcc"):
        lib = tmp_path / "nosockets.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(SHIM), "-ldl"], check=True)
        env["LD_PRELOAD"] = str(lib)
    out = tmp_path / "machine.json"
    proc = subprocess.run(
        [sys.executable, str(RUN.parent / "machine.py"), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stdout
    assert "machine: nvidia-smi: NVIDIA H200, 580.65.06, 345 MHz, 1980 MHz, 2619 MHz, 143771 MiB" in said
    assert "machine:   | NVIDIA-SMI 580.65.06   Driver Version: 580.65.06" in said
    for name in ("jax", "jaxlib", "equinox", "flax", "optax", "numpy"):
        assert f"machine: {name} " in said
    assert (
        f"machine: ptxas on PATH: {bin_dir / 'ptxas'} (Cuda compilation tools, release 13.0, V13.0.88)"
        in said
    )
    assert (
        "machine: thread CPU clock step: " in said
        and "GPU memory: XLA_PYTHON_CLIENT_PREALLOCATE=false" in said
    )
    assert "machine: JAX backend cpu" in said
    found = json.loads(out.read_text())
    assert found["cpu_tick_ms"] > 0 and found["ptxas"]["on_path"] == str(bin_dir / "ptxas")
    if "LD_PRELOAD" in env:
        assert (
            found["loopback_tcp"].startswith("refused: [Errno 97]") and "loopback TCP socket: refused" in said
        )
    else:
        assert found["loopback_tcp"] == "binds"
