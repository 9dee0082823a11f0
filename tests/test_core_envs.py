"""The core (``pip install jaxperf``: the public fixes) in clean environments at both ends of
the jax/Equinox range pyproject.toml states, with the fixes' own tests (tests/core) run
there, without the project's tests/conftest.py or anything of the study; and the tools extra
(``pip install 'jaxperf[tools]'``) running both tools on Python 3.12 (the newest end) and 3.11
(the lent TPU's Python and JAX), with nothing of the study's notebooks (JupyterLab, papermill).

Each environment is a fresh venv with jaxperf installed from a copy of the source
(pyproject.toml, README.md, lib/, built into a wheel once): at the oldest end pinned to the range's lower bounds
(the rest resolved by pip), at the newest end constrained by requirements.lock (the
study's versions, which are the range's upper bounds). Both are built and tested at once;
with pip's wheel cache warm, about two to three minutes in all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from jaxperf.paths import PROJECT_ROOT
from jaxperf.private_api import CHECKED

CORE = ("jax", "jaxlib", "equinox", "numpy")
#: what the study brings and the core must not
STUDY = {"pandas", "matplotlib", "seaborn", "papermill", "jupyterlab", "ipykernel", "tqdm", "ipywidgets"}
STUDY |= {"triton", "libtpu", "notebook", "nbclient", "jupyter-server"}
#: what the tools extra brings of them: their tables
TOOLS = {"pandas"}
#: each environment's build and run, tools included (a shared two-core machine took 15 minutes)
LIMIT_S = 1200


def _bounds() -> dict[str, tuple[str, str | None]]:
    """``{name: (lower bound, upper bound or None)}`` of pyproject.toml's dependencies."""
    out = {}
    for line in tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        req = Requirement(line)
        lower = [s.version for s in req.specifier if s.operator == ">="]
        upper = [s.version for s in req.specifier if s.operator == "<="]
        assert len(lower) == 1, f"{line!r}: a core dependency states its lowest version with >="
        out[req.name] = (lower[0], upper[0] if upper else None)
    return out


def _locked() -> dict[str, str]:
    lines = (PROJECT_ROOT / "requirements.lock").read_text().splitlines()
    return dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))


def _source_copy(where: Path) -> Path:
    """What pip builds jaxperf from: pyproject (it ships lib/jaxperf/ alone), the readme and
    lib/ (no build/ or egg-info written into the checkout)."""
    src = where
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(PROJECT_ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(PROJECT_ROOT / "lib", src / "lib", ignore=ignore)
    return src


_SCRIPT = r"""
set -euo pipefail
# No pip of its own (ensurepip is the slow part of a venv): the project's pip installs into it.
"$BASE_PYTHON" -m venv --without-pip "$ENV"
echo "venv $SECONDS" >"$ENV/phases"
"$BASE_PYTHON" -m pip --python "$ENV/bin/python" install -q --no-compile --disable-pip-version-check \
  "$@" "$WHEEL" >"$ENV/pip.log" 2>&1 || { tail -30 "$ENV/pip.log" >&2; exit 90; }
"$ENV/bin/python" -c 'import importlib.metadata as md, json
print(json.dumps({d.metadata["Name"].lower().replace("_", "-"): d.version for d in md.distributions()}))' \
  >"$ENV/installed.json"
echo "install $SECONDS" >>"$ENV/phases"
cd "$ROOT"
rc=0
"$ENV/bin/python" -m pytest --confcutdir tests/core tests/core -q -p no:cacheprovider \
  --junitxml "$ENV/junit.xml" || rc=$?
# Both tools as a reader runs them where asked (TOOLS=1): on a step and a kernel written as the
# libraries' docs write them, from outside the project (no lib/ on the path).
if [ -n "${TOOLS:-}" ]; then
  cd "$ENV"
  PYTHONPATH="$ENV" "$ENV/bin/python" -m jaxperf diagnose tool_factory:make --quick \
    --json "$ENV/diagnose.json" >"$ENV/diagnose.out" 2>&1 || rc=91
  "$ENV/bin/python" -m jaxperf loops jaxperf.loops.examples.matmul:make --T 256,512 --budget 60 \
    --json "$ENV/loops.json" >"$ENV/loops.out" 2>&1 || rc=92
fi
exit $rc
"""

#: A reader's training step, written as Equinox's docs write one (eqx.filter_jit, optax's Adam).
TOOL_FACTORY = """
import equinox as eqx, jax, jax.numpy as jnp, optax

def make():
    model = eqx.nn.MLP(8, 1, 32, 3, key=jax.random.key(0))
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state, x, y):
        loss, grads = eqx.filter_value_and_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return loss, eqx.apply_updates(model, updates), opt_state

    x, y = jnp.ones((64, 8)), jnp.zeros((64, 1))
    return {"step": step, "args": (model, opt_state, x, y)}
"""


def _wheel(where: Path) -> Path:
    """jaxperf's wheel, built once from a copy of the source."""
    dist = where / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(dist),
            str(_source_copy(where / "src")),
        ],
        check=True,
        capture_output=True,
        timeout=LIMIT_S,
    )
    (wheel,) = dist.glob("jaxperf-*.whl")
    return wheel


