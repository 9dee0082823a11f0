"""Predict, then measure (issue 48): the CPU study's law applied to the TPU's cases, on synthetic
records (the device estimate stubbed: it compiles for a TPU with libtpu), and a measurement set
beside its prediction."""

import numpy as np
import pandas as pd
import pytest

from jaxperf_study.dispatch import predict
from jaxperf_study.dispatch.cost import Cell
from jaxperf_study.dispatch.models import ModelSpec


def _records(processes=3):
    """CPU records of the no-op MLPs: host CPU per call a + b * leaves per method (ms)."""
    line = {
        "pmap_params": (0.5, 0.02),
        "filter_pmap": (1.0, 0.05),
        "jit_params": (0.1, 0.01),
        "filter_jit": (0.2, 0.02),
    }
    rows = []
    for family, methods in (("pmap", ("pmap_params", "filter_pmap")), ("jit", ("jit_params", "filter_jit"))):
        for leaves in (14, 104, 392):
            for method in methods:
                a, b = line[method]
                for p in range(processes):
                    for r in range(4):
                        rows.append({"step": "noop", "kind": "mlp", "donated": False, "family": family, "method": method,
                                     "leaves": leaves, "repeat": r, "process": p, "cpu_s_per_call": (a + b * leaves) / 1e3})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def rows(monkeypatch):
    monkeypatch.setattr(
        predict, "device_estimate", lambda cell: (1.0, 3.0) if cell.step == "train" else (0.01, 0.05)
    )
    cells = [
        Cell("noop", ModelSpec("mlp", 64), False, "pmap"),
        Cell("train", ModelSpec("mlp", 16, microbatches=128), False, "jit"),
    ]
    return {
        (r["model"], r["method"]): r
        for r in predict.predict(_records(), {"filter_jit": "waits for each call"}, cells)
    }


def test_the_host_line_carries_and_the_pipelined_rate_is_the_slower_of_host_and_device(rows):
    noop = rows[("mlp_depth64", "filter_pmap")]
    assert noop["leaves"] == 392 and noop["host_ms"][1] == pytest.approx(1.0 + 0.05 * 392)
    lo, mid, hi = noop["host_ms"]
    assert lo == pytest.approx(mid * predict.HOST_SPEED[0]) and hi == pytest.approx(
        mid * predict.HOST_SPEED[1]
    )
    assert noop["bound"] == "host" and noop["loop_it_per_s"] == pytest.approx([1e3 / hi, 1e3 / lo])
    assert ("mlp_depth64", "packed_pmap") not in rows  # no CPU record of a path: no prediction


def test_a_path_that_waits_adds_its_host_time_to_the_device_time(rows):
    waits, runs_ahead = rows[("mlp_depth16_x128", "filter_jit")], rows[("mlp_depth16_x128", "jit_params")]
    host = waits["host_ms"]
    assert waits["waits"] and waits["loop_it_per_s"] == pytest.approx(
        [1e3 / (host[2] + 3.0), 1e3 / (host[0] + 1.0)]
    )
    device_bound = 1e3 / np.array([max(runs_ahead["host_ms"][2], 3.0), max(runs_ahead["host_ms"][0], 1.0)])
    assert runs_ahead["loop_it_per_s"] == pytest.approx(list(device_bound))


def test_a_measurement_is_set_beside_its_prediction_as_a_fold():
    prediction = {"made_utc": "2026-12-06T00:00:00+00:00", "cases": [
        {"step": "noop", "model": "m", "donated": False, "family": "pmap", "method": k, "loop_it_per_s": [100.0, 200.0], "bound": "host"}
        for k in ("a", "b", "c")]}  # fmt: skip
    measured = [
        {
            "step": "noop",
            "model": "m",
            "donated": False,
            "family": "pmap",
            "method": k,
            "loop_it_per_s": {"median": v},
        }
        for k, v in (("a", 150.0), ("b", 400.0), ("c", 50.0))
    ]
    found = predict.beside(measured, prediction)
    assert [r["fold"] for r in found["rows"]] == [1.0, 2.0, 0.5]
    assert found["inside"] == 1 and found["by_bound"]["host"] == {"n": 3, "inside": 1, "min": 0.5, "max": 2.0}
