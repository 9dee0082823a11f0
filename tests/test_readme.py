"""README.md is rendered from tools/README.template.md and the committed summary.json files
(tools/readme.py), and every quoted number's sentence names the variant, mode, T and measure
it quotes (issue 19: a sentence quoted scalar_carry u=2's 11.0 ms as u=1's)."""

from __future__ import annotations

import sys

import pytest

from jaxperf.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))
import readme  # noqa: E402

LOOPS = {
    "seed_reproduction": [
        {"mode": "xla", "T": 256, "ratio": 1.1, "fix_form": "hand_unrolled", "fix_unroll": 16, "fix_ms": 0.1,
         "scalar_carry_u1_ms": 0.12},
        {"mode": "xla", "T": 16384, "ratio": 19.55, "fix_form": "scalar_carry", "fix_unroll": 2, "fix_ms": 11.0,
         "scalar_carry_u1_ms": 16.7},
        {"mode": "xla_harness", "T": 16384, "ratio": 3.91, "fix_form": "hoisted", "fix_unroll": 1, "fix_ms": 5.0,
         "scalar_carry_u1_ms": 6.0},
    ]
}  # fmt: skip


def render(text: str) -> str:
    return readme.render(text, cache={"cpu/loops": LOOPS})


def test_a_sentence_that_names_what_it_quotes_renders():
    text = "On XLA:CPU at T=16384 the fori_loop is {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}× slower."
    assert render(text) == "On XLA:CPU at T=16384 the fori_loop is 19.6× slower."


def test_the_misquote_of_issue_19_fails():
    """The fastest portable form at T=16384 was scalar_carry u=2; a sentence naming u=1 cannot quote it."""
    wrong = (
        "On XLA:CPU `scalar_carry` with `fori_loop(unroll=1)` runs at T=16384 in "
        "{{cpu/loops seed_reproduction[mode=xla,T=16384].fix_ms:.1f}} ms."
    )
    with pytest.raises(readme.RenderError, match="scalar_carry u=2"):
        render(wrong)
    right = (
        "On XLA:CPU `scalar_carry` with `fori_loop(unroll=1)` (u=1) runs at T=16384 in "
        "{{cpu/loops seed_reproduction[mode=xla,T=16384].scalar_carry_u1_ms:.1f}} ms."
    )
    assert "16.7 ms" in render(right)


@pytest.mark.parametrize(
    "sentence",
    [
        "At T=16384 it is {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}×.",  # no mode named
        "On XLA:CPU it is {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}×.",  # no T named
        "In the harness on XLA:CPU at T=16384: {{cpu/loops seed_reproduction[mode=xla_harness,T=16384].ratio:.1f}}.",
    ],
)
def test_a_sentence_missing_a_label_fails(sentence):
    with pytest.raises(readme.RenderError, match="names none of"):
        render(sentence)


def test_the_label_must_be_in_the_same_sentence():
    text = (
        "On XLA:CPU at T=256 the ratio is small. Later it is "
        "{{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}× at last."
    )
    with pytest.raises(readme.RenderError):
        render(text)


def test_a_table_cell_is_named_by_its_row_and_column():
    table = (
        "| T | XLA:CPU here, ratio × |\n|---|---|\n"
        "| 16384 | {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.2f}} |\n"
    )
    assert "| 16384 | 19.55 |" in render(table)
    wrong_column = "| T | harness × |\n|---|---|\n| 16384 | {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.2f}} |\n"
    with pytest.raises(readme.RenderError):
        render(wrong_column)


@pytest.mark.parametrize(
    ("path", "match"),
    [
        ("seed_reproduction[mode=xla].ratio", "matches 2 elements"),
        ("seed_reproduction[mode=gpu,T=1].ratio", "matches 0 elements"),
        ("no_such_key.ratio", "no 'no_such_key'"),
    ],
)
def test_a_placeholder_that_does_not_pick_one_value_fails(path, match):
    with pytest.raises(readme.RenderError, match=match):
        render(f"On XLA:CPU at T=16384 fori_loop: {{{{cpu/loops {path}:.1f}}}}×.")


def test_a_missing_study_fails_naming_its_file():
    with pytest.raises(readme.RenderError, match="no results/cpu/nowhere/summary.json"):
        readme.render("{{cpu/nowhere a.b}}", cache={})


