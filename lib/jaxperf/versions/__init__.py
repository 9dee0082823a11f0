"""Which Equinox release made ``filter_pmap`` cheaper? (equinox#192)

One isolated environment per Equinox release, built on demand from a committed
pin file (``pins/<release>.txt``: a full ``pip freeze``, ``==`` only, with a
``# python: 3.10`` header line) under the git-ignored ``.envs/`` folder, cached
and reused while the pin file's content is unchanged. Inside each environment
``bench_old.py`` (self-contained, Python 3.10 / jax 0.4.13 compatible) times the
no-op step three ways and prints one JSON document; this package gathers those
documents, tabulates per-pair ratios and differences, plots and summarises.

    matrix = versions.gather(["0.7.1", "0.13.8"], bench=versions.BenchConfig(repeats=5))
    table = versions.tabulate(matrix)
    fig, data = versions.plot_overhead_vs_release(table)

A release whose environment fails to build or import, or whose benchmark
fails, is reported in ``matrix.environments`` (and in the table) with its
error; the other releases still run.

One module per concern: ``releases`` (pin files), ``envs`` (interpreters and
environments), ``bench`` (the benchmark in a child interpreter, gathering),
``report`` (tables, figure, summary). Their public names are re-exported here.

``runahead`` asks a second question of the same environments (issue 21): which release
made ``eqx.filter_jit`` wait for every call (``bench_runahead.py`` in each, the verdict
from :mod:`jaxperf.runs_ahead`).
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from . import runahead
    from .bench import (
        BASELINE,
        BENCH_SCRIPT,
        MODELS,
        VARIANTS,
        BenchConfig,
        BenchmarkError,
        VersionMatrix,
        documents_table,
        gather,
        run_bench,
    )
    from .envs import (
        ENVS_DIR,
        STAMP_NAME,
        EnvStatus,
        _stamp,
        ensure_env,
        find_python,
    )  # _stamp: the tests fake a cached env
    from .figures import plot_overhead_vs_release, plot_runahead_vs_release
    from .releases import PINS_DIR, Release, available_releases, check_releases, read_pins, release_table
    from .report import summarize
    from .settings import VersionsSettings
    from .tables import EXTRA_MEASURES, display_table, tabulate

# Loaded on first use: importing this package (or its settings) imports no JAX.
__getattr__, __dir__ = exports(
    __name__,
    {
        "runahead": (".runahead", None),
        "BASELINE": (".bench", "BASELINE"),
        "BENCH_SCRIPT": (".bench", "BENCH_SCRIPT"),
        "MODELS": (".bench", "MODELS"),
        "VARIANTS": (".bench", "VARIANTS"),
        "BenchConfig": (".bench", "BenchConfig"),
        "BenchmarkError": (".bench", "BenchmarkError"),
        "VersionMatrix": (".bench", "VersionMatrix"),
        "documents_table": (".bench", "documents_table"),
        "gather": (".bench", "gather"),
        "run_bench": (".bench", "run_bench"),
        "ENVS_DIR": (".envs", "ENVS_DIR"),
        "STAMP_NAME": (".envs", "STAMP_NAME"),
        "EnvStatus": (".envs", "EnvStatus"),
        "_stamp": (".envs", "_stamp"),
        "ensure_env": (".envs", "ensure_env"),
        "find_python": (".envs", "find_python"),
        "plot_overhead_vs_release": (".figures", "plot_overhead_vs_release"),
        "plot_runahead_vs_release": (".figures", "plot_runahead_vs_release"),
        "PINS_DIR": (".releases", "PINS_DIR"),
        "Release": (".releases", "Release"),
        "available_releases": (".releases", "available_releases"),
        "check_releases": (".releases", "check_releases"),
        "read_pins": (".releases", "read_pins"),
        "release_table": (".releases", "release_table"),
        "summarize": (".report", "summarize"),
        "VersionsSettings": (".settings", "VersionsSettings"),
        "EXTRA_MEASURES": (".tables", "EXTRA_MEASURES"),
        "display_table": (".tables", "display_table"),
        "tabulate": (".tables", "tabulate"),
    },
)
