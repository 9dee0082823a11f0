"""Equinox's whole test suite unpatched and with the three diffs of ``results/equinox_patch/``,
on one tree (Equinox's main or a release), and the host CPU per call of Equinox's main beside
the pinned release.

    .venv/bin/python tools/equinox_patch_tests.py suite --checkout GIT --ref REF --label LABEL \
        --python PY [--scratch DIR] [--reuse]
    PY tools/equinox_patch_tests.py measure --main-tree DIR --main-patched-tree DIR [--rounds N]
    .venv/bin/python tools/equinox_patch_tests.py share [--processes 3] [--depths 8,64,132]

``suite``: from the checkout (a clone, or the git directory ``fetch github:patrick-kidger/equinox``
gives; the sdist on PyPI has no tests), ``equinox/``, ``tests/`` and ``pyproject.toml`` at ``REF``
are exported three times into ``DIR/LABEL/``: ``unpatched``; ``patched`` (the diffs applied in
order, source and tests, by ``jaxperf_study.dispatch.eqx_patch.diff``); ``tests_only`` (only the tests the diffs
add, to run them against the unpatched Equinox). Each suite runs with
``nice python -m pytest -q -p no:cacheprovider tests`` from its own folder, so ``import equinox``
is that copy (checked), under Equinox's own pytest settings (warnings are errors), with
``JAX_PLATFORMS=cpu``. ``PY`` must have jax, pytest, optax and beartype, and a numpy with which
that tree imports (Equinox's main needs numpy < 2.5 with jaxtyping 0.3.11: see
``results/equinox_patch/main-import-failure.md``). Each test whose outcome differs runs
``--reruns`` more times per tree. The report is stored under ``LABEL`` in
``results/equinox_patch/test_suite.json`` (other trees kept) and ``test_suite.md`` is rendered
from all of them. ``--reuse`` reads a run whose JUnit XML is already in the scratch folder.

``measure``: in one process, interleaved, the dispatching thread's CPU per blocked call of a no-op
step (MLP depth 64 + Adam state, 392 array leaves) through ``jax.jit``/``jax.pmap`` on the arrays,
and ``filter_jit``/``filter_pmap`` of the installed Equinox (the pinned release), of Equinox's main
(``--main-tree``, imported as ``equinox_main``), patched release (``jaxperf_study.dispatch.eqx_patch``) and
patched main (``--main-patched-tree``); pmap over 8 host devices. Each Equinox path uses a model
built by its own Equinox. Writes ``results/equinox_patch/main_vs_release.json`` and ``.md``.

``share``: the share of ``eqx.filter_pmap``'s extra host time over ``jax.pmap`` on the arrays that
the patched ``filter_pmap`` (``1-*.diff``) removes, beside the drop-in ``jaxperf.cached_filter_pmap``:
``(filter_pmap - variant) / (filter_pmap - jax.pmap on params)`` per round, from the dispatching
thread's CPU per blocked call of equinox#192's no-op step (an MLP of each ``--depths`` with its Adam
state; 8 forced host CPU devices, inputs already sharded), the four paths interleaved in one
process, in ``--processes`` fresh processes (``share --one`` each). Each path first computes the
same outputs as ``eqx.filter_pmap``. Writes ``results/equinox_patch/share_removed.json`` and ``.md``
only when every process succeeded.

``dropins``: Equinox's own ``tests/test_jit.py``, ``test_pmap.py`` and ``test_errors.py`` in an
unpatched tree with ``eqx.filter_jit`` and ``eqx.filter_pmap`` replaced by ``jaxperf.cached_filter_jit``
and ``jaxperf.cached_filter_pmap`` (a pytest plugin sets them before collection), compared with the
same files' outcomes in that tree's unpatched run. Writes ``results/equinox_patch/dropins.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
VERSIONS = (
    "import json, sys, importlib.metadata as m; print(json.dumps({'python': sys.version.split()[0], "
    "**{p: m.version(p) for p in ('jax', 'jaxlib', 'numpy', 'optax', 'beartype', 'jaxtyping', 'pytest')}}))"
)
#: why a test fails in both trees, by a piece of its message (checked in the runs this explains)
KNOWN_FAILURES = {
    "Explicitly requested dtype int64": (
        "jax 0.12 warns that an int64 ShapeDtypeStruct is truncated to int32 (x64 off), and "
        "Equinox's pytest settings turn warnings into errors"
    ),
    "Non-linear scaling detected": (
        "a timing test (runtime ratio of two buffer sizes), sensitive to load on this shared 2-core machine"
    ),
}


def _run(cmd: list[str], **kwargs: Any) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    return env


def export(checkout: Path, ref: str, into: Path) -> str:
    """Equinox at ``ref`` exported into ``into``; returns its commit."""
    git = ["git", f"--git-dir={checkout if (checkout / 'HEAD').is_file() else checkout / '.git'}"]
    commit = _run([*git, "rev-parse", f"{ref}^{{commit}}"]).strip()
    into.mkdir(parents=True)
    archive = subprocess.run(
        [*git, "archive", commit, "equinox", "tests", "pyproject.toml"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return commit


def run_suite(python: Path, tree: Path, tests: list[str] | None = None, name: str = "junit") -> dict:
    """``nice python -m pytest tests`` (or only ``tests``) in ``tree``, its JUnit XML written to
    ``tree/<name>.xml``: the outcomes. A run whose XML is already there is read, not run again."""
    from jaxperf_study.dispatch.eqx_patch import suite

    junit = tree / f"{name}.xml"
    if not junit.exists():
        where = _run([str(python), "-c", "import equinox; print(equinox.__file__)"], cwd=tree, env=_env())
        if not Path(where.strip()).resolve().is_relative_to(tree.resolve()):
            raise SystemExit(f"in {tree}, `import equinox` is {where.strip()}, not the exported copy")
        command = ["nice", str(python), *PYTEST[:-1], *(tests or PYTEST[-1:]), f"--junitxml={junit}"]
        subprocess.run(command, cwd=tree, env=_env(), check=False)
    return suite.outcomes(junit)


def suite_main(args: argparse.Namespace) -> None:
    from jaxperf_study import records
    from jaxperf_study.dispatch.eqx_patch import load, suite

    base = args.scratch / args.label
    trees = {run: base / run for run in (*suite.RUNS, "tests_only")}
    commit = ""
    for run, tree in trees.items():
        if tree.exists() and args.reuse:
            continue
        commit = export(args.checkout, args.ref, tree)
        if run != "unpatched":
            under = "" if run == "patched" else "tests/"
            for path, text in load.apply_all(lambda p, t=tree: (t / p).read_text(), under=under).items():
                (tree / path).write_text(text)
    if not commit:
        commit = (base / "commit").read_text().strip() if (base / "commit").exists() else args.ref
    (base / "commit").write_text(commit + "\n")
    environment = json.loads(_run([str(args.python), "-c", VERSIONS]))
    runs = {}
    for run in suite.RUNS:
        print(f"{args.label}: Equinox's suite, {run} ...", flush=True)
        runs[run] = run_suite(args.python, trees[run])
    added = sorted(set(runs["patched"]) - set(runs["unpatched"]))
    added_unpatched = run_suite(args.python, trees["tests_only"], added) if added else {}
    differ = sorted(
        t
        for t in set(runs["unpatched"]) & set(runs["patched"])
        if runs["unpatched"][t]["outcome"] != runs["patched"][t]["outcome"]
    )
    reruns: dict[str, dict[str, list[str]]] = {}
    for run in suite.RUNS:
        for k in range(args.reruns if differ else 0):
            for test, result in run_suite(args.python, trees[run], differ, f"rerun{k}").items():
                reruns.setdefault(test, {}).setdefault(run, []).append(result["outcome"])
    report = suite.report(
        runs,
        added_unpatched,
        equinox={"release": args.label, "ref": args.ref, "commit": commit},
        patches=[p.name for p in load.DIFF_PATHS],
        command="nice python " + " ".join(PYTEST) + " (JAX_PLATFORMS=cpu)",
        environment=environment,
        seconds={run: suite.junit_seconds(trees[run] / "junit.xml") for run in suite.RUNS},
        reruns=reruns,
        known_failures=KNOWN_FAILURES,
    )
    path = load.PATCH_DIR / "test_suite.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data = {"trees": {**data.get("trees", {}), args.label: report}}
    records.write_json(path, data)
    records.write_text(load.PATCH_DIR / "test_suite.md", suite.markdown_report(data))
    print(suite.markdown_report(data))


# ---------------------------------------------------------------- drop-ins

DROPIN_FILES = ("tests/test_jit.py", "tests/test_pmap.py", "tests/test_errors.py")
PLUGIN = """\
# Imports Equinox in a hook, after Equinox's pytest settings install jaxtyping's import hook.
def pytest_configure(config):
    import equinox, jaxperf

    equinox.filter_jit = jaxperf.cached_filter_jit
    equinox.filter_pmap = jaxperf.cached_filter_pmap