def test_the_committed_readme_is_what_the_template_renders():
    """CI's check: a rerun that moves a number, or a template edit, needs `python tools/readme.py`."""
    assert readme.TEMPLATE.is_file(), "tools/README.template.md is missing"
    rendered = readme.render(readme.TEMPLATE.read_text())
    assert readme.README.read_text() == rendered, "README.md is stale: run `python tools/readme.py`"
    assert "{{" not in rendered


def test_the_map_of_the_code_is_what_the_packages_docstrings_render():
    """README's layout and CONTRIBUTING's "Where things live" hold the map rendered from each
    package's docstring (issue 47): CI fails when a package moves, appears or says something else."""
    assert readme.MAP in readme.TEMPLATE.read_text()
    contributing = readme.CONTRIBUTING.read_text()
    assert contributing == readme.with_map(contributing), (
        "CONTRIBUTING.md's map is stale: run `python tools/readme.py`"
    )
    code_map, brief = readme.code_map(), readme.code_map(brief=True)
    assert brief in readme.README.read_text() and code_map in contributing
    packages = {p.parent for p in readme.LIB.rglob("__init__.py")}
    for package in packages:
        assert f"{package.name}/" in code_map, package
        if len(package.relative_to(readme.LIB).parts) <= 2:  # the README's: two levels
            assert f"{package.name}/" in brief, package


def test_the_map_follows_the_code_and_needs_a_docstring(tmp_path):
    lib = tmp_path / "lib"
    for rel, text in {
        "pkg/__init__.py": '"""A package.\n\nMore that the map leaves out."""\n',
        "pkg/tool/__init__.py": '"""The tool: ``run`` does it (:func:`~.engine.run`)."""\n',
        "pkg/shared.py": "",
        "study/__init__.py": '"""The study, *never* shipped."""\n',
    }.items():
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_text(text)
    first = readme.code_map(lib)
    assert first.splitlines()[1:-1] == [
        "lib/pkg/".ljust(readme.MAP_FOLDER) + "A package.",
        "  tool/".ljust(readme.MAP_FOLDER) + "The tool: run does it (run).",
        "  *.py".ljust(readme.MAP_FOLDER) + "shared",
        "lib/study/".ljust(readme.MAP_FOLDER) + "The study, never shipped.",
    ]
    assert readme.code_map(lib, brief=True).splitlines()[1:-1] == [
        "lib/pkg/".ljust(readme.MAP_FOLDER) + "A package.",
        "  tool/".ljust(readme.MAP_FOLDER) + "The tool: run does it (run).",
        "lib/study/".ljust(readme.MAP_FOLDER) + "The study, never shipped.",
    ]
    (lib / "pkg" / "tool" / "__init__.py").write_text('"""The tool, moved on."""\n')
    assert readme.code_map(lib) != first
    text = f"intro\n{readme.MAP_BEGIN}\nold map\n{readme.MAP_END}\nafter\n"
    assert (
        readme.with_map(text, lib)
        == f"intro\n{readme.MAP_BEGIN}\n{readme.code_map(lib)}\n{readme.MAP_END}\nafter\n"
    )
    (lib / "study" / "__init__.py").write_text("X = 1\n")
    with pytest.raises(readme.RenderError, match="no docstring to map"):
        readme.code_map(lib)
    with pytest.raises(readme.RenderError, match="no map between"):
        readme.with_map("no markers here", lib)


def test_a_verdict_renders_as_words_and_only_from_a_boolean():
    cache = {"cpu/x": {"goal": {"met": True, "value": 0.9}}}
    assert readme.render("Goal: {{cpu/x goal.met:met}}.", cache=cache) == "Goal: met."
    with pytest.raises(readme.RenderError, match="needs a true/false value"):
        readme.render("Goal: {{cpu/x goal.value:met}}.", cache=cache)


def test_a_measure_named_by_the_path_must_be_named_by_the_sentence():
    cache = {"cpu/d": {"by_measure": {"loop_it_per_s": {"low": 0.4}}}}
    assert "0.40" in readme.render(
        "In the pipelined loop it is {{cpu/d by_measure.loop_it_per_s.low:.2f}}×.", cache=cache
    )
    with pytest.raises(readme.RenderError, match="pipelined"):
        readme.render(
            "With each call blocked it is {{cpu/d by_measure.loop_it_per_s.low:.2f}}×.", cache=cache
        )


