"""The TPU study's loop forms and fixes: every form of the vocabulary is swept, ordered, shown in
the mechanism table and the figures, and competes for the best portable fix (scalar_carry, the
fix that closes jax#20909's gap on XLA:CPU, included). Synthetic points, no compile."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pandas as pd
import pytest

from jaxperf.jax20909 import vocab
from jaxperf.tpu import figures, report, sweep
from jaxperf.tpu.settings import TpuSettings

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "05_tpu_compile.ipynb"


def _point(loop_form: str, unroll: int = 1, *, T: int = 4096, generation: str = "v5e", **columns) -> dict:
    return dict(
        generation=generation,
        kernel="seed",
        loop_form=loop_form,
        unroll=unroll,
        variant=vocab.variant_name(loop_form, unroll),
        T=T,
        status=columns.pop("status", sweep.OK),
        error=columns.pop("error", ""),
        **columns,
    )


def _verdict_points(cycles: dict[tuple[str, int], int]) -> pd.DataFrame:
    """Seed points at one T with the given static cycles (B=512), 1 cycle = 1 µs for reading."""
    return pd.DataFrame(
        [_point(f, u, cycles_seed_batch=c, us_seed_batch=float(c)) for (f, u), c in cycles.items()]
    )


def test_the_notebook_sweeps_every_loop_form_by_default():
    source = json.loads(NOTEBOOK.read_text())
    [cell] = [c for c in source["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    parameters = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse("".join(cell["source"])).body
        if isinstance(node, ast.Assign)
    }
    assert tuple(parameters["loop_forms"]) == vocab.LOOP_FORMS == TpuSettings().loop_forms
    # The quick preset keeps the notebook's forms (it does not narrow them).
    assert "loop_forms" not in TpuSettings.QUICK


def test_sweep_order_puts_scalar_carry_with_the_portable_fixes():
    points = sweep.plan(["v5e"], ["seed", "streaming"], vocab.LOOP_FORMS, [1, 2], [256])
    seed = [p.variant for p in points if p.kernel == "seed"]
    assert seed == [
        "python",
        "fori u=1",
        "scalar_carry u=1",
        "scalar_carry u=2",
        "hoisted u=1",
        "hoisted u=2",
        "hand_unrolled u=1",
        "hand_unrolled u=2",
        "fori u=2",
        "pl_loop u=1",
        "pl_loop u=2",
    ]
    # scalar_carry and hoisted need the seed's loop invariant: the other kernels leave them out.
    assert not {p.loop_form for p in points if p.kernel == "streaming"} & set(vocab.HOISTING_FORMS)
    # Kernel by kernel, the reporter's first.
    assert [p.kernel for p in points] == ["seed"] * len(seed) + ["streaming"] * (len(points) - len(seed))


def test_every_loop_form_has_a_compile_priority_and_an_unknown_one_is_refused():
    ranks = [sweep._priority((form, 2)) for form in vocab.LOOP_FORMS]
    assert len(set(ranks)) == len(vocab.LOOP_FORMS)
    with pytest.raises(ValueError, match="'flash' has no compile priority"):
        sweep._priority(("flash", 1))


def test_fix_verdict_takes_scalar_carry_when_it_has_the_fewest_cycles():
    points = _verdict_points(
        {
            ("python", 1): 100,
            ("fori", 1): 3000,
            ("fori", 8): 90,  # fewer than every fix, but fori_loop(unroll=8) is not portable
            ("pl_loop", 8): 80,  # nor is pl.loop
            ("hand_unrolled", 8): 400,
            ("hoisted", 8): 220,
            ("scalar_carry", 1): 500,
            ("scalar_carry", 8): 205,
        }
    )
    row = report.fix_verdict(points, 4096).iloc[0]
    assert row["best portable fix"] == "scalar_carry u=8"
    assert row["fix / python"] == pytest.approx(2.05) and row["fori / python"] == pytest.approx(30)
    assert row["best portable fix ms (static)"] == pytest.approx(0.205)
    assert not row["fix closes the gap"]


def test_fix_verdict_takes_another_fix_when_scalar_carry_has_more_cycles():
    points = _verdict_points(
        {("python", 1): 100, ("fori", 1): 3000, ("hoisted", 8): 105, ("scalar_carry", 8): 120}
    )
    row = report.fix_verdict(points, 4096).iloc[0]
    assert row["best portable fix"] == "hoisted u=8" and bool(row["fix closes the gap"])


def _mechanism_point(loop_form: str, body: int, cycles: int, **columns) -> dict:
    return _point(
        loop_form,
        inner_body_bundles=body,
        inner_trips=64,
        xlane_ops_in_inner_body=2 if loop_form == "fori" else 0,
        bundles=columns.pop("bundles", 82),
        loop_depth=columns.pop("loop_depth", 2),
        xlane_ops=2,
        cycles_per_program=cycles,
        **columns,
    )


def test_mechanism_shows_scalar_carrys_body_and_cycles_beside_hoisted():
    points = pd.DataFrame(
        [
            _mechanism_point("python", 0, 168, bundles=172, loop_depth=1),
            _mechanism_point("fori", 35, 2283),
            _mechanism_point("hoisted", 8, 582),
            _mechanism_point("scalar_carry", 7, 519),
        ]
    )
    row = report.mechanism(points, 4096).iloc[0]
    assert row["fori: body bundles x trips"] == "35 x 64" and row["fori: reduction in body"]
    assert row["hoisted: body bundles"] == 8 and row["scalar_carry: body bundles"] == 7
    assert row["cycles per program: Python / fori / hoisted / scalar_carry"] == "168 / 2283 / 582 / 519"


def test_mechanism_says_n_a_for_a_fix_that_did_not_compile():
    points = pd.DataFrame(
        [
            _mechanism_point("python", 0, 168, loop_depth=1),
            _mechanism_point("fori", 35, 2283),
            _mechanism_point("hoisted", 8, 582),
            _point("scalar_carry", status="error", error="JaxRuntimeError: vmem"),
        ]
    )
    row = report.mechanism(points, 4096).iloc[0]
    assert row["scalar_carry: body bundles"] is None and row["hoisted: body bundles"] == 8
    assert row["cycles per program: Python / fori / hoisted / scalar_carry"] == "168 / 2283 / 582 / n/a"


def test_figures_draw_scalar_carry_and_leave_out_the_duplicates():
    shown = figures.shown_variants(pd.DataFrame({"unroll": [1, 2, 8]}))
    assert not any(v.startswith(("pl_loop", "hoisted")) for v in shown) and "hand_unrolled u=1" not in shown
    assert shown == [  # the study's order; the other unrolls and hoisted: plot_static_unrolls_vs_T
        "python",
        "fori u=1",
        "fori u=8",
        "hand_unrolled u=8",
        "scalar_carry u=1",
    ]
    assert "hand_unrolled u=8" not in figures.shown_variants(
        pd.DataFrame({"unroll": [1, 8]}), hand_unrolled=False
    )
