"""Reliability of ./run_all.sh (issue 10), against a tiny fake notebook set.

``JAXPERF_NOTEBOOKS_DIR`` (a test hook) points run_all.sh at trivial notebooks
in a temporary folder, so no study runs. Every case asserts the exit code, the
message, and that ``git status`` of the committed results is unchanged; each
also records whether it lost or mixed data, left a stale result, or failed
late, and the module prints the tally as a table at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest

from jaxperf.paths import PROJECT_ROOT

RUN_ALL = str(PROJECT_ROOT / "run_all.sh")
STUDIES = {"01": "alpha", "02": "beta", "03": "gamma"}
TALLY: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # tried, lost/mixed, stale, late

BODY = """\
import os, time
from pathlib import Path
gen = os.environ.get("JAXPERF_TEST_GEN", "new")
pids = os.environ.get("JAXPERF_TEST_PIDS")
if pids:
    Path(pids, f"{os.getpid()}").write_text("kernel")
root = Path(os.environ["JAXPERF_OUTPUT_ROOT"])
res = root / "results" / backend / "STUDY"
res.mkdir(parents=True, exist_ok=True)
(res / "a.txt").write_text(gen)
time.sleep(float(os.environ.get("JAXPERF_TEST_SLEEP", "0")))
(res / "b.txt").write_text(gen)
fig = root / "figures" / backend
fig.mkdir(parents=True, exist_ok=True)
(fig / "STUDY_fig.png").write_text(gen)
if os.environ.get("JAXPERF_TEST_KILL_KERNEL") == "STUDY":
    os.kill(os.getpid(), 9)