@pytest.mark.parametrize(
    ("stat", "verdict"),
    [
        ({"median": 12.0, "q25": 10.0, "q75": 13.0}, "met"),  # the whole range clears the goal
        (
            {"median": 10.1, "q25": 9.47, "q75": 12.41},
            "not resolved, its spread holds 10×",
        ),  # the 2026-12-01 run
        ({"median": 9.9, "q25": 9.0, "q75": 10.0}, "not resolved, its spread holds 10×"),
        ({"median": 8.24, "q25": 8.18, "q75": 9.01}, "not met"),
    ],
)
def test_a_goal_is_met_only_when_its_spread_clears_it(stat, verdict):
    """A median that passes while the spread holds the goal is a tie: a rerun must not flip
    "met" to "not met" (8.24x one run, 10.10x the next, for the same packed_jit cell)."""
    assert readme.fmt(stat, "goal>=10") == verdict


def test_a_goal_spec_needs_a_spread():
    with pytest.raises(readme.RenderError, match="median, q25, q75"):
        readme.fmt(10.5, "goal>=10")


def test_renders_from_another_output_root(tmp_path):
    """A rerun's README: the same template, read from that root's results (issue 32)."""
    study = tmp_path / "results" / "cpu" / "loops"
    study.mkdir(parents=True)
    (study / "summary.json").write_text('{"seed_reproduction": [{"mode": "xla", "T": 16384, "ratio": 12.8}]}')
    text = (
        "On XLA:CPU at T=16384 the fori_loop is {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}×."
    )
    assert readme.render(text, root=tmp_path).endswith("is 12.8×.")
    with pytest.raises(readme.RenderError, match="no results/cpu/answers/summary.json"):
        readme.render("{{cpu/answers a.b}}", root=tmp_path)


def test_the_command_writes_a_rerun_readme_beside_its_results(tmp_path, rerun_root):
    out = tmp_path / "README.md"
    assert readme.main(["--root", str(rerun_root), "--out", str(out)]) == 0
    assert out.read_text() == readme.render(readme.TEMPLATE.read_text(), root=rerun_root)
    assert (rerun_root / "results" / "upstream" / "equinox-192.md").is_file()  # the upstream texts beside it
    with pytest.raises(SystemExit) as exit_:
        readme.main(["--root", str(tmp_path)])  # no results/ there
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        readme.main(["--check", "--out", str(out)])  # --check is about the project's README.md


@pytest.mark.parametrize(
    ("value", "spec", "text"), [(-0.04, ".1f", "0.0"), (-0.4, ".1f", "-0.4"), (-0.0, ".2f", "0.00")]
)
def test_a_value_that_rounds_to_zero_is_printed_without_a_sign(value, spec, text):
    assert readme.fmt(value, spec) == text


# --- the upstream texts (issue 39 item 3) -------------------------------------------------------------


