"""The wheel holds the tools alone: the packages and modules that pyproject.toml's
``[tool.jaxperf] study`` names are left out of it (they stay importable from ``lib/`` in an
editable install, where the notebooks import them). Everything else is in pyproject.toml."""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

STUDY = tuple(
    f"jaxperf.{name}"
    for name in tomllib.loads(Path(__file__).with_name("pyproject.toml").read_text())["tool"]["jaxperf"][
        "study"
    ]
)


def is_study(module: str) -> bool:
    """``jaxperf.dispatch.report`` is the study's when ``dispatch`` is listed."""
    return any(module == s or module.startswith(s + ".") for s in STUDY)


class ToolsOnly(build_py):
    """``build_py`` without the study's modules."""

    def find_package_modules(self, package, package_dir):
        found = super().find_package_modules(package, package_dir)
        return [(pkg, module, path) for pkg, module, path in found if not is_study(f"{pkg}.{module}")]


setup(
    packages=[p for p in find_packages("lib") if not is_study(p)],
    package_dir={"": "lib"},
    cmdclass={"build_py": ToolsOnly},
)
