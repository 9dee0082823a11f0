"""run_all.sh: bad options are refused with usage; a failing notebook neither
stops the others nor touches results; successful outputs move into place."""

import json
import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from jaxperf.paths import PROJECT_ROOT

RUN_ALL = str(PROJECT_ROOT / "run_all.sh")


def run(*args, env=None, timeout=300):
    return subprocess.run(
        [RUN_ALL, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.mark.parametrize(
    "args,message",
    [
        (["--bogus"], "unknown option '--bogus'"),
        (["--backend", "quantum"], "--backend 'quantum' is not one of auto, cpu, gpu, tpu"),
        (["--timeout", "soon"], "--timeout 'soon' is not a positive integer"),
        (["--only", "99"], "--only '99' matches no notebook"),
    ],
)
def test_bad_options_print_usage_and_fail(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Options for a study run" in proc.stderr


def _notebook(path: Path, body: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('backend = "auto"\nquick = False\noutput_root = ""\nhost_devices = 8')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "jaxperf", "display_name": "jaxperf", "language": "python"}
    nbformat.write(nb, path)


def test_failing_notebook_does_not_stop_others_or_touch_results(tmp_path):
    nbs, out = tmp_path / "nbs", tmp_path / "out"
    nbs.mkdir()
    write = (
        "from pathlib import Path\n"
        "d = Path(output_root) / 'results' / backend / '{name}'\n"
        "d.mkdir(parents=True, exist_ok=True)\n"
        "(d / 'value.txt').write_text('{value}')\n"
    )
    _notebook(
        nbs / "01_breaks.ipynb", write.format(name="breaks", value="new") + "raise RuntimeError('boom')"
    )
    _notebook(nbs / "02_works.ipynb", write.format(name="works", value="new"))
    committed = out / "results" / "cpu" / "breaks" / "value.txt"
    committed.parent.mkdir(parents=True)
    committed.write_text("committed")

    proc = run("--backend", "cpu", "--output-root", str(out), env={"JAXPERF_NOTEBOOKS_DIR": str(nbs)})
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert committed.read_text() == "committed"  # the failed run left it alone
    assert (out / "results" / "cpu" / "works" / "value.txt").read_text() == "new"
    executed = json.loads((out / "results" / "cpu" / "02_works.ipynb").read_text())
    assert "".join(executed["cells"][-1]["source"]).startswith("from pathlib")  # executed copy moved too
    assert all(c.get("execution_count") for c in executed["cells"] if c["cell_type"] == "code")
    table = proc.stdout[proc.stdout.index("=== summary") :]
    assert "01_breaks" in table and "FAILED" in table
    assert "02_works" in table and " ok " in table
    assert "1 notebook(s) failed" in proc.stderr
