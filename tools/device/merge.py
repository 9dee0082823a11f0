#!/usr/bin/env python3
"""Merge one device command's results of a study into the committed ones (tools/device/unpack.sh;
standard library only, as unpack.sh runs before any environment exists).

    python3 tools/device/merge.py COMMITTED_STUDY_DIR NEW_STUDY_DIR

A study's run on a device may be split into parts, one device command each, and each part is run
twice or more: every command of the same code adds its records to the committed ones, so
the study is told from all of them (``./run_all.sh render`` redraws its summary, figures and
executed notebook from the merged records). Each record (a CSV with its sidecar) gains a ``run``
column (0, 1, ... in the order the commands were unpacked), and its ``process`` numbers are made
unique over the runs (a record measured in one process gets the run's number as its process), so
that a number measured in every run's processes is stated over all of them. summary.json keeps
the newest command's, with ``provenance.runs`` listing every command merged (its part, time,
processes, and the commit and clean flag it ran from, as the run wrote them: ``commit_source``
"run"; one filled in from a log says "log") and ``provenance.parameters.part`` emptied: the merged
result is the study's, whole.

Runs merge when they measured the same code (:func:`same_code`: one commit, or commits between
which no code that made the result changed, as when a rerun is made after the first run's results
were committed); a command of changed code replaces what was committed (earlier runs no longer
hold). Prints ``merged`` or ``replaced``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


def _commit(summary: Path) -> str | None:
    try:
        return json.loads(summary.read_text()).get("provenance", {}).get("git", {}).get("commit")
    except (OSError, ValueError):
        return None


def _read(csv_path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with csv_path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _write(csv_path: Path, columns: list[str], rows: list[dict[str, str]], provenance: dict) -> None:
    """The CSV and its sidecar as jaxperf_study.records.write_records writes them."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="raise")
    writer.writeheader()
    writer.writerows({c: row.get(c, "") for c in columns} for row in rows)
    data = out.getvalue().encode()
    sidecar = {
        "data": csv_path.name,
        "columns": columns,
        "rows": len(rows),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "provenance": provenance,
    }
    csv_path.write_bytes(data)
    csv_path.with_suffix(".json").write_text(json.dumps(sidecar, indent=2) + "\n")


def _max_process(rows: list[dict[str, str]]) -> int:
    return max((int(float(r["process"])) for r in rows if r.get("process", "") != ""), default=-1)


def merge_records(old: Path, new: Path, run: int, offset: int) -> None:
    """``new``'s rows (run ``run``, processes shifted by ``offset``) appended to ``old``'s, in place."""
    old_cols, old_rows = _read(old)
    new_cols, new_rows = _read(new)
    for row in old_rows:
        row.setdefault("run", "0")
        if not row.get("process"):
            row["process"] = row["run"]
    for row in new_rows:
        row["run"] = str(run)
        row["process"] = str(offset + int(float(row["process"]))) if row.get("process") else str(run)
    columns = list(dict.fromkeys([*old_cols, *new_cols, "process", "run"]))
    provenance = json.loads(new.with_suffix(".json").read_text()).get("provenance", {})
    _write(old, columns, old_rows + new_rows, provenance)


def same_code(committed: Path, incoming: Path) -> bool:
    """Whether the two runs measured the same code: one commit, or two commits between which no
    file that made the committed result changed its code (run_all's freshness rule,
    tools/runall/fresh.py: results, README and docstrings are not code), so that a rerun made
    after the first run's results were committed is merged with them."""
    old, new = _commit(committed / "summary.json"), _commit(incoming / "summary.json")
    if old is None or new is None:
        return False
    if old == new:
        return True
    sys.path.insert(0, str(PROJECT / "tools"))
    from runall import fresh

    summary = json.loads((committed / "summary.json").read_text())
    notebooks = [
        p.relative_to(PROJECT).as_posix()
        for p in sorted((PROJECT / "notebooks").glob("*.ipynb"))
        if summary.get("study") in fresh.studies(p.read_text())
    ]
    files = [*fresh.measuring(summary.get("provenance", {}).get("code", [])), *notebooks]
    try:
        return all(fresh.changed_files(PROJECT, c, files, strict=True) == [] for c in (old, new))
    except fresh.moves.WrongPython as e:  # it would replace runs a declared refactor keeps
        sys.exit(f"merge.py: cannot tell whether {incoming} measured the code of {committed}: {e}")


def merge(committed: Path, incoming: Path) -> str:
    """Lay ``incoming`` (one command's study folder) into ``committed``: merged or replaced."""
    if not (committed / "summary.json").is_file() or not same_code(committed, incoming):
        if committed.exists():
            shutil.rmtree(committed)
        shutil.copytree(incoming, committed)
        _note_run(committed / "summary.json", [], incoming)
        return "replaced"
    before = json.loads((committed / "summary.json").read_text())
    runs = list(before.get("provenance", {}).get("runs", []))
    run = len(runs)
    offset = 0
    for csv_path in committed.glob("*.csv"):
        if csv_path.with_suffix(".json").is_file():
            offset = max(offset, _max_process(_read(csv_path)[1]) + 1)
    for csv_path in sorted(incoming.glob("*.csv")):
        target = committed / csv_path.name
        if not csv_path.with_suffix(".json").is_file():  # not a record: the newest stands
            shutil.copy2(csv_path, target)
            continue
        if target.is_file() and target.with_suffix(".json").is_file():
            merge_records(target, csv_path, run, offset)
        else:
            columns, rows = _read(csv_path)
            for row in rows:
                row["run"] = str(run)
                row["process"] = str(offset + int(float(row["process"]))) if row.get("process") else str(run)
            provenance = json.loads(csv_path.with_suffix(".json").read_text()).get("provenance", {})
            _write(target, list(dict.fromkeys([*columns, "process", "run"])), rows, provenance)
    shutil.copy2(incoming / "summary.json", committed / "summary.json")
    _note_run(committed / "summary.json", runs, incoming)
    return "merged"


def _note_run(summary: Path, runs: list[dict], incoming: Path) -> None:
    """summary.json's provenance with this command (its part, time, processes, commit and clean
    flag) added to ``runs``, its part emptied."""
    data = json.loads(summary.read_text())
    prov = data.setdefault("provenance", {})
    params = prov.setdefault("parameters", {})
    git = prov.get("git", {})
    runs = [*runs, {"timestamp_utc": prov.get("timestamp_utc"), "part": params.get("part", ""),
                    "processes": params.get("processes"), "commit": git.get("commit"),
                    "dirty": git.get("dirty"), "commit_source": git.get("commit_source", "run")}]  # fmt: skip
    prov["runs"] = runs
    params["part"] = ""
    summary.write_text(json.dumps(data, indent=2) + "\n")


def whole(notebook: Path) -> None:
    """An executed notebook's papermill parameters without ``part``: ``./run_all.sh render`` injects
    what the published copy ran with, and the merged records are the study's, whole."""
    data = json.loads(notebook.read_text())
    params = data.get("metadata", {}).get("papermill", {}).get("parameters", {})
    if params.pop("part", None) is not None:
        notebook.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--whole"] and len(sys.argv) == 3:
        whole(Path(sys.argv[2]))
    elif len(sys.argv) == 3:
        print(merge(Path(sys.argv[1]), Path(sys.argv[2])))
    else:
        sys.exit("usage: merge.py COMMITTED_STUDY_DIR NEW_STUDY_DIR | merge.py --whole EXECUTED.ipynb")
