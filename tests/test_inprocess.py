"""papermill on a machine that refuses sockets (issue 46): the lent TPU machine refuses every
Internet socket, loopback included (errno 97), so a Jupyter kernel cannot start there.

``tests/fixtures/nosockets/nosockets.c``, preloaded, refuses them the same way here. Under it a
kernel of its own fails, as on that machine, and ``tools/runall/inprocess.py`` executes the
notebook in papermill's process: parameters injected, streams, an inline figure, a display
updated in place, a cell that starts a fresh process (every measurement on an accelerator
does), and a failing cell that fails the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "tools" / "runall" / "inprocess.py"
SHIM = ROOT / "tests" / "fixtures" / "nosockets" / "nosockets.c"


@pytest.fixture(scope="module")
def no_sockets(tmp_path_factory) -> dict[str, str]:
    """An environment whose processes cannot open an Internet socket (LD_PRELOAD)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the socket-refusing shim")
    lib = tmp_path_factory.mktemp("shim") / "nosockets.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(SHIM), "-ldl"], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXPERF_")}
    return {**env, "LD_PRELOAD": str(lib)}


def notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def outputs(path: Path) -> list[list[dict]]:
    """Each code cell's outputs, as nbformat reads them (texts joined)."""
    return [c.get("outputs", []) for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_the_shim_refuses_as_the_tpu_machine_does(no_sockets):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import inprocess, socket\n"
        "print(inprocess.sockets_refused())\n"
        "a, b = socket.socketpair(); print('unix ok')\n"
    )
    refused = subprocess.run(
        [sys.executable, "-c", code, str(ENGINE.parent)], env=no_sockets, capture_output=True, text=True
    )
    assert "Errno 97" in refused.stdout and "unix ok" in refused.stdout, refused.stderr
    free = subprocess.run([sys.executable, "-c", code, str(ENGINE.parent)], capture_output=True, text=True)
    assert free.stdout.splitlines()[0] == "None", free.stdout


def test_a_kernel_of_its_own_cannot_start_there(no_sockets, tmp_path):
    nb = notebook(tmp_path / "in.ipynb", "print(x)")
    proc = subprocess.run(
        [sys.executable, "-m", "papermill", str(nb), str(tmp_path / "out.ipynb")],
        env=no_sockets,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and "Errno 97" in proc.stderr


def test_the_in_process_engine_runs_a_notebook_there(no_sockets, tmp_path):
    nb = notebook(
        tmp_path / "in.ipynb",
        "print('x is', x)\nimport sys\nprint('to stderr', file=sys.stderr)\nx * 10",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",
        "from IPython.display import display\nh = display('first', display_id=True)\nh.update('second')",
        "import multiprocessing as mp, os\n"
        "with mp.get_context('spawn').Pool(1) as pool:\n"
        "    print('child', pool.apply(os.getpid) != os.getpid())",
        "import os\nprint(os.getcwd())",
    )
    out = tmp_path / "out.ipynb"
    (tmp_path / "cwd").mkdir()
    cmd = [sys.executable, str(ENGINE), str(nb), str(out), "-p", "x", "7", "--cwd", str(tmp_path / "cwd")]
    proc = subprocess.run(cmd, env=no_sockets, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cells = outputs(out)
    printed, figure, display, child, cwd = cells[-5:]
    assert [o.get("text") for o in printed if o["output_type"] == "stream"] == ["x is 7\n", "to stderr\n"]
    assert printed[-1]["data"]["text/plain"] == "70"
    assert any("image/png" in o.get("data", {}) for o in figure)
    assert [o["data"]["text/plain"] for o in display] == ["'second'"]  # updated in place
    assert child[0]["text"] == "child True\n"
    assert cwd[0]["text"].strip() == str(tmp_path / "cwd")
    meta = nbformat.read(out, as_version=4).metadata["papermill"]
    assert meta["parameters"] == {"x": 7} and not meta["exception"]


def test_a_failing_cell_fails_the_run_and_is_recorded(no_sockets, tmp_path):
    nb = notebook(tmp_path / "in.ipynb", "print('before')", "1 / 0", "print('never')")
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [sys.executable, str(ENGINE), str(nb), str(out)], env=no_sockets, capture_output=True, text=True
    )
    assert proc.returncode == 1 and "ZeroDivisionError" in proc.stderr
    cells = outputs(out)
    assert cells[1][0]["text"] == "before\n"
    assert cells[2][-1]["output_type"] == "error" and cells[2][-1]["ename"] == "ZeroDivisionError"
    assert cells[3] == []  # the cells after it did not run