def pytest_sessionfinish(session):
    import json, os
    from jaxperf.fixes import jit_fallback_counts, pmap_fallback_counts

    counts = {"cached_filter_jit": jit_fallback_counts(), "cached_filter_pmap": pmap_fallback_counts()}
    with open(os.environ["JAXPERF_DROPIN_FALLBACKS"], "w") as f:
        json.dump(counts, f)
"""


def dropins_main(args: argparse.Namespace) -> None:
    from jaxperf_study import records
    from jaxperf_study.dispatch.eqx_patch import load, suite

    tree = args.tree
    plugin_dir = tree / "jaxperf_dropin_plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "jaxperf_dropins.py").write_text(PLUGIN)
    junit = tree / "dropins.xml"
    fallbacks = tree / "dropins_fallbacks.json"
    env = {**_env(), "PYTHONPATH": f"{plugin_dir}:{ROOT / 'lib'}", "JAXPERF_DROPIN_FALLBACKS": str(fallbacks)}
    command = ["nice", str(args.python), *PYTEST[:-1], "-p", "jaxperf_dropins", *DROPIN_FILES]
    if not junit.exists():  # else read (as `suite --reuse` does)
        subprocess.run([*command, f"--junitxml={junit}"], cwd=tree, env=env, check=False)
    with_dropins = suite.outcomes(junit)
    unpatched = {t: r for t, r in suite.outcomes(tree / "junit.xml").items() if t.startswith(DROPIN_FILES)}
    data = suite.report({"unpatched": unpatched, "patched": with_dropins}, files=list(DROPIN_FILES))
    # calls each drop-in handed to Equinox's own wrapper, by reason (the rest it handled itself)
    data["fallbacks"] = json.loads(fallbacks.read_text()) if fallbacks.exists() else None
    records.write_json(load.PATCH_DIR / "dropins.json", data)
    print(json.dumps({k: data[k] for k in ("counts", "changed", "fallbacks")}, indent=1))


# ---------------------------------------------------------------- measure


def _import_tree(name: str, tree: Path) -> Any:
    """The ``equinox`` package in ``tree`` imported as ``name`` (beside the installed one)."""
    spec = importlib.util.spec_from_file_location(
        name, tree / "equinox" / "__init__.py", submodule_search_locations=[str(tree / "equinox")]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _ratio(stats: dict[str, float], digits: int = 2) -> str:
    """A ratio as ``0.44× [0.43, 0.48]`` (median [interquartile range])."""
    return f"{stats['median']:.{digits}f}× [{stats['q25']:.{digits}f}, {stats['q75']:.{digits}f}]"


def measure_main(args: argparse.Namespace) -> None:
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import time

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    import pandas as pd

    from jaxperf import markdown
    from jaxperf_study import records
    from jaxperf_study.dispatch.eqx_patch import load

    patched = load.patched_equinox()
    equinoxes = {
        f"{eqx.__version__}": (eqx, eqx.filter_jit, eqx.filter_pmap),
        "main": (mod := _import_tree("equinox_main", args.main_tree), mod.filter_jit, mod.filter_pmap),
        f"{eqx.__version__} patched": (eqx, patched.filter_jit, patched.filter_pmap),
        "main patched": (
            mod2 := _import_tree("equinox_main_patched", args.main_patched_tree),
            mod2.filter_jit,
            mod2.filter_pmap,
        ),
    }
    devices = jax.devices()
    n = len(devices)

    def step(model: Any, x: Any, opt_state: Any) -> Any:  # equinox#192's no-op step
        return 0.0, model, opt_state

    def inputs(package: Any) -> tuple[Any, Any, Any]:
        model = package.nn.MLP(32, 32, 32, depth=64, key=jax.random.PRNGKey(0))
        opt_state = optax.adam(1e-3).init(package.filter(model, package.is_array))
        return model, jnp.ones((1, 32)), opt_state

    stack = lambda tree: jax.tree.map(lambda a: jnp.stack([a] * n) if eqx.is_array(a) else a, tree)  # noqa: E731
    model, x, opt_state = inputs(eqx)
    params, static = eqx.partition(model, eqx.is_array)
    leaves = len(jax.tree.leaves((params, x, opt_state)))

    def on_params(p: Any, x: Any, s: Any) -> Any:
        return eqx.filter(step(eqx.combine(p, static), x, s), eqx.is_array)

    paths: dict[str, tuple[Any, tuple[Any, ...]]] = {
        "jax.jit on params": (jax.jit(on_params), (params, x, opt_state)),
        "jax.pmap on params": (jax.pmap(on_params, devices=devices), stack((params, x, opt_state))),
    }
    for name, (package, filter_jit, filter_pmap) in equinoxes.items():
        args_ = inputs(package)
        paths[f"filter_jit, equinox {name}"] = (filter_jit(step), args_)
        paths[f"filter_pmap, equinox {name}"] = (filter_pmap(step, devices=devices), stack(args_))
    for fn, a in paths.values():
        jax.block_until_ready(fn(*a))  # compiled
    rows = []
    names = list(paths)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn, a = paths[name]
            start = time.thread_time()
            for _ in range(args.calls):
                jax.block_until_ready(fn(*a))
            rows.append({"round": r, "path": name, "cpu_ms": (time.thread_time() - start) * 1e3 / args.calls})
    df = pd.DataFrame(rows)
    wide = df.pivot(index="round", columns="path", values="cpu_ms")
    summary = []
    for name in names:
        base = "jax.pmap on params" if "pmap" in name else "jax.jit on params"
        ratio = wide[name] / wide[base]
        q = lambda s, p: float(np.percentile(s, p))  # noqa: E731
        summary.append(
            {
                "path": name,
                "cpu_ms_median": q(wide[name], 50),
                "cpu_ms_q25": q(wide[name], 25),
                "cpu_ms_q75": q(wide[name], 75),
                "vs_jax_median": q(ratio, 50),
                "vs_jax_q25": q(ratio, 25),
                "vs_jax_q75": q(ratio, 75),
            }
        )
    table = pd.DataFrame(summary)
    versions = {
        "equinox": eqx.__version__,
        "jax": jax.__version__,
        "numpy": np.__version__,
        "optax": optax.__version__,
    }
    data = {
        "leaves": leaves,
        "devices": n,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "main_commit": args.main_commit,
        "versions": versions,
        "summary": summary,
        "timings": rows,
    }
    records.write_json(load.PATCH_DIR / "main_vs_release.json", data)
    shown = pd.DataFrame(
        {
            "path": table["path"],
            "host CPU, ms per call": [
                markdown.fmt_stat({k: r[f"cpu_ms_{k}"] for k in ("median", "q25", "q75")}, 2)
                for _, r in table.iterrows()
            ],
            "per round, / its JAX baseline": [
                _ratio({k: r[f"vs_jax_{k}"] for k in ("median", "q25", "q75")}) for _, r in table.iterrows()
            ],
        }
    )
    text = (
        "# Equinox's main beside the pinned release: host CPU per call\n\n"
        f"The dispatching thread's CPU time per blocked call (`time.thread_time`) of equinox#192's no-op step on "
        f"an MLP (depth 64) with its Adam state, {leaves} array leaves; pmap over {n} forced host CPU devices; "
        f"one process, the paths interleaved (rotated order), {args.rounds} rounds of {args.calls} calls; "
        f"median [interquartile range] over rounds; each Equinox path with a model built by its own Equinox. "
        f"Equinox main is `{args.main_commit[:12]}`; patched: the three diffs of this folder. "
        f"{', '.join(f'{k} {v}' for k, v in versions.items())}; python {sys.version.split()[0]}.\n\n"
        + markdown.table(shown)
        + "\n\nMachine: a shared 2-core VM with other jobs running (Equinox's test suites among them), "
        "so absolute numbers move between runs; the ratios inside one round are steadier.\n"
    )
    records.write_text(load.PATCH_DIR / "main_vs_release.md", text)
    print(text)


# ---------------------------------------------------------------- share removed

SHARE_PATHS = (
    "jax.pmap on params",
    "eqx.filter_pmap",
    "eqx.filter_pmap, patched",
    "jaxperf.cached_filter_pmap",
)
#: the paths whose share of filter_pmap's extra host time removed is reported, by their ``kind`` in the record
SHARE_OF = {"patch": SHARE_PATHS[2], "dropin": SHARE_PATHS[3]}


def share_one(depths: list[int], rounds: int, calls: int) -> list[dict[str, Any]]:
    """In this process: per MLP depth, ``rounds`` interleaved rounds of ``calls`` blocked calls of
    each of :data:`SHARE_PATHS` (the dispatching thread's CPU ms per call). Raises AssertionError
    naming a path whose outputs differ from ``eqx.filter_pmap``'s."""
    import time

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    import jaxperf
    from jaxperf import timing
    from jaxperf_study.dispatch.eqx_patch import load

    devices = jax.devices()
    put = jax.pmap(lambda tree: tree, devices=devices)

    def sharded(tree: Any) -> Any:  # each array stacked over the devices, as a pmap's outputs are
        arrays, rest = eqx.partition(tree, eqx.is_array)
        return eqx.combine(put(jax.tree.map(lambda a: jnp.stack([a] * len(devices)), arrays)), rest)

    def step(model: Any, x: Any, opt_state: Any) -> Any:  # equinox#192's no-op step
        return 0.0, model, opt_state

    rows = []
    for depth in depths:
        model = eqx.nn.MLP(32, 32, 32, depth=depth, key=jax.random.PRNGKey(0))
        opt_state = optax.adam(1e-3).init(eqx.filter(model, eqx.is_array))
        params, static = eqx.partition(model, eqx.is_array)
        args = sharded((model, jnp.ones((1, 32)), opt_state))
        leaves = len(jax.tree.leaves((params, args[1], opt_state)))

        def on_params(p: Any, x: Any, s: Any, static: Any = static) -> Any:
            return eqx.filter(step(eqx.combine(p, static), x, s), eqx.is_array)

        paths = {
            SHARE_PATHS[0]: (
                jax.pmap(on_params, devices=devices),
                (eqx.filter(args[0], eqx.is_array), *args[1:]),
            ),
            SHARE_PATHS[1]: (eqx.filter_pmap(step, devices=devices), args),  # type: ignore[call-arg]
            SHARE_PATHS[2]: (load.patched_filter_pmap(step, devices=devices), args),
            SHARE_PATHS[3]: (jaxperf.cached_filter_pmap(step, devices=devices), args),
        }
        expected = jax.block_until_ready(paths[SHARE_PATHS[1]][0](*args))
        for name, (fn, a) in paths.items():
            got = jax.block_until_ready(fn(*a))
            want = eqx.filter(expected, eqx.is_array) if name == SHARE_PATHS[0] else expected
            same = jax.tree.structure(got) == jax.tree.structure(want) and all(
                np.array_equal(g, w) if eqx.is_array(w) else g == w
                for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want))
            )
            if not same:
                raise AssertionError(f"{name} at depth {depth}: its outputs differ from eqx.filter_pmap's")
            jax.block_until_ready(fn(*a))  # a second warm call
        names = list(paths)
        for r in range(rounds):
            for name in timing.williams(names, r):
                fn, a = paths[name]
                start = time.thread_time()
                for _ in range(calls):
                    jax.block_until_ready(fn(*a))
                rows.append(
                    {
                        "depth": depth,
                        "leaves": leaves,
                        "round": r,
                        "path": name,
                        "cpu_ms": (time.thread_time() - start) * 1e3 / calls,
                    }  # fmt: skip
                )
    return rows


def _over_processes(per_round: Any) -> dict[str, Any]:
    """A per-round series indexed by (process, round): the median of each process's median, their
    range (``lo``, ``hi``) and each (``per_process``)."""
    per_process = per_round.groupby(level="process").median()
    return {
        "median": float(per_process.median()),
        "lo": float(per_process.min()),
        "hi": float(per_process.max()),
        "per_process": [float(v) for v in per_process],
    }


def share_stats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (leaves, path of :data:`SHARE_OF`): the share removed, ``(filter_pmap - path) /
    (filter_pmap - jax.pmap on params)`` round by round, and each path's CPU ms per call, both
    :func:`_over_processes`."""
    import pandas as pd

    df = pd.DataFrame(rows)
    out = []
    for (depth, leaves), part in df.groupby(["depth", "leaves"]):
        wide = part.pivot_table(index=["process", "round"], columns="path", values="cpu_ms")
        base, slow = wide[SHARE_PATHS[0]], wide[SHARE_PATHS[1]]
        for kind, path in SHARE_OF.items():
            out.append(
                {
                    "depth": int(depth),
                    "leaves": int(leaves),
                    "kind": kind,
                    "path": path,
                    "share_removed": _over_processes((slow - wide[path]) / (slow - base)),
                    "cpu_ms": {p: _over_processes(wide[p]) for p in (*SHARE_PATHS[:2], path)},
                }
            )
    return out


def share_main(args: argparse.Namespace) -> None:
    if args.one:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
        os.environ["JAX_PLATFORMS"] = "cpu"
        print(json.dumps(share_one(args.depths, args.rounds, args.calls)))
        return
    from jaxperf import markdown
    from jaxperf.backend import package_versions
    from jaxperf_study import provenance, records
    from jaxperf_study.dispatch.eqx_patch import diff, load

    rows: list[dict[str, Any]] = []
    for process in range(args.processes):
        print(f"share: process {process + 1} of {args.processes} ...", flush=True)
        command = [sys.executable, str(Path(__file__).resolve()), "share", "--one",
                   "--depths", ",".join(map(str, args.depths)), "--rounds", str(args.rounds),
                   "--calls", str(args.calls), "--devices", str(args.devices)]  # fmt: skip
        out = _run(["nice", *command], env={**_env(), "PYTHONPATH": str(ROOT / "lib")})
        rows += [{**row, "process": process} for row in json.loads(out.strip().splitlines()[-1])]
    stats = share_stats(rows)
    pmap_patch = diff.parse(load.DIFF_PATHS[0].read_text())
    size = {
        "source_lines_changed": sum(
            p.added + p.removed for p in pmap_patch if not p.path.startswith("tests/")
        ),
        "test_lines_added": sum(p.added for p in pmap_patch if p.path.startswith("tests/")),
        "diff": load.DIFF_PATHS[0].name,
    }
    versions = package_versions(("jax", "jaxlib", "equinox", "numpy", "optax"))
    data = {
        "what": "share of eqx.filter_pmap's extra host CPU per call over jax.pmap on params that each path removes",
        "backend": "cpu",
        "devices": args.devices,
        "processes": args.processes,
        "rounds": args.rounds,
        "calls_per_round": args.calls,
        "versions": {**versions, "python": sys.version.split()[0]},
        "git": provenance.git_commit(),
        "patch": size,
        "shares": stats,
        "timings": rows,
    }
    records.write_json(load.PATCH_DIR / "share_removed.json", data)
    import pandas as pd

    ranged = lambda v, f: f"{v['median']:{f}} [{v['lo']:{f}}, {v['hi']:{f}}]"  # noqa: E731
    shown = pd.DataFrame(
        [
            {
                "array leaves": s["leaves"],
                "path": s["path"],
                "share removed": ranged(s["share_removed"], ".0%"),
                "the path, ms": ranged(s["cpu_ms"][s["path"]], ".2f"),
                f"{SHARE_PATHS[1]}, ms": ranged(s["cpu_ms"][SHARE_PATHS[1]], ".2f"),
                f"{SHARE_PATHS[0]}, ms": ranged(s["cpu_ms"][SHARE_PATHS[0]], ".2f"),
            }
            for s in stats
        ]
    )
    text = (
        "# The share of `eqx.filter_pmap`'s extra host time that the patch removes\n\n"
        f"`{size['diff']}` ({size['source_lines_changed']} lines of `equinox/_vmap_pmap.py` changed, "
        f"{size['test_lines_added']} lines of tests added) beside the drop-in `jaxperf.cached_filter_pmap`. "
        "Share removed = (`eqx.filter_pmap` − the path) / (`eqx.filter_pmap` − `jax.pmap` on params), each the "
        "dispatching thread's CPU time per blocked call (`time.thread_time`) in the same round; per process "
        f"the median over its {args.rounds} rounds, then the median and range of those over "
        f"{args.processes} fresh processes. Equinox#192's no-op step on an MLP (width 32) with its Adam state; "
        f"pmap over {args.devices} forced host CPU devices, the inputs already sharded over them (as a loop "
        f"that feeds each call's outputs to the next has them); the four paths interleaved (Williams order), "
        f"{args.calls} calls per round; each path first computed the same outputs as `eqx.filter_pmap`. "
        "Every column: median [range over processes] of each process's median. "
        f"{', '.join(f'{k} {v}' for k, v in data['versions'].items())}; project commit "
        f"`{data['git']['commit'][:12]}`{' (with uncommitted changes)' if data['git']['dirty'] else ''}.\n\n"
        + markdown.table(shown)
        + "\n\nMachine: a shared 2-core VM with other jobs running, so absolute ms move between processes; "
        "the share, taken round by round, is steadier.\n"
    )
    records.write_text(load.PATCH_DIR / "share_removed.md", text)
    print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("suite", help="Equinox's whole suite, unpatched and patched, on one tree")
    s.add_argument("--checkout", type=Path, help="Equinox's repository: a clone or its git directory")
    s.add_argument("--ref", default="v0.13.8", help="the commit or tag to test (default v0.13.8)")
    s.add_argument("--label", default="0.13.8", help="the tree's name in the report")
    s.add_argument(
        "--python", type=Path, required=True, help="an interpreter with jax, pytest, optax, beartype"
    )
    s.add_argument("--scratch", type=Path, default=ROOT / ".scratch" / "equinox_patch_tests")
    s.add_argument("--reruns", type=int, default=3, help="runs of each test whose outcome differs, per tree")
    s.add_argument("--reuse", action="store_true", help="resume in a --scratch left by an earlier run")
    m = sub.add_parser("measure", help="host CPU per call: Equinox's main beside the pinned release")
    m.add_argument("--main-tree", type=Path, required=True, help="a folder with Equinox main's equinox/")
    m.add_argument("--main-patched-tree", type=Path, required=True, help="the same with the diffs applied")
    m.add_argument("--main-commit", default="", help="main's commit, for the report")
    m.add_argument("--rounds", type=int, default=15)
    m.add_argument("--calls", type=int, default=10)
    sh = sub.add_parser("share", help="the share of filter_pmap's extra host time the patch removes")
    sh.add_argument("--processes", type=int, default=3, help="fresh processes (default 3)")
    sh.add_argument("--depths", type=lambda v: [int(d) for d in v.split(",")], default=[8, 64, 132])
    sh.add_argument("--rounds", type=int, default=15)
    sh.add_argument("--calls", type=int, default=10)
    sh.add_argument("--devices", type=int, default=8)
    sh.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    d = sub.add_parser("dropins", help="Equinox's jit/pmap/errors tests with the drop-ins patched in")
    d.add_argument(
        "--tree", type=Path, required=True, help="an unpatched tree that `suite` ran (its junit.xml)"
    )
    d.add_argument("--python", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "dropins":
        dropins_main(args)
    elif args.command == "share":
        share_main(args)
    elif args.command == "suite":
        if args.checkout is None:
            parser.error(
                "--checkout PATH is required: a clone of https://github.com/patrick-kidger/equinox (or the "
                "git directory `fetch github:patrick-kidger/equinox` gives). The Equinox sdist on PyPI has no tests."
            )
        suite_main(args)
    else:
        measure_main(args)


if __name__ == "__main__":
    main()