print(f"GEN={gen}")
"""


def fake_notebooks(folder: Path) -> Path:
    """Three trivial notebooks that write results/ and figures/ like a study."""
    folder.mkdir(parents=True, exist_ok=True)
    for num, study in STUDIES.items():
        nb = nbformat.v4.new_notebook()
        params = nbformat.v4.new_code_cell(
            'backend = "auto"\nquick = False\noutput_root = ""\nhost_devices = 8\nrepeats = 3'
            + ("\nunroll = 2" if num == "02" else "")
        )
        params.metadata["tags"] = ["parameters"]
        nb.cells = [params, nbformat.v4.new_code_cell(BODY.replace("STUDY", study))]
        nb.metadata["kernelspec"] = {"name": "jaxperf", "display_name": "jaxperf", "language": "python"}
        nbformat.write(nb, folder / f"{num}_{study}.ipynb")
    return folder


def study_files(study: str, num: str) -> list[str]:
    return [f"results/cpu/{study}/a.txt", f"results/cpu/{study}/b.txt", f"figures/cpu/{study}_fig.png"] + [
        f"results/cpu/{num}_{study}.ipynb"
    ]


def seed_old(root: Path) -> None:
    """A complete 'old' published set for alpha and beta."""
    for num, study in list(STUDIES.items())[:2]:
        for rel in study_files(study, num):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text('{"GEN=old": 1}' if rel.endswith(".ipynb") else "old")


def generations(root: Path) -> dict[str, set[str]]:
    """Per study, the generations its published files carry ('missing' if absent)."""
    out = {}
    for num, study in list(STUDIES.items())[:2]:
        gens = set()
        for rel in study_files(study, num):
            path = root / rel
            if not path.exists():
                gens.add("missing")
            else:
                text = path.read_text()
                gens.add("new" if ("GEN=new" in text or text == "new") else "old")
        out[study] = gens
    return out


def git_status() -> str:
    cmd = ["git", "status", "--porcelain", "--", "results", "figures"]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=PROJECT_ROOT).stdout


@pytest.fixture(scope="module")
def nbs(tmp_path_factory):
    return fake_notebooks(tmp_path_factory.mktemp("fake_nbs"))


def report_table(request):
    """Fixture body: check the committed results at the end, then print and
    write the tally (``.quick/reliability_table.md``) for every module so far."""
    before = git_status()
    yield
    assert git_status() == before, "the committed results changed"
    lines = [
        "| category | cases | lost or mixed data | stale result left | failed late |",
        "|---|---|---|---|---|",
    ] + [
        f"| {cat} | {t} | {lost} | {stale} | {late} |"
        for cat, (t, lost, stale, late) in sorted(TALLY.items())
    ]
    text = "\n".join(lines)
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter:
        reporter.write_line("\nrun_all.sh reliability (issue 10):\n" + text)
    out = PROJECT_ROOT / ".quick" / "reliability_table.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n")


@pytest.fixture(scope="module", autouse=True)
def table(request):
    yield from report_table(request)


def record(category: str, *, lost: bool = False, stale: bool = False, late: bool = False) -> None:
    row = TALLY[category]
    row[0] += 1
    row[1] += lost
    row[2] += stale
    row[3] += late
    assert not (lost or stale or late), f"{category}: lost={lost} stale={stale} late={late}"


def start(args, nbs, session: bool = False, **env) -> subprocess.Popen:
    """run_all.sh on the fake notebooks (``session``: in a process group of its own)."""
    full_env = {**os.environ, "JAXPERF_NOTEBOOKS_DIR": str(nbs), **{k: str(v) for k, v in env.items()}}
    return subprocess.Popen(
        [RUN_ALL, *args],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=session,
    )


def finish(proc: subprocess.Popen, timeout: float = 90) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def staging_leftovers(root: Path) -> list[str]:
    staging = root / ".staging"
    return sorted(p.name for p in staging.iterdir() if p.name != "run.lock") if staging.is_dir() else []


# ---- bad input: refused before any work or write ------------------------------------------

NEEDS = "is missing its value"
BAD_FLAGS = [
    (["--backend"], NEEDS),
    (["--backend", ""], "--backend '' is not one of auto, cpu, gpu, tpu"),
    (["--backend", "3"], "--backend '3' is not one of"),
    (["--backend", "quantum"], "--backend 'quantum' is not one of"),
    (["--only"], NEEDS),
    (["--only", ""], "--only '' has an empty name"),
    (["--only", ",,"], "has an empty name"),
    (["--only", "99"], "'99' matches no notebook"),
    (["--only", "01,99"], "'99' matches no notebook"),
    (["--only", "01,01"], "names '01' twice"),
    (["--only", "01,01_alpha"], "names notebook 01_alpha twice"),
    (["--output-root"], NEEDS),
    (["--output-root", ""], "--output-root '' is empty"),
    (["--timeout"], NEEDS),
    (["--timeout", ""], "--timeout '' is not a positive integer"),
    (["--timeout", "soon"], "--timeout 'soon' is not a positive integer"),
    (["--timeout", "1.5"], "--timeout '1.5' is not a positive integer"),
    (["--timeout", "0"], "--timeout '0' is not a positive integer"),
    (["--timeout", "-5"], "--timeout '-5' is not a positive integer"),
    (["--timeout", "99999999999"], "out of range"),
    (["--host-devices"], NEEDS),
    (["--host-devices", ""], "--host-devices '' is not a positive integer"),
    (["--host-devices", "eight"], "is not a positive integer"),
    (["--host-devices", "0"], "--host-devices '0' is not a positive integer"),
    (["-p"], NEEDS),
    (["-p", "repeats"], "-p repeats is missing its value: -p repeats VALUE"),
    (["-p", "", "3"], "-p '' is not a parameter name"),
    (["-p", "quick", "True"], "-p quick: use --quick instead"),
    (["-p", "nosuch", "1"], "no selected notebook declares 'nosuch'"),
    (["-p", "repeats", "many"], "-p repeats 'many': expected int"),
    (["-p", "repeats", "1.5"], "-p repeats '1.5': expected int"),
    (["-p", "repeats", "True"], "-p repeats 'True': expected int"),
    (["--python"], NEEDS),
    (["--python", ""], "--python '' is empty"),
    (["--python", "/nonexistent/python"], "is not an executable file"),
    (["--python", "/bin/true"], "does not run as Python"),
    (["--compare-to"], NEEDS),
    (["--compare-to", ""], "--compare-to '' is empty"),
    (["--compare-to", "/nonexistent/results/cpu"], "is neither an output root"),
    (["--allow-partial=1"], "--allow-partial takes no value"),
    (["--quick=yes"], "--quick takes no value"),
    (["--wait=3"], "--wait takes no value"),
    (["--bogus"], "unknown option '--bogus'"),
]


@pytest.mark.parametrize("args,message", BAD_FLAGS, ids=[" ".join(a) or "''" for a, _ in BAD_FLAGS])
def test_bad_flag_is_refused_before_any_work(args, message, nbs, tmp_path):
    root = tmp_path / "never"
    proc = start(["--output-root", str(root), *args], nbs)
    rc, out, err = finish(proc, timeout=30)
    late = root.exists() or "backend=" in out or "setup:" in err
    record("bad option values", late=late)
    assert rc == 2, err
    assert message in err
    assert "Options for a study run" in err


def test_a_rerun_into_the_results_it_is_compared_with_is_refused(nbs, tmp_path):
    root = tmp_path / "committed"
    (root / "results" / "cpu").mkdir(parents=True)
    proc = start(["--output-root", str(root), "--compare-to", str(root / "results" / "cpu")], nbs)
    rc, out, err = finish(proc, timeout=30)
    record("bad option values", late=(root / ".staging").exists() or "backend=" in out)
    assert rc == 2, err
    assert "would overwrite what it is compared with" in err


# ---- output roots that cannot be used -------------------------------------------------------


def _root_cases(tmp: Path) -> list[tuple[list[str], str, str]]:
    afile = tmp / "a_file"
    afile.write_text("x")
    cases = [
        ([RUN_ALL, "--output-root", str(afile)], f"--output-root '{afile}' is a file, not a folder", ""),
        ([RUN_ALL, "--output-root", str(afile / "sub")], "is not writable", str(afile / "sub")),
        ([RUN_ALL, "--output-root", "/proc/self/jaxperf"], "is not writable", "/proc/self/jaxperf"),
        ([RUN_ALL, "--output-root", "/sys/jaxperf"], "is not writable", "/sys/jaxperf"),
    ]
    ro = tmp / "ro"
    (ro / "existing").mkdir(parents=True)
    if shutil.which("unshare") and subprocess.run(["unshare", "-rm", "true"]).returncode == 0:
        for target in (ro / "existing", ro / "new"):
            script = f"mount --bind -o ro '{ro}' '{ro}' && exec '{RUN_ALL}' --output-root '{target}'"
            cases.append((["unshare", "-rm", "sh", "-c", script], "read-only file system", str(target)))
    if os.geteuid() != 0:
        locked = tmp / "locked"
        locked.mkdir(mode=0o555)
        cases.append(([RUN_ALL, "--output-root", str(locked)], "permission denied", str(locked)))
    return cases


def test_output_roots_that_cannot_be_used(nbs, tmp_path):
    for cmd, message, path in _root_cases(tmp_path):
        env = {**os.environ, "JAXPERF_NOTEBOOKS_DIR": str(nbs)}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        record("unusable output roots", late="backend=" in proc.stdout or "setup:" in proc.stderr)
        assert proc.returncode == 2, (cmd, proc.stderr)
        assert "--output-root" in proc.stderr and message in proc.stderr, proc.stderr
        assert path in proc.stderr


DAMAGE = {
    "truncated mid-row": lambda p: p.write_bytes(p.read_bytes()[:-3]),
    "empty": lambda p: p.write_bytes(b""),
    "header only": lambda p: p.write_bytes(p.read_bytes().splitlines(keepends=True)[0]),
    "sidecar from another write": lambda p: p.with_suffix(".json").write_text(
        p.with_suffix(".json").read_text().replace('"rows": 3', '"rows": 4')
    ),
    "sidecar missing": lambda p: p.with_suffix(".json").unlink(),
    "sidecar cut short": lambda p: p.with_suffix(".json").write_text('{"rows": 3, "col'),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_record_files_are_rejected(damage, tmp_path):
    import pandas as pd

    from jaxperf_study.records import RecordsError, read_records, write_records

    path = write_records(pd.DataFrame({"ms": [300.125, 2.5, 1.0]}), tmp_path / "t", {"run": 1})
    DAMAGE[damage](path)
    try:
        read_records(path)
        silent = True
    except RecordsError as err:
        silent = False
        assert "t.csv" in str(err) or "t.json" in str(err)
    record("damaged record files", lost=silent)