@pytest.fixture(scope="module")
def rerun_root(tmp_path_factory):
    """An output root holding the committed summaries, notebooks 01's and 11's recomputed from their
    committed records by today's code (what the next run writes, without measuring)."""
    import json
    import shutil

    import pandas as pd

    from jaxperf_study.dispatch import report

    root = tmp_path_factory.mktemp("root")
    for summary in [
        *(PROJECT_ROOT / "results").glob("cpu/*/summary.json"),
        *(PROJECT_ROOT / "results").glob("upstream/*/summary.json"),
        *(PROJECT_ROOT / "results").glob("tpu/cli/*/summary.json"),
        *(PROJECT_ROOT / "results").glob("equinox_patch/*.json"),  # tools' records, quoted whole
    ]:
        target = root / summary.relative_to(PROJECT_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(summary, target)
    records = PROJECT_ROOT / "results" / "cpu" / "dispatch"
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    fresh = report.headline(
        pd.read_csv(records / "timings.csv"),
        notes,
        pd.read_csv(records / "accounting_rounds.csv"),
        pd.read_csv(records / "accounting_cprofile.csv"),
        precision=0.05,
        quick=False,
    )
    fresh["provenance"] = json.loads((records / "summary.json").read_text())["provenance"]
    # Where the committed run measured a family at fewer than three sizes (no line), the next run's
    # lines per model family stand in as the MLP's, to render the sentences that quote them.
    for lines in fresh["per_leaf_by_kind"].values():
        for kind in ("transformer", "cnn"):
            if "mlp" in lines:
                lines.setdefault(kind, lines["mlp"])
    if not fresh["waits"]:  # nor the wide train step: the verdicts on its train step stand in
        from jaxperf import runs_ahead

        train = pd.read_csv(records / "timings.csv").query("step == 'train' and family == 'jit'")
        fresh["waits"] = runs_ahead.verdicts(train, "jit_params", key="method").to_dict(orient="records")
    (root / "results" / "cpu" / "dispatch" / "summary.json").write_text(json.dumps(fresh, default=str))
    from jaxperf_study.dispatch.nnx import flax_sdist
    from jaxperf_study.dispatch.nnx import report as nnx_report

    records = PROJECT_ROOT / "results" / "cpu" / "nnx"
    nnx = nnx_report.headline(
        *(
            pd.read_csv(records / f"{name}.csv", comment="#")
            for name in ("timings", "not_timed", "stage_rounds")
        ),
        pd.read_csv(records / "flax_benchmark.csv", comment="#"),
        flax_sdist.load_report(),
        precision=0.05,
        quick=False,
    )
    (root / "results" / "cpu" / "nnx" / "summary.json").write_text(json.dumps(nnx, default=str))
    return root


@pytest.fixture(scope="module")
def upstream_texts(rerun_root):
    return {path.name: text for path, text in readme.upstream(rerun_root).items()}


def test_the_readme_renders_from_the_next_runs_summaries_with_no_retired_study(rerun_root):
    import re

    text = readme.render(readme.TEMPLATE.read_text(), root=rerun_root)
    for word in (
        "n/a",
        "model A6000",
        "predicted",
        "notebook 03",
        "notebook 06",
        "notebook 08",
        "time model",
    ):
        assert word not in text, word
    # link text says what it opens: a link labelled "notebook NN" opens that notebook
    for label, target in re.findall(r"\[(notebook \d+)\]\(([^)]+)\)", text):
        assert target.startswith("notebooks/"), (label, target)
    # the answers come first; every term they set in italics is defined under Terms
    glossary = text[text.index("## Terms") :].split("\n## ")[0]
    defined = set(re.findall(r"(?<![*\w])\*([a-z][a-z -]+)\*(?![*\w])", glossary))
    used = set(re.findall(r"(?<![*\w])\*([a-z][a-z -]+)\*(?![*\w])", text[: text.index("## Terms")]))
    assert used <= defined, f"used in italics, never defined under Terms: {sorted(used - defined)}"


def test_every_upstream_template_renders_a_short_text_with_no_gap(upstream_texts):
    assert set(upstream_texts) == {
        "equinox-192.md",
        "equinox-192.patch",
        "equinox-filter_jit-wait.md",
        "equinox-filter_jit-wait.patch",
        "jax-20909.md",
        "jax-20909-tpu.md",
        "jax-mosaic-gpu-recursion.md",
        "jax-mosaic-tpu-bf16.md",
    }
    for name, text in upstream_texts.items():
        if name.endswith(".patch"):  # attached to its comment, not read in it
            continue
        assert text.count("\n") <= readme.MAX_UPSTREAM_LINES, name
        for word in ("n/a", "TODO", "not read", "{{", "nan"):
            assert word not in text, f"{name} holds {word!r}"
        assert text.count("```python") == 1, f"{name}: one repro"


def test_an_upstream_text_longer_than_the_limit_fails(rerun_root, monkeypatch, tmp_path):
    (tmp_path / "long.md").write_text("line\n" * (readme.MAX_UPSTREAM_LINES + 1))
    monkeypatch.setattr(readme, "TEMPLATES", tmp_path)
    with pytest.raises(readme.RenderError, match="long.md: 61 lines"):
        readme.upstream(rerun_root)


def test_the_upstream_links_open_files_of_the_project(upstream_texts):
    import re

    for name, text in upstream_texts.items():
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)#]+)\)", prose):
            if not target.startswith("http"):
                assert (PROJECT_ROOT / "results" / "upstream" / target).resolve().exists() or (
                    PROJECT_ROOT / "tools" / "templates" / target
                ).exists(), f"{name}: {target} opens nothing"


