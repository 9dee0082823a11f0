"""Every notebook's settings object (and the device run's) builds with the standard library only:
run_all.sh checks the options with it before the lock, the output root and the environment
exist. A meta-path finder refuses the heavy packages, so an import that slips back in fails here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jaxperf.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))

from runall import notebooks  # noqa: E402

HEAVY = ("jax", "jaxlib", "numpy", "equinox", "pandas", "matplotlib", "tqdm", "seaborn", "triton", "optax")

# In a fresh interpreter: block the heavy packages, run the notebook's own import of its settings
# class, build it from the notebook's defaults (full and quick) and from a bad value.
_CHILD = """
import json, sys
HEAVY = set(json.loads(sys.argv[2]))

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError(f"the settings check imported {name}")
        return None

sys.meta_path.insert(0, Blocker())
sys.path.insert(0, sys.argv[3])
case = json.loads(sys.argv[1])
ns = {}
for line in case["imports"]:
    exec(line, ns)
cls = eval(case["cls"], ns)
out = {}
for quick in (False, True):
    out[str(quick)] = cls.from_parameters({**case["params"], "quick": quick}).as_dict()
try:
    cls.from_parameters({**case["params"], case["bad"][0]: case["bad"][1]})
    out["bad"] = None
except ValueError as err:
    out["bad"] = str(err)
out["heavy"] = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
print(json.dumps(out))
"""

NOTEBOOKS = [nb for nb in notebooks.discover(PROJECT_ROOT / "notebooks") if nb.settings_class]


def _bad(params: dict) -> tuple[str, object]:
    """A value every study refuses: host_devices=0 (the base class checks it)."""
    return ("host_devices", 0)


def _run(imports: list[str], cls: str, params: dict) -> dict:
    case = {"imports": imports, "cls": cls, "params": params, "bad": _bad(params)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(case), json.dumps(HEAVY), str(PROJECT_ROOT / "lib")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_every_notebook_has_a_settings_class_to_check():
    names = {nb.number for nb in NOTEBOOKS}
    every = {nb.number for nb in notebooks.discover(PROJECT_ROOT / "notebooks")}
    assert names == every, f"notebooks without a settings check: {sorted(every - names)}"
    assert all(nb.settings_imports for nb in NOTEBOOKS)


@pytest.mark.parametrize(
    ("name", "imports", "cls", "params"),
    [(nb.name, nb.settings_imports, nb.settings_class, nb.declared) for nb in NOTEBOOKS],
    ids=[nb.name for nb in NOTEBOOKS],
)
def test_settings_build_with_the_standard_library_only(name, imports, cls, params):
    # The notebook's own defaults, as papermill would inject them.
    params = {k: v for k, v in params.items() if k != "output_root"}
    out = _run(imports, cls, params)
    assert out["heavy"] == []
    assert out["False"]["host_devices"] == params.get("host_devices", out["False"]["host_devices"])
    assert out["bad"] is not None and "host_devices=0" in out["bad"] and "expected" in out["bad"]


def test_the_stdlib_build_equals_the_full_environments():
    """Same fields, same values, whether built with the standard library only or with JAX
    and NumPy importable (the vocabulary has one source)."""
    for nb in NOTEBOOKS:
        ns: dict = {}
        for line in nb.settings_imports:
            exec(line, ns)
        cls = eval(nb.settings_class, ns)
        params = {k: v for k, v in nb.declared.items() if k != "output_root"}
        stdlib = _run(nb.settings_imports, nb.settings_class, params)
        for quick in (False, True):
            full = cls.from_parameters({**params, "quick": quick}).as_dict()
            assert json.loads(json.dumps(full)) == stdlib[str(quick)], nb.name


def test_the_heavy_modules_take_their_names_from_the_vocabulary():
    from jaxperf_study.dispatch import steps
    from jaxperf_study.dispatch import vocab as dvocab
    from jaxperf_study.jax20909 import mosaic_gpu_kernel, mosaic_gpu_rules

    assert steps.STEPS is dvocab.STEPS and steps.AXIS is dvocab.AXIS
    assert mosaic_gpu_kernel.check is mosaic_gpu_rules.check  # the port checks with the stdlib rules


# In a fresh interpreter with the heavy packages blocked: make a kernel variant of the port (its
# own checks, then the port's), print the error it raises (or "ok") and what was imported.
_VARIANT_CHILD = """
import json, sys
HEAVY = set(json.loads(sys.argv[2]))

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError(f"the variant check imported {name}")
        return None

sys.meta_path.insert(0, Blocker())
from jaxperf_study.jax20909 import mosaic_gpu_rules
from jaxperf_study.jax20909.variant import KernelVariant
kw = json.loads(sys.argv[1])
try:
    mosaic_gpu_rules.check(KernelVariant(kw.pop("kernel"), kw.pop("loop_form"), kw.pop("unroll"), **kw))
    said = "ok"
except ValueError as err:
    said = str(err)
print(json.dumps({"said": said, "heavy": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)}))
"""


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({}, "ok"),
        ({"loop_form": "while"}, "loop_form='while' is not allowed"),
        ({"unroll": 0}, "unroll=0 is not allowed"),
        (
            {"unroll": 3},
            "unroll=3 is not allowed: expected a divisor of the trip count T/64=64",
        ),  # 3 does not divide 64
        ({"T": 100}, "T=100 is not allowed"),
        ({"dtype": "float64"}, "dtype='float64' is not allowed"),
        ({"carry_dtype": "int8"}, "carry_dtype='int8' is not allowed"),
        ({"loop_form": "python", "unroll": 2}, "unroll=2 is not allowed: expected 1 for loop_form='python'"),
        ({"kernel": "attention"}, "kernel='attention' is not allowed"),
    ],
)
def test_a_kernel_variant_and_the_ports_rules_are_checked_with_the_standard_library_only(kw, said):
    variant = {
        "kernel": "seed",
        "loop_form": "fori",
        "unroll": 1,
        "T": 4096,
        "D": 64,
        "batch": 1,
        "dtype": "float16",
    }
    proc = subprocess.run(
        [sys.executable, "-c", _VARIANT_CHILD, json.dumps({**variant, **kw}), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["heavy"] == [] and out["said"].startswith(said), out


def test_the_run_all_engine_and_the_readme_renderer_import_with_the_standard_library_alone():
    """./run_all.sh checks its options with a bare python3 before .venv exists: its engine (which
    imports tools/readme.py for the rerun check) must not import a heavy package at import time."""
    code = (
        _CHILD.split("sys.path.insert(0, sys.argv[3])")[0]
        + "sys.path.insert(0, sys.argv[3]); import runall.main, readme\n"
        + "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in HEAVY)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "{}", json.dumps(HEAVY), str(PROJECT_ROOT / "tools")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []
