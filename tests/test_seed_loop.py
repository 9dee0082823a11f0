"""tools/seed_loop.py: notebook 01's cases in the seed's loop, summarised over fresh processes and
merged across device commands (a record per command, each process with its commit)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("seed_loop", ROOT / "tools" / "seed_loop.py")
seed_loop = importlib.util.module_from_spec(spec)
sys.modules["seed_loop"] = seed_loop
spec.loader.exec_module(seed_loop)

CASE = {"step": "noop", "kind": "mlp", "size": 64, "microbatches": 1, "family": "pmap", "donated": False}


def run(filter_ms: float, params_ms: float, commit: str) -> dict:
    """One process's diagnosis as the CLI writes it (the fields the tool keeps)."""
    return {
        "reader": "eqx.filter_pmap (yours)",
        "methods": {
            "eqx.filter_pmap (yours)": "filter_pmap",
            "jax.pmap on the partitioned state": "pmap_params",
        },
        "array_leaves_per_call": 392,
        "per_call_ms": [
            {"variant": "eqx.filter_pmap (yours)", "loop_ms": filter_ms, "host_ms": filter_ms - 1},
            {"variant": "jax.pmap on the partitioned state", "loop_ms": params_ms, "host_ms": params_ms - 1},
        ],
        "ratios_in_your_loop": [],
        "rounds": 3,
        "loop_calls": [50, 400],
        "git": {"commit": commit, "dirty": False},
    }


def test_each_path_is_the_median_over_processes_with_their_range():
    found = seed_loop.summarise(CASE, [run(20.0, 5.0, "a"), run(10.0, 5.0, "a"), run(25.0, 4.0, "a")], "pmap")
    fp = found["paths"]["filter_pmap"]
    its = fp["seed_loop_it_per_s"]
    assert (its["median"], its["n"], its["values"]) == (50.0, 3, [50.0, 100.0, 40.0])
    assert its["lo"] <= 40.0 and its["hi"] >= 100.0  # the rerun range: never narrower than the processes
    assert fp["over_baseline"]["median"] == pytest.approx(0.25)  # 50 it/s over 200, process by process
    assert found["paths"]["pmap_params"]["over_baseline"]["median"] == 1.0
    assert found["model"] == "mlp_depth64" and found["leaves"] == 392 and found["loop_calls"] == [50, 400]


def test_a_failed_process_is_kept_and_said_not_averaged():
    found = seed_loop.summarise(CASE, [run(20.0, 5.0, "a"), {"error": "RESOURCE_EXHAUSTED"}], "pmap")
    assert found["processes"] == 1 and found["failed"] == ["RESOURCE_EXHAUSTED"]
    assert found["paths"]["filter_pmap"]["seed_loop_it_per_s"]["n"] == 1


def test_records_of_two_commands_merge_into_one_with_each_commit(tmp_path):
    how = {"min_rounds": 3, "loop_seconds": 1.0}
    first = seed_loop.record([{**CASE, "runs": [run(20.0, 5.0, "aaa")]}], how, 100.0)
    second = seed_loop.record([{**CASE, "runs": [run(10.0, 5.0, "bbb")]}], how, 90.0)
    paths = [tmp_path / "1.json", tmp_path / "2.json"]
    for path, rec in zip(paths, (first, second)):
        path.write_text(json.dumps(rec))
    merged = seed_loop.merge(paths)
    (case,) = merged["cases"]
    assert case["processes"] == 2 and case["commits"] == ["aaa", "bbb"]
    assert case["paths"]["filter_pmap"]["seed_loop_it_per_s"]["median"] == pytest.approx(75.0)
    assert merged["seconds"] == 190.0
    paths[1].write_text(json.dumps({**second, "loop_seconds": 0.2}))
    with pytest.raises(ValueError, match="differ"):  # a shorter loop is another measurement
        seed_loop.merge(paths)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("noop:mlp", "expected step:kind:size"),
        ("noop:mlp:x", "expected step:kind:size"),
        ("noop:mlp:4:2:1", "expected step:kind:size"),
        ("eval:mlp:4", "step='eval' is not allowed: expected one of 'noop', 'train'"),
        ("noop:rnn:4", "kind='rnn' is not allowed"),
        ("noop:mlp:0", "size=0 is not allowed"),
    ],
)
def test_a_bad_case_is_named_before_any_process_starts(text, why):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"--case {text!r}")) as err:
        seed_loop.parse_case(text)
    assert why in str(err.value)


def test_a_line_per_leaf_needs_three_sizes_and_is_fitted_per_process_index():
    def case(size: int, leaves: int, extra_ms: list[float]) -> dict:
        runs = []
        for ms in extra_ms:
            one = run(10.0, 5.0, "a")
            one["per_call_ms"][0]["host_ms"] = 1.0 + ms  # filter_pmap's host time, the baseline's at 1.0
            one["per_call_ms"][1]["host_ms"] = 1.0
            one["array_leaves_per_call"] = leaves
            runs.append(one)
        return seed_loop.summarise({**CASE, "size": size}, runs, "pmap")

    # 40 and 50 us per leaf in the two processes, through 10, 100 and 1000 leaves
    cases = [case(s, n, [0.04 * n + 0.5, 0.05 * n + 0.5]) for s, n in ((1, 10), (8, 100), (64, 1000))]
    (line,) = seed_loop.lines(cases, "pmap").values()
    assert line["b_us_per_leaf"] == pytest.approx(45.0) and line["fits"] == 2
    assert line["b_us_per_leaf_lo"] <= 40.0 and line["b_us_per_leaf_hi"] >= 50.0
    assert line["a_ms"] == pytest.approx(0.5) and line["leaves"] == [10, 100, 1000]
    assert seed_loop.lines(cases[:2], "pmap") == {}  # two sizes make any line: none is drawn