def _repro(text: str) -> str:
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize(
    ("name", "prints"),
    [
        ("equinox-192.md", ["eqx.filter_pmap:", "jax.pmap on the arrays:", "eqx.filter_jit on sharded inputs:",
                            "jax.jit on the sharded arrays:", "x the it/s of jax.pmap", "leaves=392"]),
        ("equinox-filter_jit-wait.md", ["eqx.filter_jit: ", "% of the loop's time had passed when its last call returned", "jax.jit: "]),
        # his Pallas kernel and harness as written: on a GPU as it is, here in Pallas' interpreter
        ("jax-20909.md", ["python_loop:", "fori_loop:", "hoisted:", "scalar_carry:", "ms per kernel call",
                          "x the Python loop's", "ms to compile", "not a kernel's times"]),
        # the TPU's port: on a TPU as it is, here in Pallas' interpreter
        ("jax-20909-tpu.md", ["python_loop:", "fori_loop:", "hoisted:", "scalar_carry:", "ms per kernel call",
                              "x the Python loop's", "its times are not a kernel's"]),
    ],
)  # fmt: skip
def test_the_repro_runs_as_is_on_a_cpu(upstream_texts, name, prints, tmp_path):
    """The first ```python block of the text, pasted into a file and run in a fresh process; what
    it prints is what its record parsed (the same lines, the same fields)."""
    import json
    import os
    import subprocess

    import upstream_repro

    code = _repro(upstream_texts[name])
    assert code.count("\n") <= 36, f"{name}: the repro is {code.count(chr(10))} lines"
    assert "--xla_force_host_platform_device_count=8" in code or "pmap" not in code
    script = tmp_path / "repro.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PYTHONPATH")}
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for word in prints:
        assert word in done.stdout
    record = PROJECT_ROOT / "results" / "upstream" / f"{name.removesuffix('.md')}-repro" / "summary.json"
    if record.is_file():
        measured, setting = upstream_repro.parse(done.stdout)
        run = json.loads(record.read_text())["runs"][0]
        assert [{k: set(v) - {"variant"}} for k, v in measured.items()] == [
            {q["variant"]: set(q) - {"variant"}} for q in run["quoted"]
        ]
        assert set(setting) == set(run["setting"])


# ------------------------------------------------ the TPU's answer first, and the ranges rule


def _tpu_summary(root):
    """results/tpu/dispatch/summary.json as notebook 01 writes it on the TPU preset's cells, from
    synthetic rounds (a host cost per leaf and per path, a device time per step) in 3 processes."""
    import json

    import numpy as np
    import pandas as pd

    from jaxperf_study.dispatch import predict, report
    from jaxperf_study.dispatch.settings import DispatchSettings
    from jaxperf_study.dispatch.vocab import SHARDED

    host_us = {"filter_pmap": 30, "filter_jit": 12, "filter_pmap_recipe": 12, "filter_jit_recipe": 8}
    rng, rows = np.random.default_rng(0), []
    for cell in DispatchSettings.from_parameters({"backend": "tpu"}).cells:
        labels = cell.labels
        device = 0.02 + 0.1 * labels["microbatches"] * (labels["step"] == "train")
        for method in predict.methods(cell.family) + list(SHARDED if cell.family == "pmap" else ()):
            host = 1e-3 * (0.05 + 1e-3 * host_us.get(method, 4) * labels["leaves"])
            host = 1e-5 if method.startswith("packed") else host
            for process in range(3):
                for r in range(6):
                    noise = 1 + 0.02 * rng.standard_normal()
                    loop = max(host, 1e-3 * device) * noise
                    rows.append(labels | {"method": method, "variant": method, "repeat": r, "process": process,
                                          "calls": 4, "cpu_tick_s": 0.01, "cpu_s_per_call": host * noise,
                                          "enqueue_cpu_s_per_call": host * noise, "dispatch_s_per_call": host * noise,
                                          "wall_s_per_call": host * noise + 1e-3 * device, "loop_it_per_s": 1 / loop,
                                          "it_per_s": 1 / (host * noise + 1e-3 * device)})  # fmt: skip
    timings = pd.DataFrame(rows)
    notes = pd.DataFrame(columns=["step", "model", "kind", "leaves", "donated", "family", "path", "why"])
    cases = [c | {"loop_it_per_s": [10.0, 1e4], "bound": "host"} for c in report.cases(timings)]
    # the accounting as the TPU recorded it (wall time: its CPU clock is coarse)
    accounting = pd.read_csv(PROJECT_ROOT / "results" / "tpu" / "dispatch" / "accounting_rounds.csv")
    summary = report.headline(timings, notes, accounting, pd.DataFrame(), precision=0.05, quick=False,
                              predictions={"cases": cases, "made_utc": "2026-12-06T00:00:00+00:00"})  # fmt: skip
    summary["provenance"] = {"packages": {"jax": "0.10.2", "equinox": "0.13.8"}, "device_kind": "TPU v5 lite"}
    target = root / "results" / "tpu" / "dispatch" / "summary.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(summary, default=str))
    return summary


