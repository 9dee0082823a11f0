"""The package's layers, read from the import statements of lib/jaxperf (no module is imported).

From the bottom: the shared harness (top-level modules), the public fixes, the jax#20909
problem (:mod:`jaxperf.jax20909`), the compilers (:mod:`jaxperf.compilers`), then the
studies. A layer imports only layers below it, so that notebooks 02, 04, 05 and the GPU run
use one copy of each compiler's code and no study reaches into another for it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jaxperf.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "lib" / "jaxperf"
STUDIES = ("loops", "dispatch")
# The engines the studies share: the Equinox patch (built and tested against Equinox's own suite)
# and the diagnosis of a step (notebook 01's cells and notebook 10's reader step run through it).
ENGINES = {"eqx_patch", "diagnosis"}
# What each layer may import from the packages of lib/jaxperf (top-level modules are always allowed).
ALLOWED = {
    "fixes": set(),
    "jax20909": {"fixes"},
    "compilers": {"jax20909", "fixes"},
    "eqx_patch": set(),
    "diagnosis": {"fixes", "eqx_patch"},
    **{study: {"jax20909", "fixes", "compilers", *ENGINES} for study in STUDIES},
    # Flax NNX is the equinox#192 mechanism under another library: it reuses the dispatch study's
    # per-leaf fit and its sentences, so that both answers are stated the same way.
    "nnx": {"fixes", *ENGINES, "dispatch"},
    # The device run runs the studies' own sweeps on the GPU (their compiler code comes from compilers/).
    "gpu": {"jax20909", "fixes", "compilers", "loops", "dispatch", "diagnosis"},
}
# The equinox#192 problem (models, steps) still lives in the dispatch study: two studies compile
# or run its step. Named here, module by module, until it moves below the studies.
KNOWN_EXCEPTIONS = {
    # The engine's example steps are the seed's model and step (imported when an example is built).
    ("diagnosis/examples.py", "dispatch"),
    # The #20909 study's modules (moved out of the loops tool) run the tool's engine on the study's
    # kernels, until the kernels and factory the tool shares move into the tool.
    ("jax20909/family.py", "loops"),
    ("jax20909/report.py", "loops"),
    ("jax20909/runs.py", "loops"),
    ("jax20909/sweep.py", "compilers"),
}


def _imported_packages(path: Path) -> set[str]:
    """The lib/jaxperf packages ``path`` imports from (relative imports resolved)."""
    rel = path.relative_to(PACKAGE)
    here = ["jaxperf", *rel.with_suffix("").parts]
    here = here[:-1]  # the package the module is in (for __init__.py, the package itself)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = [*base, *(node.module.split(".") if node.module else [])]
            names = [".".join(module)] if node.module else [".".join([*module, a.name]) for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "jaxperf" and len(parts) > 1 and (PACKAGE / parts[1]).is_dir():
                found.add(parts[1])
    return found


def test_every_package_has_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == set(ALLOWED), f"give each package of lib/jaxperf a layer in ALLOWED: {packages}"


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer):
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        for other in _imported_packages(path) - {layer} - ALLOWED[layer]:
            if (rel, other) not in KNOWN_EXCEPTIONS:
                bad.append(f"{rel} imports jaxperf.{other}")
    assert not bad, "imports across layers (move the shared code below both): " + "; ".join(bad)


def test_the_known_exceptions_are_still_needed():
    stale = [
        f"{rel} -> {other}"
        for rel, other in sorted(KNOWN_EXCEPTIONS)
        if other not in _imported_packages(PACKAGE / rel)
    ]
    assert not stale, f"remove from KNOWN_EXCEPTIONS: {stale}"


def test_the_reader_resolves_relative_imports():
    # loops/engine.py: "from ..compilers.lowering", "from ..jax20909.factory", "from . import targets"
    assert _imported_packages(PACKAGE / "loops" / "engine.py") == {"compilers", "jax20909", "loops"}
    # compilers/triton/capture.py: "from ...private_api" (a module, not a layer), "from ..cuda"
    assert _imported_packages(PACKAGE / "compilers" / "triton" / "capture.py") == {"compilers"}
