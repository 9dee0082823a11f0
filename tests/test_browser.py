"""JupyterLab, as a reader uses it: start it the README's way (`./run_all.sh lab`),
drive Debian's chromium through Playwright, open notebook 10 (the diagnosis of the seed's step
study: JAX, progress bars, tables and figures in a quick run of under a minute), set quick mode in
its parameters cell, run all cells, and check what the reader sees: the kernel
"Python (jaxperf)", no cell with an error, an inline image in every cell that
draws a figure, and no tracked file changed (outputs go to the ignored
.scratch/, the source notebook is not saved). Then it opens each committed executed
notebook (results/<backend>/NN_*.ipynb, untrusted, as a reader who clones the project
does) at notebook width and fails on a clipped table (an output that scrolls sideways, or
a table wider than the notebook column) or progress-bar clutter (more than two lines of
one bar in a cell). Screenshots: .browser-test/.

Skips, saying why, where chromium or Playwright is missing or cannot start.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jaxperf.paths import ENV_VAR, PROJECT_ROOT

pytestmark = pytest.mark.browser

CHROMIUM = Path(os.environ.get("JAXPERF_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# Notebook 10, not 01: the same kernel, widgets and inline figures in a fraction of the time
# (notebook 01's quick run, about four minutes, is tests/test_dispatch.py's own).
NOTEBOOK = "notebooks/10_your_step.ipynb"
SHOTS = PROJECT_ROOT / ".browser-test"
# Where a run of the notebook could write (other notebooks are not opened).
WATCHED = (NOTEBOOK, "results", "figures")
# A quick run of notebook 10 takes under a minute on a quiet 2-core machine; a busy one is slower.
RUN_TIMEOUT_S = int(os.environ.get("JAXPERF_BROWSER_TIMEOUT", "420"))
# Done when no code cell is queued or running ([*]), one has run, and the kernel is idle
# again (JupyterLab stops a "run all" at the first cell that fails).
RUN_FINISHED = r"""() => {
    const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')].map(p => p.innerText);
    const idle = /\| Idle/.test(document.querySelector('#jp-main-statusbar')?.innerText ?? '');
    return idle && prompts.some(p => /\[\d+\]/.test(p)) && !prompts.some(p => p.includes('*'));
}"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _snapshot() -> dict[str, str]:
    """Content hash of every tracked file where a notebook run could write, and the
    names of untracked (not ignored) files there."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z", *WATCHED], cwd=PROJECT_ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    untracked = subprocess.run(
        ["git", "ls-files", "-z", "--others", "--exclude-standard", *WATCHED],
        cwd=PROJECT_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    state = {}
    for name in filter(None, tracked):
        path = PROJECT_ROOT / name.decode()
        state[name.decode()] = hashlib.sha1(path.read_bytes()).hexdigest() if path.exists() else "deleted"
    state.update({name.decode(): "untracked" for name in filter(None, untracked)})
    return state


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (the dev extra: tools/setup_env.sh installs it)")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install chromium (tools/setup_env.sh does, as root)")
    with sync_playwright() as pw:
        try:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        except Error as err:
            pytest.skip(f"chromium ({CHROMIUM}) does not start here: {str(err).splitlines()[0]}")
        yield browser
        browser.close()


def _user_settings(folder: Path) -> Path:
    """A fresh user-settings folder: whatever the user set stays out of the test, and every
    cell stays in the page (JupyterLab otherwise renders only the cells in view)."""
    tracker = folder / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    # kernelShutdown: closing an executed notebook's tab stops the kernel its opening started
    tracker.write_text(json.dumps({"windowingMode": "none", "kernelShutdown": True}))
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Callable[[str], str]]:
    """`./run_all.sh lab` on a free port with a known token; yields ``url(path)``, the URL
    that opens a project file in JupyterLab."""
    port, token = _free_port(), secrets.token_hex(16)
    log = SHOTS / "jupyterlab.log"
    SHOTS.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, "JAXPERF_PROGRESS")}
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("jupyter-runtime"))
    cmd = [
        str(PROJECT_ROOT / "run_all.sh"),
        "lab",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--LabApp.workspaces_dir={tmp_path_factory.mktemp('workspaces')}",
        f"--LabApp.user_settings_dir={_user_settings(tmp_path_factory.mktemp('settings'))}",
        "--ContentsManager.allow_hidden=True",  # JAXPERF_EXECUTED may name a run under .scratch/
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(lambda: f"open {base}/lab" in log.read_text() or proc.poll() is not None, 120)
        if proc.poll() is not None:
            pytest.fail(f"./run_all.sh lab exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        yield lambda path: f"{base}/lab/tree/{path}?token={token}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_for(condition: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not true after {timeout_s} s")
        time.sleep(0.5)


def _run_all_cells(page: Any) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()


def _cells(page: Any) -> list[dict[str, Any]]:
    """Each code cell as the reader sees it: source, prompt, outputs."""
    return page.eval_on_selector_all(
        ".jp-Notebook .jp-CodeCell",
        """cells => cells.map(cell => ({
            source: cell.querySelector('.jp-InputArea-editor')?.innerText ?? '',
            prompt: cell.querySelector('.jp-InputArea-prompt')?.innerText ?? '',
            images: cell.querySelectorAll('.jp-OutputArea-output img').length,
            errors: Array.from(cell.querySelectorAll(
                '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
            )).map(e => e.innerText.slice(0, 400)),
        }))""",
    )


def test_a_notebook_quick_run_in_jupyterlab(chromium, lab):
    before = _snapshot()
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab(NOTEBOOK))
        kernel = page.locator(".jp-NotebookPanel-toolbar .jp-Toolbar-kernelName")
        kernel.wait_for(timeout=60_000)
        page.wait_for_function(
            "() => document.querySelector('.jp-NotebookPanel-toolbar .jp-Toolbar-kernelName')"
            "?.innerText.includes('jaxperf')",
            timeout=60_000,
        )
        assert kernel.inner_text().strip() == "Python (jaxperf)"
        # Quick mode, as a reader sets it: select the word False on the line `quick = False`.
        line = page.locator(".jp-CodeCell .cm-line", has_text=re.compile(r"^quick = False"))
        line.get_by_text("False").first.dblclick()
        page.keyboard.type("True")
        assert page.locator(".jp-CodeCell .cm-line", has_text=re.compile(r"^quick = True")).count() == 1
        page.screenshot(path=SHOTS / "quick-mode-set.png")
        _run_all_cells(page)
        try:
            page.wait_for_function(RUN_FINISHED, timeout=RUN_TIMEOUT_S * 1000)
        finally:
            cells = _cells(page)
            (SHOTS / "cells.json").write_text(json.dumps(cells, indent=1))
        page.screenshot(path=SHOTS / "02-after-run-all.png")
        unrun = [i for i, c in enumerate(cells) if not re.search(r"\[\d+\]", c["prompt"])]
        assert not unrun, (
            f"code cells {unrun} did not run; first errors: {[c['errors'] for c in cells if c['errors']][:1]}"
        )
        for index, cell in enumerate(cells):
            assert not cell["errors"], f"code cell {index} shows an error or stderr: {cell['errors']}"
            if "study.figure(" in cell["source"]:
                assert cell["images"] >= 1, f"code cell {index} draws a figure but shows no inline image"
        assert sum("study.figure(" in c["source"] for c in cells) >= 1
        first_figure = page.locator(".jp-CodeCell", has=page.locator(".jp-OutputArea-output img")).first
        first_figure.scroll_into_view_if_needed()
        page.screenshot(path=SHOTS / "03-first-figure-inline.png")
    except Exception:
        page.screenshot(path=SHOTS / "failure.png")
        running = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-prompt", has_text="*"))
        if running.count():
            running.first.scroll_into_view_if_needed()
            page.screenshot(path=SHOTS / "failure-running-cell.png")
        raise
    finally:
        page.close()
    assert _snapshot() == before, f"a tracked file changed in {', '.join(WATCHED)}"


# ---------------------------------------------------------------- the committed executed notebooks

# results/<backend>/NN_*.ipynb, or JAXPERF_EXECUTED (a glob relative to the project root, e.g. a
# quick run copied under .scratch/) to check other executed notebooks the same way.
EXECUTED_GLOB = os.environ.get("JAXPERF_EXECUTED", "results/*/[0-9][0-9]_*.ipynb")
EXECUTED = sorted(p.relative_to(PROJECT_ROOT).as_posix() for p in PROJECT_ROOT.glob(EXECUTED_GLOB))
NOTEBOOK_WIDTH_PX = (850, 950)  # the output column the checks run at: a notebook about 900 px wide
VIEWPORT = {"width": 1330, "height": 900}  # with JupyterLab's file browser open
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook on show
# Rendered: every cell attached, every image loaded, every output and Markdown cell filled in
# (rendering is asynchronous: a page measured before it would see no table at all).
RENDERED = f"""n => document.querySelectorAll('{PANEL} .jp-Cell').length === n.cells
    && [...document.querySelectorAll('{PANEL} img')].every(i => i.complete)
    && [...document.querySelectorAll('{PANEL} .jp-OutputArea-output')]
        .filter(o => o.childElementCount > 0 || o.textContent.trim()).length >= n.outputs
    && [...document.querySelectorAll('{PANEL} .jp-MarkdownCell .jp-RenderedMarkdown')]
        .filter(m => m.childElementCount > 0).length >= n.markdown"""


#: The MIME type JupyterLab renders of an output's data, in its order of preference (the
#: standard renderer factories of @jupyterlab/rendermime).
SHOWN_MIME = (
    "text/html",
    "text/markdown",
    "text/latex",
    "image/svg+xml",
    "image/png",
    "image/jpeg",
    "text/plain",
)


def shows_something(out: dict[str, Any]) -> bool:
    """Whether an output renders with visible content (an empty Markdown display renders blank)."""
    if out["output_type"] == "stream":
        return bool("".join(out.get("text", "")).strip())
    if out["output_type"] == "error":
        return True
    data = out.get("data", {})
    mime = next((m for m in SHOWN_MIME if m in data), None)
    return mime is not None and bool("".join(data[mime]).strip())


def rendered_counts(nb: dict[str, Any]) -> dict[str, int]:
    """What a rendered notebook must show: its cells, its code cells' outputs (a run of stream
    outputs of one name shows as one) and its non-empty Markdown cells."""
    outputs = 0
    for cell in nb["cells"]:
        last_stream = None
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            stream = out.get("name") if out["output_type"] == "stream" else None
            outputs += shows_something(out) and not (stream and stream == last_stream)
            last_stream = stream
    markdown = sum(1 for c in nb["cells"] if c["cell_type"] == "markdown" and "".join(c["source"]).strip())
    return {"cells": len(nb["cells"]), "outputs": outputs, "markdown": markdown}


OPEN_DETAILS = f"""() => document.querySelectorAll('{PANEL} details').forEach(d => {{ d.open = true; }})"""
# Per output: its width, whether it scrolls sideways, the tables wider than the column, and its
# text (for the progress lines).
OUTPUTS = r"""() => [...document.querySelectorAll('PANEL .jp-Cell')].flatMap((cell, index) =>
    [...cell.querySelectorAll('.jp-OutputArea-output')].map(out => ({
        cell: index,
        width: out.clientWidth,
        scrolls: out.scrollWidth > out.clientWidth + 1 ? out.scrollWidth : 0,
        wide_tables: [...out.querySelectorAll('table')]
            .map(t => Math.round(t.getBoundingClientRect().width))
            .filter(w => w > out.clientWidth + 1),
        text: out.innerText,
    })))""".replace("PANEL", PANEL)
PROGRESS_LINE = re.compile(r"^\s*(?P<bar>[^\n|]*?):\s+\d{1,3}%\|", re.M)


def progress_clutter(outputs: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
    """Cells with more than two lines of one progress bar (by its description): {cell: {bar: lines}}."""
    lines: dict[int, dict[str, int]] = {}
    for out in outputs:
        for match in PROGRESS_LINE.finditer(out["text"]):
            bars = lines.setdefault(out["cell"], {})
            bars[match["bar"]] = bars.get(match["bar"], 0) + 1
    return {
        cell: {b: n for b, n in bars.items() if n > 2}
        for cell, bars in lines.items()
        if max(bars.values()) > 2
    }


def clipped(outputs: list[dict[str, Any]]) -> list[str]:
    """Outputs that scroll sideways or hold a table wider than the notebook column."""
    return [
        f"cell {o['cell']}: "
        + (f"scrolls ({o['scrolls']} px in {o['width']})" if o["scrolls"] else "")
        + (f" tables of {o['wide_tables']} px in {o['width']}" if o["wide_tables"] else "")
        + f": {o['text'][:60]!r}"
        for o in outputs
        if o["scrolls"] or o["wide_tables"]
    ]


def test_rendered_counts_expect_what_jupyterlab_draws():
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["# title"]},
            {"cell_type": "markdown", "source": [""]},
            {
                "cell_type": "code",
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["a\\n"]},
                    {"output_type": "stream", "name": "stdout", "text": ["b\\n"]},  # merged with a
                    {"output_type": "stream", "name": "stderr", "text": ["c\\n"]},
                    {
                        "output_type": "display_data",
                        "data": {"text/markdown": [""], "text/plain": ["<Markdown>"]},
                    },
                    {"output_type": "display_data", "data": {"text/html": ["<table/>"], "text/plain": ["t"]}},
                ],
            },
        ]
    }
    assert rendered_counts(nb) == {"cells": 3, "outputs": 3, "markdown": 1}


def test_progress_clutter_counts_the_lines_of_each_bar():
    outputs = [
        {"cell": 3, "text": "lowering:   0%|  | 0/9\nlowering:  50%|# | 4/9\nlowering: 100%|##| 9/9"},
        {"cell": 3, "text": "figures: 100%|##| 2/2"},
        {"cell": 5, "text": "compile for sm_90:   0%| | 0/3\ncompile for sm_90: 100%|#| 3/3\nratio: 5%|x"},
    ]
    assert progress_clutter(outputs) == {3: {"lowering": 3}}
    assert progress_clutter(outputs[1:]) == {}


@pytest.mark.skipif(not EXECUTED, reason=f"no executed notebook matches {EXECUTED_GLOB}")
@pytest.mark.parametrize("executed", EXECUTED)
def test_executed_notebook_reads_at_notebook_width(chromium, lab, executed):
    """As a reader sees a committed run in JupyterLab: no table clipped at the notebook's
    width, no progress bar spread over more than two lines (papermill once wrote one line per
    redraw: rerun the notebook with ./run_all.sh to fix that)."""
    counts = rendered_counts(json.loads((PROJECT_ROOT / executed).read_text()))
    page = chromium.new_page(viewport=VIEWPORT)
    name = Path(executed).stem
    try:
        page.goto(lab(executed) + "&reset")  # a fresh workspace: this notebook alone
        page.wait_for_function(RENDERED, arg=counts, timeout=90_000)
        page.evaluate(OPEN_DETAILS)  # a folded table is still one a reader opens
        outputs = page.evaluate(OUTPUTS)
        page.screenshot(path=SHOTS / f"executed-{name}.png")
    finally:
        page.close()
    widths = {o["width"] for o in outputs if o["width"]}
    assert widths and NOTEBOOK_WIDTH_PX[0] <= max(widths) <= NOTEBOOK_WIDTH_PX[1], widths
    problems = clipped(outputs)
    clutter = progress_clutter(outputs)
    assert not problems and not clutter, (
        f"{executed}: clipped tables {problems}; progress bars over more than two lines {clutter}"
    )
