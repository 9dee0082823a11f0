"""The device run's report: what each part measured, joined, in ``results/<backend>/run/``.

Runs after the parts, on the CPU (it reads records, starts no device):

- ``compile_compare``: per (form, T) of the reporter's kernel, the real GPU
  compile (part a: lower + compile of the jitted ``pallas_call``) beside the
  reporter's-harness compile (part b: first call - second call);
- ``triton_vs_mosaic_gpu``: per (form, T) of the reporter's kernel, ms per call and compile
  on Triton (part a) beside the kernel written for Mosaic GPU (part d);
- ``summary.json``/``summary.md``: every part's status and time, the
  seed-format GPU column beside the reporter's, the two tables, the versions
  that ran and where they differ from the pins.

A dry run (CPU, interpreter) writes the same files under ``results/cpu/run/``,
saying it measured no GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from .. import pages, provenance, records
from ..jax20909 import vocab
from .settings import PARTS

KEYS = ["variant", "T"]


def _read(path: Path) -> tuple[pd.DataFrame | None, dict[str, Any]]:
    try:
        return records.read_records(path)
    except (records.RecordsError, OSError):
        return None, {}


def _part_status(run_dir: Path) -> list[dict[str, Any]]:
    """Each part's outcome: its own JSON when it finished, else the shell's exit code."""
    shell: dict[str, dict[str, str]] = {}
    tsv = run_dir / "parts.tsv"
    if tsv.exists():
        for line in tsv.read_text().splitlines():
            part, rc, seconds, *_ = (line.split("\t") + ["", "", ""])[:3]
            shell[part] = {"rc": rc, "seconds": seconds}
    out = []
    for part in PARTS:
        path = run_dir / f"{part}.json"
        info = json.loads(path.read_text()) if path.exists() else {}
        rc, wall_s = shell.get(part, {}).get("rc", ""), shell.get(part, {}).get("seconds", "")
        status = info.get("status") or ("killed at its time limit" if rc in ("124", "137") else "did not run")
        out.append(dict(part=part, status=status, exit_code=rc, wall_s=wall_s, budget_s=info.get("budget_s")))
    return out


def compile_table(results: Path) -> pd.DataFrame:
    """Per (variant, T) of the seed kernel this run measured: its compile (lower + compile of
    the jitted ``pallas_call``) and the harness' compile (first - second call)."""
    variants, _ = _read(results / "loops" / "seed_variants")
    harness, _ = _read(results / "loops" / "harness")
    frames = []
    if variants is not None and "compile_ms" in variants:
        timed = variants[variants["status"] == "timed"]
        total = timed["lower_ms"] + timed["compile_ms"]
        frames.append(timed.assign(run_lower_plus_compile_ms=total)[[*KEYS, "run_lower_plus_compile_ms"]])
    if harness is not None:
        frames.append(harness[[*KEYS, "compile_ms"]].rename(columns={"compile_ms": "run_harness_compile_ms"}))
    if not frames:
        return pd.DataFrame(columns=KEYS)
    out = frames[0]
    for frame in frames[1:]:
        out = out.merge(frame, on=KEYS, how="outer")
    return out.sort_values(["variant", "T"], key=vocab.variant_sort_key).reset_index(drop=True)


def sweep_table(results: Path, kernel: str) -> pd.DataFrame | None:
    """Part a for ``kernel``: median ms per kernel call per T (rows) and variant (columns)."""
    head, _ = _read(results / "loops" / f"{kernel}_headline")
    if head is None or head.empty:
        return None
    table = head.pivot_table(index="T", columns="variant", values="ms_per_call", aggfunc="median")
    order = vocab.variant_order(vocab.parse_variant(v) for v in table.columns)
    return table[order].reset_index()


def backends_table(results: Path) -> pd.DataFrame | None:
    """Per (T, variant) of the reporter's kernel: ms per call and compile on Pallas' default
    backend (Triton, part a) beside the same kernel written for Mosaic GPU (part e)."""
    frames = []
    for name, label in (("seed", "Triton"), ("mosaic_gpu", "Mosaic GPU")):
        head, _ = _read(results / "loops" / f"{name}_headline")
        if head is not None and len(head):
            cols = {"ms_per_call": f"{label} ms per call", "compile_ms": f"{label} compile ms"}
            keep = [c for c in cols if c in head]
            frames.append(head[[*KEYS, *keep]].rename(columns=cols))
    if len(frames) < 2:
        return frames[0] if frames else None
    out = frames[0].merge(frames[1], on=KEYS, how="outer")
    if "Triton ms per call" in out and "Mosaic GPU ms per call" in out:
        out["Mosaic GPU / Triton"] = out["Mosaic GPU ms per call"] / out["Triton ms per call"]
    return out.sort_values(["T", "variant"], key=vocab.variant_sort_key).reset_index(drop=True)