def test_with_the_tpus_summary_the_answer_leads_with_its_it_per_s(rerun_root, tmp_path):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(rerun_root, root)
    _tpu_summary(root)
    for name in ("seed_loop_pmap.json", "seed_loop_jit.json"):  # the TPU's cases in the seed's loop
        shutil.copy(PROJECT_ROOT / "results" / "tpu" / "cli" / name, root / "results" / "tpu" / "cli" / name)
    text = readme.render(readme.TEMPLATE.read_text(), root=root)
    section = text[text.index("## [equinox#192]") : text.index("## [jax-ml/jax#20909]")]
    assert section.index("**On a TPU v5e") < section.index("**Why") < section.index("**The CPU analogue")
    assert "Not measured on a TPU yet" not in section and "TPU v5 lite" in text
    assert "In the reporter's terms" in section and "`jax.jit` on params" in section
    without = readme.render(readme.TEMPLATE.read_text(), root=rerun_root)
    assert "Not measured on a TPU yet" in without and "**On a TPU v5e" not in without.split("## [jax-ml")[0]


def test_a_block_renders_only_while_its_study_has_a_summary(tmp_path):
    (tmp_path / "results" / "tpu" / "x").mkdir(parents=True)
    text = "a\n{{#if tpu/x}}\nthere\n{{#else}}\nnot there\n{{/if}}\nb\n"
    assert readme.resolve_blocks(text, {}, tmp_path) == "a\nnot there\nb\n"
    (tmp_path / "results" / "tpu" / "x" / "summary.json").write_text("{}")
    assert readme.resolve_blocks(text, {}, tmp_path) == "a\nthere\nb\n"


def test_a_range_is_quoted_whole_and_not_at_all_when_wider_than_three_times_its_number():
    cache = {
        "cpu/x": {
            "r": {"median": 2.71, "lo": 2.17, "hi": 3.35},
            "w": {"median": 13.8, "lo": 0.2, "hi": 1116.2},
        }
    }
    assert readme.render("At last {{cpu/x r:r.2f×}}.", cache=cache) == "At last 2.71× [2.17, 3.35]."
    assert "not resolved" in readme.render("At last {{cpu/x w:r.1f×}}.", cache=cache)
    with pytest.raises(readme.RenderError, match="quoted apart"):
        readme.render("At last {{cpu/x r.median:.2f}} [{{cpu/x r.lo:.2f}}, {{cpu/x r.hi:.2f}}].", cache=cache)


