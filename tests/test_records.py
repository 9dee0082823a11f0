"""records: files readable by others, a CSV and its sidecar checked against each
other when read, damaged pairs rejected with a message naming the file."""

from __future__ import annotations

import json
import os
import stat

import pandas as pd
import pytest

from jaxperf_study import records
from jaxperf_study.records import RecordsError, read_records, write_records

PROV = {"git": "abc", "parameters": {"quick": True}}


@pytest.fixture
def written(tmp_path):
    df = pd.DataFrame({"method": ["a", "b", "c"], "ms": [300.125, 12.5, 7.0]})
    return write_records(df, tmp_path / "timings", PROV), df


def test_round_trip_and_sidecar_counts(written):
    path, df = written
    back, prov = read_records(path)
    pd.testing.assert_frame_equal(back, df)
    assert prov == PROV
    meta = json.loads(path.with_suffix(".json").read_text())
    assert (meta["rows"], meta["columns"], meta["bytes"]) == (3, ["method", "ms"], path.stat().st_size)
    assert len(meta["sha256"]) == 64


def test_files_respect_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_records(pd.DataFrame({"x": [1]}), tmp_path / "r", PROV)
        md = records.write_text(tmp_path / "summary.md", "hi")
    finally:
        os.umask(old)
    for p in (path, path.with_suffix(".json"), md):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    assert not list(tmp_path.glob(".*.tmp"))


def _rewrite(path, data: bytes):
    path.write_bytes(data)


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda p: _rewrite(p, p.read_bytes()[:-4]), "does not match its sidecar"),  # cut mid-row
        (lambda p: _rewrite(p, b""), "empty file"),
        (lambda p: _rewrite(p, b"method,ms\n"), "does not match its sidecar"),  # header only
        (lambda p: _rewrite(p, p.read_bytes().replace(b"300.125", b"300.126")), "checksum differs"),
        (lambda p: p.unlink(), "missing"),
        (lambda p: p.with_suffix(".json").unlink(), "sidecar of timings.csv is missing"),
        (lambda p: _rewrite(p.with_suffix(".json"), b'{"rows": 3, "colu'), "not valid JSON"),
        (lambda p: _rewrite(p.with_suffix(".json"), b"[]"), "not a records sidecar"),
    ],
    ids=["truncated", "empty", "header-only", "edited", "no-csv", "no-sidecar", "cut-sidecar", "not-sidecar"],
)
def test_damaged_pairs_are_rejected_naming_the_file(written, damage, message):
    path, _ = written
    damage(path)
    with pytest.raises(RecordsError, match=message) as err:
        read_records(path)
    assert path.name in str(err.value) or path.with_suffix(".json").name in str(err.value)


def test_a_pair_from_two_writes_is_rejected(tmp_path):
    path = write_records(pd.DataFrame({"x": [1, 2]}), tmp_path / "r", PROV)
    sidecar = path.with_suffix(".json").read_bytes()
    write_records(pd.DataFrame({"x": [1, 2, 3]}), tmp_path / "r", PROV)
    path.with_suffix(".json").write_bytes(sidecar)  # new CSV, old sidecar: a torn publish
    with pytest.raises(RecordsError, match="r.csv: does not match its sidecar"):
        read_records(path)


@pytest.mark.parametrize(
    "csv,message",
    [(b"x,y\n1,2\n3", "cut short"), (b"x,y\n", "0 rows, but its sidecar says 2"), (b"x\n1\n2\n", "columns")],
)
def test_legacy_sidecars_without_checksum_are_still_checked(tmp_path, csv, message):
    path = tmp_path / "old.csv"
    path.write_bytes(csv)
    path.with_suffix(".json").write_text(json.dumps({"data": "old.csv", "columns": ["x", "y"], "rows": 2}))
    with pytest.raises(RecordsError, match=message):
        read_records(path)


def test_committed_results_still_read():
    from jaxperf.paths import PROJECT_ROOT

    pairs = [c for c in sorted((PROJECT_ROOT / "results").rglob("*.csv")) if c.with_suffix(".json").exists()]
    assert len(pairs) >= 20, "the committed results should hold record pairs to check"
    for csv in pairs:
        read_records(csv)  # raises RecordsError naming the file on any mismatch