def dispatch_table(results: Path) -> pd.DataFrame | None:
    """Part d: median it/s per (step, model, leaves) and path (its study name)."""
    timings, _ = _read(results / "dispatch" / "timings")
    if timings is None or timings.empty:
        return None
    keys = ["step", "model", "leaves"]
    table = timings.pivot_table(index=keys, columns="method", values="loop_it_per_s", aggfunc="median")
    return table.reset_index()


def _provenance(results: Path, run_dir: Path) -> dict[str, Any]:
    """The provenance of the first record a part wrote (backend, device, versions)."""
    for part in PARTS:
        path = run_dir / f"{part}.json"
        if path.exists():
            prov = json.loads(path.read_text()).get("provenance")
            if prov:
                return {**prov, "derived_by": "jaxperf_study.gpu.report (joins the parts' records)"}
    return {"backend": "unknown", "derived_by": "jaxperf_study.gpu.report: no part finished"}


def _md_section(title: str, df: pd.DataFrame | None, empty: str) -> list[str]:
    body = pages.table(df) if df is not None and len(df) else f"_{empty}_"
    return [f"## {title}", "", body, ""]


def write(output_root: Path, backend: str, *, dry: bool) -> Path:
    """Write the run's joined tables and summary under ``<output_root>/results/<backend>/run/``."""
    results = Path(output_root) / "results" / backend
    run_dir = results / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    prov = _provenance(results, run_dir)
    parts = _part_status(run_dir)
    compiles = compile_table(results)
    records.write_records(compiles, run_dir / "compile_compare", prov)
    backends = backends_table(results)
    if backends is not None:
        records.write_records(backends, run_dir / "triton_vs_mosaic_gpu", prov)
    seed_table, _ = _read(results / "loops" / "seed_table")
    device = f"{prov.get('device_count', '?')} x {prov.get('device_kind', '?')} ({prov.get('backend', '?')})"
    claim = (
        "**Dry run on a CPU (Pallas interpret mode, tiny sizes): it proves the script, it measured no GPU.**"
        if dry
        else f"Measured on {device}."
    )
    versions = prov.get("versions_vs_pins", {})
    sections = [
        *_md_section("Parts of the run", pd.DataFrame(parts), "no part ran"),
        *_md_section("The reporter's table, this device beside his A6000", seed_table, "not measured"),
        *_md_section(
            "Loop sweep, reporter's kernel: ms per kernel call", sweep_table(results, "seed"), "not measured"
        ),
        *_md_section(
            "Mosaic GPU (Hopper's Pallas backend), reporter's kernel: ms per kernel call",
            sweep_table(results, "mosaic_gpu"),
            "not measured",
        ),
        *_md_section("The reporter's kernel on Triton and on Mosaic GPU", backends, "not measured"),
        *_md_section(
            "Loop sweep, attention: ms per kernel call", sweep_table(results, "attention"), "not measured"
        ),
        *_md_section("Compile on the device", compiles, "not measured"),
        *_md_section(
            "Dispatch on one device: it/s in a loop that blocks once at its end (median)",
            dispatch_table(results),
            "not measured",
        ),
        "## Versions that ran, against the pins",
        "",
        *[f"- {line}" for line in versions.get("differ_from_pins", [])],
        "",
    ]
    done = [p["part"] for p in parts if p.get("status") == "ok"] if parts and "part" in parts[0] else []
    bullets = [
        f"- **{claim}**",
        f"- **Parts that finished:** {', '.join(done) if done else 'none'} (each part's status is folded below).",
    ]
    text = pages.answer_page(
        f"jax#20909 and equinox#192: the device run ({device})", [], bullets, pages.fold_sections(sections)
    )
    summary = {
        "dry_run": dry,
        "backend": backend,
        "device": device,
        "parts": parts,
        "seed_table": [] if seed_table is None else seed_table.to_dict(orient="records"),
        "compile_compare": compiles.to_dict(orient="records"),
        "triton_vs_mosaic_gpu": [] if backends is None else backends.to_dict(orient="records"),
        "provenance": prov,
    }
    text += "\n" + (provenance.environment_block(prov) + "\n" if prov.get("packages") else "")
    records.write_summary(run_dir, summary, text)
    return run_dir