def test_a_range_every_process_printed_the_same_reads_as_that_not_as_a_zero_width_range():
    """The TPU repro printed 0.67 in each of 3 processes: "0.67× [0.67, 0.67]" read as a range
    of no width; a range whose ends differ, or a number without its printed values, stays one."""
    same = {"median": 0.67, "lo": 0.67, "hi": 0.67, "values": [0.67, 0.67, 0.67]}
    apart = {"median": 0.67, "lo": 0.664, "hi": 0.676, "values": [0.67, 0.66, 0.68]}
    cache = {"cpu/x": {"same": same, "apart": apart, "bare": {"median": 0.67, "lo": 0.67, "hi": 0.67}}}
    said = readme.render("It is {{cpu/x same:r.2f×}}.", cache=cache)
    assert said == "It is 0.67× (each of the 3 processes printed 0.67×)."
    assert readme.render("It is {{cpu/x apart:r.2f×}}.", cache=cache) == "It is 0.67× [0.66, 0.68]."
    assert readme.render("It is {{cpu/x bare:r.2f×}}.", cache=cache) == "It is 0.67× [0.67, 0.67]."
    # a median that prints as zero has no "3x its median": what the processes printed, low to high
    near = {"cpu/x": {"z": {"median": 0.0, "lo": 0.0, "hi": 1.0, "values": [1.0, 0.0, 0.0]}}}
    assert (
        readme.render("It is {{cpu/x z:r.0f%}}.", cache=near)
        == "It is 0% to 1% (as the 3 processes printed)."
    )


def test_an_upstream_text_links_only_absolute_addresses():
    assert readme.relative_links("[a](https://github.com/x) [b](../cpu/x.md) [c](#terms)") == ["../cpu/x.md"]


def test_a_block_renders_its_part_by_whether_the_study_ran(tmp_path):
    """A lent device's numbers render where its summary exists, plain words where it does not."""
    text = "{{#if tpu/loops}}\nOn the TPU at T=256: {{tpu/loops seed_reproduction[mode=pallas,T=256].ratio:.1f}}×.\n{{#else}}\nNo TPU ran.\n{{/if}}\nEnd.\n"
    assert readme.render(text, cache={}, root=tmp_path) == "No TPU ran.\nEnd.\n"
    tpu = {"seed_reproduction": [{"mode": "pallas", "T": 256, "ratio": 3.04}]}
    assert (
        readme.render(text, cache={"tpu/loops": tpu}, root=tmp_path) == "On the TPU at T=256: 3.0×.\nEnd.\n"
    )
    with pytest.raises(readme.RenderError, match="names none of"):  # the device is named, as a mode is
        readme.render(text.replace("On the TPU", "Here"), cache={"tpu/loops": tpu}, root=tmp_path)


@pytest.mark.parametrize(
    ("stat", "text"),
    [
        ({"median": 13.8, "lo": 0.2, "hi": 1116.2}, "not resolved (median 13.80×; its range holds 1)"),
        ({"median": 3.1, "lo": 2.9, "hi": 3.4}, "3.10× [2.90, 3.40]"),
    ],
)
def test_a_ratio_whose_range_holds_1_is_not_resolved(stat, text):
    assert readme.fmt(stat, "ranged") == text
    with pytest.raises(readme.RenderError, match="ranged needs"):
        readme.fmt(3.0, "ranged")


def test_count_says_how_many_a_record_lists():
    """The README's "timed his kernel at N T" is the count of the T the TPU run timed (its record
    has six; the text had said four)."""
    import json

    summary = json.loads((PROJECT_ROOT / "results" / "tpu" / "loops" / "summary.json").read_text())
    device_ts = summary["provenance"]["parameters"]["device_Ts"]
    assert readme.fmt(device_ts, "count") == str(len(set(device_ts))) == "6"
    with pytest.raises(readme.RenderError, match="count needs a list"):
        readme.fmt(6, "count")


def test_a_repro_record_is_clean_while_only_the_record_itself_changed(tmp_path, monkeypatch):
    """tools/upstream_repro.py records each label's run from a clean tree: the record it rewrites
    (other labels' runs) does not count as a change, any other tracked file does."""
    import subprocess

    import upstream_repro

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    record, other = tmp_path / "results" / "x-repro" / "summary.json", tmp_path / "tool.py"
    record.parent.mkdir(parents=True)
    record.write_text("{}"), other.write_text("A = 1\n")
    git("init", "-q"), git("add", "."), git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    monkeypatch.setattr(upstream_repro, "ROOT", tmp_path)
    assert upstream_repro.tree(record)["dirty"] is False
    record.write_text('{"runs": []}')
    assert upstream_repro.tree(record)["dirty"] is False
    other.write_text("A = 2\n")
    assert upstream_repro.tree(record)["dirty"] is True