def _start(
    name: str,
    where: Path,
    wheel: Path,
    pins: list[str],
    constraints: Path | None,
    base: str = sys.executable,
    tools: bool = False,
) -> dict:
    """A fresh venv of ``base`` with jaxperf (with its tools extra, and both tools run, if ``tools``)."""
    env_dir = where / name
    pip_args = [*pins, "pytest==" + _locked()["pytest"]]
    if constraints is not None:
        pip_args = ["-c", str(constraints), *pip_args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX", "XLA", "PYTHON", "VIRTUAL_ENV"))}
    if tools:  # optax: the reader's step uses it
        env_dir.mkdir(parents=True)
        (env_dir / "tool_factory.py").write_text(TOOL_FACTORY)
        pip_args.append("optax")
    env.update(
        TOOLS="1" if tools else "",
        BASE_PYTHON=base,
        ENV=str(env_dir),
        WHEEL=f"{wheel}[tools]" if tools else str(wheel),
        ROOT=str(PROJECT_ROOT),
        JAX_PLATFORMS="cpu",
    )
    proc = subprocess.Popen(
        ["nice", "-n", "10", "bash", "-c", _SCRIPT, "core-env", *pip_args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return {"proc": proc, "dir": env_dir, "start": time.monotonic(), "tools": tools}


@pytest.fixture(scope="module")
def core_envs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Both environments, built and tested concurrently; each entry holds the process."""
    bounds = _bounds()
    assert set(bounds) == set(CORE), bounds
    where = tmp_path_factory.mktemp("core-envs")
    wheel = _wheel(where)
    oldest = [f"{name}=={low}" for name, (low, _) in bounds.items()]
    newest_versions = {name: high or _locked()[name] for name, (_, high) in bounds.items()}
    newest = [f"{name}=={version}" for name, version in newest_versions.items()]
    envs = {
        "oldest": _start("oldest", where, wheel, oldest, None)
        | {"want": {name: low for name, (low, _) in bounds.items()}},
        "newest": _start("newest", where, wheel, newest, PROJECT_ROOT / "requirements.lock", tools=True)
        | {"want": newest_versions},
    }
    if (py311 := _python("3.11")) is not None:  # the lent TPU's Python and JAX
        tpu = ["jax==0.10.2", "jaxlib==0.10.2", "equinox==0.13.8"]
        envs["tpu"] = _start("tpu", where, wheel, tpu, None, py311, tools=True) | {"want": {"jax": "0.10.2"}}
    return envs


def _python(version: str) -> str | None:
    """A Python of ``version`` here (pyenv's, when its shim is not active), or None."""
    found = [shutil.which(f"python{version}")]
    found += sorted(
        str(p) for p in Path(os.path.expanduser("~/.pyenv/versions")).glob(f"{version}*/bin/python3")
    )
    for cand in filter(None, found):
        ok = subprocess.run(
            [
                cand,
                "-c",
                f"import sys; sys.exit(sys.version_info[:2] != {tuple(map(int, version.split('.')))})",
            ],
            capture_output=True,
        )
        if ok.returncode == 0:
            return cand
    return None


def _tools_ran(run: dict, output: str, jax_version: str) -> None:
    """Both tools reached a verdict where the tools extra alone was installed over the core."""
    installed = json.loads((run["dir"] / "installed.json").read_text())
    assert TOOLS <= set(installed) and not (STUDY - TOOLS) & set(installed), sorted(installed)
    assert run["proc"].returncode not in (91, 92), output[-3000:] + "".join(
        (run["dir"] / f).read_text()[-3000:]
        for f in ("diagnose.out", "loops.out")
        if (run["dir"] / f).exists()
    )
    diagnosis = json.loads((run["dir"] / "diagnose.json").read_text())
    assert diagnosis["headline"] and diagnosis["environment"]["packages"]["jax"] == jax_version, diagnosis
    loops = json.loads((run["dir"] / "loops.json").read_text())
    assert loops["verdict"] and {p["form"] for p in loops["points"]} >= {"python", "fori"}, loops


def test_the_tools_extra_runs_both_tools_on_the_tpu_s_python_and_jax(core_envs):
    """Python 3.11 and JAX 0.10.2 (the lent TPU's): ``pip install 'jaxperf[tools]'`` installs, the
    core's own tests pass, and both tools reach a verdict on a reader's step and a documented kernel."""
    if "tpu" not in core_envs:
        pytest.skip("no Python 3.11 here")
    run = core_envs["tpu"]
    output, _ = run["proc"].communicate(timeout=LIMIT_S)
    assert run["proc"].returncode != 90, f"pip could not install jaxperf on Python 3.11:\n{output[-3000:]}"
    installed = json.loads((run["dir"] / "installed.json").read_text())
    assert installed["jax"] == "0.10.2" and installed["jaxperf"]
    _tools_ran(run, output, "0.10.2")
    assert run["proc"].returncode == 0, f"tests/core failed on Python 3.11:\n{output[-6000:]}"


@pytest.mark.parametrize("end", ["oldest", "newest"])
def test_the_core_alone_passes_its_tests_at_each_end_of_the_range(core_envs, end):
    run = core_envs[end]
    try:
        output, _ = run["proc"].communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        run["proc"].kill()
        pytest.fail(f"the {end} core environment took over {LIMIT_S} s")
    seconds = time.monotonic() - run["start"]
    phases = (run["dir"] / "phases").read_text().split() if (run["dir"] / "phases").exists() else []
    print(f"{end}: built and tested in {seconds:.0f} s (bash's seconds at each phase's end: {phases})")
    assert run["proc"].returncode != 90, f"pip could not install the core at the {end} end:\n{output[-3000:]}"
    installed = json.loads((run["dir"] / "installed.json").read_text())
    for name, version in run["want"].items():
        assert Version(installed.get(name, "0")) == Version(version), (name, installed.get(name), version)
    # the ends are the versions jaxperf.private_api says its hooks were checked on
    side = 1 if end == "newest" else 0
    assert (run["want"]["jax"], run["want"]["equinox"]) == (CHECKED["jax"][side], CHECKED["equinox"][side])
    brought = STUDY & set(installed) - (TOOLS if run["tools"] else set())
    assert not brought, f"pip install jaxperf brought the study's {sorted(brought)}"
    if run["tools"]:  # the newest end, on this Python (3.12 where the lock was made): the tools extra
        _tools_ran(run, output, run["want"]["jax"])
    assert run["proc"].returncode == 0, f"tests/core failed at the {end} end:\n{output[-6000:]}"
    # every core test module ran and passed there (none skipped whole, none missing)
    modules = {p.stem for p in (PROJECT_ROOT / "tests" / "core").glob("test_*.py")}
    passed: dict[str, int] = {}
    for case in ET.parse(run["dir"] / "junit.xml").getroot().iter("testcase"):
        module = next((part for part in case.get("classname", "").split(".") if part in modules), None)
        if module and not any(child.tag in ("failure", "error", "skipped") for child in case):
            passed[module] = passed.get(module, 0) + 1
    assert modules and all(passed.get(m, 0) > 0 for m in modules), (modules, passed)


def test_a_run_names_each_version_that_is_not_the_lock_s():
    """A lent machine runs its own JAX: every record's provenance names each package whose version
    differs from requirements.lock, beside the lock's, and nothing where they agree."""
    from jaxperf_study import provenance

    locked = _locked()
    assert provenance.versus_lock({"jax": locked["jax"], "equinox": locked["equinox"]}) == {}
    moved = provenance.versus_lock({"jax": "0.10.2", "numpy": locked["numpy"], "not-locked": "1"})
    assert moved == {"jax": f"ran 0.10.2, locked {locked['jax']}"}
