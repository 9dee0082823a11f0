"""The upstream texts (results/upstream/*.md, from tools/templates/) quote only what a committed
record holds (issue 55): each repro's numbers as its fresh processes printed them
(tools/upstream_repro.py), the TPU's first where a TPU ran it, and no number written by hand."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jaxperf.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools"))
import readme  # noqa: E402
import upstream_repro  # noqa: E402

RECORDS = sorted(p for root in upstream_repro.RECORDS for p in root.glob("*-repro/summary.json"))
#: the numbers a text writes itself, none of them a measurement: issue numbers, versions, sizes
#: and settings named in words (a selector's own values, e.g. T=16384, are allowed beside these)
WRITTEN = {
    # v3-8's 8 cores, jax 0.12's warning, a 2-core VM; the reporter's own 8 vs 25 it/s and 10 vs 20
    # batches a second (quoted from the issue); the seed's loop (50 calls, 1 s); the models' sizes
    # named beside their names (depth 64, 12 and 4 layers, 128 microbatches)
    "equinox-192.md": {
        "192",
        "0.13.8",
        "0.12",
        "2",
        "8",
        "25",
        "10",
        "20",
        "50",
        "1",
        "64",
        "12",
        "4",
        "128",
    },
    # 1 / (host + device); the train step of 128 microbatches, named beside its model
    "equinox-filter_jit-wait.md": {
        "0.11.8",
        "0.4.33",
        "0.13.8",
        "192",
        "0.12",
        "1",
        "2",
        "4",
        "16",
        "50",
        "128",
    },
    # T/64 steps, [128, D] blocks; his sizes named in words where no GPU has run it (batch 512, N=16, T=65536)
    "jax-20909.md": {"20909", "64", "128", "512", "16", "65536"},
    "jax-20909-tpu.md": {"20909", "64", "128"},  # T/64 steps, [128, D] blocks
    # Python's recursion limits, loop steps (T / 64) and the T of jax#20909's 1024 steps, a 2-core CPU
    "jax-mosaic-gpu-recursion.md": {
        "20909",
        "1000",
        "3000",
        "64",
        "32",
        "128",
        "256",
        "512",
        "1024",
        "65536",
        "2",
    },
    "jax-mosaic-tpu-bf16.md": {"0", "1", "20909", "32", "0.10.2", "0.0.42.1", "0.12.0.1", "0.0.50.1"},
}
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def prose(text: str) -> str:
    """``text`` less its code blocks, folded ``<details>`` and HTML comments."""
    text = readme.DETAILS.sub("", text)
    return re.sub(r"```.*?```|<!--.*?-->", "", text, flags=re.S)


def test_every_number_a_template_writes_is_a_placeholder_or_named_as_no_measurement():
    """A number in a text's prose either comes from a record (a placeholder) or is one of the few
    the text writes itself (an issue, a version, a size named in words)."""
    for template in sorted(readme.TEMPLATES.glob("*.md")):
        source = re.sub(r"\{\{[#/][^}]*\}\}|\{\{else\}\}|\{\{#else\}\}", "", template.read_text())
        selected = {v for m in readme.PLACEHOLDER.finditer(source) for _, v in readme.selectors(m["path"])}
        written = set(NUMBER.findall(prose(readme.PLACEHOLDER.sub("", source)).replace("\\", "")))
        extra = written - WRITTEN[template.name] - selected
        assert not extra, f"{template.name} writes {sorted(extra)} itself: quote them from a record"


def test_every_placeholder_of_a_text_reads_a_committed_record():
    tracked = subprocess.run(["git", "ls-files", "results"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("needs the git checkout")
    files = set(tracked.stdout.split())
    for template in sorted(readme.TEMPLATES.glob("*.md")):
        text = readme.resolve_blocks(template.read_text(), {}, PROJECT_ROOT)  # the parts that render now
        for m in readme.PLACEHOLDER.finditer(text):
            if m["study"] != "include":
                committed = readme.record(m["study"], PROJECT_ROOT).relative_to(PROJECT_ROOT).as_posix()
                assert committed in files, f"{template.name}: {m.group(0)}"


@pytest.mark.parametrize(
    "path", RECORDS, ids=lambda p: p.relative_to(PROJECT_ROOT / "results").parent.as_posix()
)
def test_a_repro_record_quotes_what_its_processes_printed(path):
    """Each label's quoted numbers are what its outputs say, parsed again; the repro is the
    template's; at least 3 fresh processes; from a clean commit."""
    record = json.loads(path.read_text())
    text = path.parent.name.removesuffix("-repro")
    code = upstream_repro.repro((readme.TEMPLATES / f"{text}.md").read_text())
    assert record["repro_sha256"] == upstream_repro.sha(code), (
        f"{path}: rerun its repro (tools/upstream_repro.py)"
    )
    assert record["provenance"]["git"]["dirty"] is False
    for run in record["runs"]:
        assert run["repro_sha256"] == record["repro_sha256"]
        assert run["processes"] == len(run["outputs"]) >= 3, run["label"]
        parsed = [upstream_repro.parse(out) for out in run["outputs"]]
        assert run["quoted"] == upstream_repro.quoted([m for m, _ in parsed]), run["label"]
        assert run["setting"] == parsed[0][1]


def test_the_committed_records_are_the_templates_repros():
    assert upstream_repro.main(["--check"]) == 0
    assert {p.parent.name for p in RECORDS} >= {"equinox-192-repro", "jax-20909-repro", "jax-20909-tpu-repro"}


@pytest.fixture(scope="module")
def with_tpu(tmp_path_factory):
    """An output root holding the committed results and, where no TPU has run a repro yet, a TPU
    record made from the CPU's first process printed three times (not a TPU's numbers: this tests
    where they land)."""
    root = tmp_path_factory.mktemp("root")
    tools = (PROJECT_ROOT / "results" / "equinox_patch").glob("*.json")  # tools' records, quoted whole
    for summary in [*(PROJECT_ROOT / "results").glob("**/summary.json"), *tools]:
        target = root / summary.relative_to(PROJECT_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(summary, target)
    for text in ("equinox-192", "jax-20909-tpu"):
        tpu = root / "results" / "tpu" / "cli" / f"{text}-repro" / "summary.json"
        if not tpu.is_file():
            record = json.loads(
                (root / "results" / "upstream" / f"{text}-repro" / "summary.json").read_text()
            )
            run = record["runs"][0]
            printed = [upstream_repro.parse(run["outputs"][0])[0]] * 3
            record["runs"] = [
                run | {"key": "tpu", "label": "TPU v5e", "quoted": upstream_repro.quoted(printed)}
            ]
            tpu.parent.mkdir(parents=True, exist_ok=True)
            tpu.write_text(json.dumps(record))
    return root


def _first_screen(text: str) -> str:
    return text[: text.index("```python")]


@pytest.mark.parametrize(
    ("name", "record"), [("equinox-192.md", "equinox-192"), ("jax-20909-tpu.md", "jax-20909-tpu")]
)
def test_an_answer_opens_with_why_and_what_to_write_then_the_tpu_then_the_cpu(with_tpu, name, record):
    with_ = readme.upstream(with_tpu)[with_tpu / "results" / "upstream" / name]
    lines = with_.splitlines()
    assert lines[0].startswith("Re #") and "**Why:**" in lines[0] and lines[1].startswith("**What to write")
    assert all(line.split(":**", 1)[1].count(". ") == 0 for line in lines[:2]), "one sentence each"
    assert with_.index("**On a TPU v5e**") < with_.index("```python")
    assert "Not yet measured on a TPU" not in with_ and with_.count("\n") <= readme.MAX_UPSTREAM_LINES
    tpu = json.loads((with_tpu / "results" / "tpu" / "cli" / f"{record}-repro" / "summary.json").read_text())
    fori = "fori_loop" if record == "jax-20909-tpu" else "eqx.filter_pmap"
    ratio = next(q for q in tpu["runs"][0]["quoted"] if q["variant"] == fori)["ratio"]["median"]
    assert f"{ratio:.2f}×" in _first_screen(with_), "the TPU's ratio on the first screen"
    without = readme.upstream(PROJECT_ROOT)[PROJECT_ROOT / "results" / "upstream" / name]
    if not (PROJECT_ROOT / "results" / "tpu" / "cli" / f"{record}-repro" / "summary.json").is_file():
        missing = {
            "equinox-192": "**Not yet measured on a TPU:**",
            "jax-20909-tpu": "**This repro has not yet run on a TPU:**",
        }
        assert missing[record] in without and "**On a TPU v5e**" not in without


@pytest.mark.parametrize("name", ["equinox-192.md", "jax-20909.md", "jax-20909-tpu.md"])
def test_the_first_screen_speaks_the_issues_words_not_the_studys(with_tpu, name):
    for root in (with_tpu, PROJECT_ROOT):
        first = _first_screen(readme.upstream(root)[root / "results" / "upstream" / name])
        for term in (
            "What carries",
            "not resolved",
            "disagree",
            "seed",
            "cell",
            "study",
            "pmap_params",
            "u=1",
        ):
            assert term not in first, f"{name}: {term!r} on the first screen"


def test_jax_20909_leads_with_his_kind_of_gpu_then_the_tpu_port_and_so_does_the_readme(with_tpu, tmp_path):
    """With a GPU record of the answer's repro (here the CPU's first process printed three times: not a
    GPU's numbers, this tests where they land), the answer and the README's jax#20909 section open
    with the H200, before the TPU's port; without one, the answer says the GPU has not run it."""
    root = tmp_path / "root"
    shutil.copytree(with_tpu, root)
    record = json.loads((root / "results" / "upstream" / "jax-20909-repro" / "summary.json").read_text())
    run = record["runs"][0]
    printed = [upstream_repro.parse(run["outputs"][0])[0]] * 3
    record["runs"] = [run | {"key": "gpu", "label": "NVIDIA H200", "quoted": upstream_repro.quoted(printed)}]
    gpu = root / "results" / "gpu" / "cli" / "jax-20909-repro" / "summary.json"
    gpu.parent.mkdir(parents=True)
    gpu.write_text(json.dumps(record))
    text = readme.upstream(root)[root / "results" / "upstream" / "jax-20909.md"]
    first = _first_screen(text)
    assert first.index("**On one NVIDIA H200**") < first.index("**On a TPU v5e**")
    ratio = next(q for q in record["runs"][0]["quoted"] if q["variant"] == "fori_loop")["ratio"]["median"]
    compile_ms = next(q for q in record["runs"][0]["quoted"] if q["variant"] == "fori_loop")["ms_to_compile"]
    assert f"{ratio:.2f}×" in first and f"| {compile_ms['median']:,.0f}" in first, "the GPU's numbers lead"
    assert "**On one NVIDIA H200**" in first and "not yet run on a GPU" not in text
    assert text.count("\n") <= readme.MAX_UPSTREAM_LINES
    section = readme.render(readme.TEMPLATE.read_text(), root=root).split("## [jax-ml/jax#20909]")[1]
    assert section.index("**On one NVIDIA H200**") < section.index("**On a TPU v5e**")
    tpu_paragraph = section[section.index("**On a TPU v5e**") :].split("\n")[0]
    assert "(results/upstream/jax-20909-tpu.md)" in tpu_paragraph, "the TPU's numbers link the port's text"
    if not (PROJECT_ROOT / "results" / "gpu" / "cli" / "jax-20909-repro" / "summary.json").is_file():
        without = readme.upstream(PROJECT_ROOT)[PROJECT_ROOT / "results" / "upstream" / "jax-20909.md"]
        assert "**This repro has not yet run on a GPU:**" in without and "**On one" not in without


def test_the_jax_20909_repro_lowers_his_form_for_triton_with_this_jax():
    """The repro's GPU branch (his form: whole (T, D) refs, float16, batch 512, T=65536), every form
    lowered for CUDA through Pallas' Triton lowering without a GPU, as the harness times it and as the
    float32 check runs it: a kernel Triton refuses (its first draft's slice was) fails here, not on a GPU."""
    from jaxperf.compilers.triton.capture import capture

    code = upstream_repro.repro((readme.TEMPLATES / "jax-20909.md").read_text())
    switch = 'gpu = jax.default_backend() == "gpu"'
    assert switch in code
    ns: dict = {}
    exec(code.replace(switch, "gpu = True", 1).split("out = {f: call(")[0], ns)  # up to the first run
    jax, jnp = ns["jax"], ns["jnp"]
    assert (ns["B"], ns["T"], ns["D"], ns["N"]) == (512, 65536, 64, 16)
    for form in ns["forms"]:
        for dtype, batch in ((jnp.float16, ns["B"]), (jnp.float32, 1)):
            spec = jax.ShapeDtypeStruct((batch, ns["T"], ns["D"]), dtype)
            got = capture(lambda x, f=form, d=dtype: ns["call"](f, d)(x).mean(), [spec], target="sm_90")
            assert got.programs == batch * ns["T"] // 128, (form, dtype)


def test_the_patches_are_attached_whole_and_each_comment_says_how_to_apply_its_own():
    texts = readme.upstream(PROJECT_ROOT)
    pmap_commit, jit_commit = sorted((PROJECT_ROOT / "results" / "equinox_patch").glob("*.diff"))
    # each comment attaches its own commit alone: filter_pmap's to equinox#192, the wait to its own report
    for name, wanted in (("equinox-192", [pmap_commit]), ("equinox-filter_jit-wait", [jit_commit])):
        folder = PROJECT_ROOT / "results" / "upstream"
        attached = texts[folder / f"{name}.patch"]
        assert attached == "".join(p.read_text().rstrip("\n") + "\n" for p in wanted)
        assert attached.count("Subject: [PATCH]") == len(wanted)
        text = texts[folder / f"{name}.md"]
        assert f"`git am {name}.patch`" in prose(text) and "diff --git" not in text
        assert "results/equinox_patch" not in prose(text)


def test_a_text_counts_every_line_and_a_missing_included_file_fails(tmp_path, monkeypatch):
    (tmp_path / "t.md").write_text("a\n<details><summary>x</summary>\n\n" + "l\n" * 60 + "</details>\n")
    monkeypatch.setattr(readme, "TEMPLATES", tmp_path)
    with pytest.raises(readme.RenderError, match="t.md: 64 lines, more than 60"):
        readme.upstream(PROJECT_ROOT)
    (tmp_path / "t.md").unlink()
    (tmp_path / "t.patch").write_text("{{include results/nope.diff}}\n")
    with pytest.raises(readme.RenderError, match="no results/nope.diff"):
        readme.upstream(PROJECT_ROOT)


# ------------------------------------------------------------------- tools/upstream_repro.py


OUT_192 = """eqx.filter_pmap: 1,234 it/s, 22.98 ms of host CPU per call, 0.42x the it/s of jax.pmap on the arrays
jax.pmap on the arrays: 92 it/s, 7.11 ms of host CPU per call
cpu, devices=8, leaves=392: jax 0.12.0.1, equinox 0.13.8
"""


def test_a_repros_lines_parse_into_numbers_by_variant_and_unit():
    measured, setting = upstream_repro.parse(OUT_192)
    assert measured == {
        "eqx.filter_pmap": {"it_per_s": 1234.0, "host_ms": 22.98, "ratio": 0.42},
        "jax.pmap on the arrays": {"it_per_s": 92.0, "host_ms": 7.11},
    }
    assert setting == {"devices": 8.0, "leaves": 392.0}
    out = "fori_loop: 159.526 ms per kernel call, 94.85x the Python loop's\nTPU v5 lite: T=65536, B=2, D=64, N=16\n"
    assert upstream_repro.parse(out) == ({"fori_loop": {"ms": 159.526, "ratio": 94.85}}, {"T": 65536.0, "B": 2.0, "D": 64.0, "N": 16.0})  # fmt: skip
    with pytest.raises(SystemExit, match="printed no"):
        upstream_repro.parse("Traceback: nothing measured\n")


def test_a_fresh_range_holds_every_process_and_widens_with_their_spread():
    one = upstream_repro.fresh_range([2.0])
    assert (one["median"], one["lo"], one["hi"]) == (2.0, 2.0, 2.0)
    tight, loose = upstream_repro.fresh_range([1.0, 1.01, 0.99]), upstream_repro.fresh_range([1.0, 1.3, 0.8])
    assert (
        tight["lo"] <= 0.99 and tight["hi"] >= 1.01 and tight["hi"] - tight["lo"] < loose["hi"] - loose["lo"]
    )
    assert loose["lo"] < 0.8 and loose["hi"] > 1.3 and loose["median"] == 1.0


def test_processes_that_printed_different_lines_are_refused():
    a, _ = upstream_repro.parse(OUT_192)
    with pytest.raises(SystemExit, match="different lines"):
        upstream_repro.quoted([a, {"eqx.filter_pmap": a["eqx.filter_pmap"]}])


def _fake_python(tmp_path: Path, output: str) -> Path:
    """A Python that prints ``output`` for a repro (and real package versions when asked)."""
    fake = tmp_path / "python"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "if 'importlib.metadata' in sys.argv[2]:\n    exec(sys.argv[2])\n"
        f"else:\n    print({output!r}, end='')\n"
    )
    fake.chmod(0o755)
    return fake


def test_a_run_on_a_device_lands_where_run_sh_packs_it_with_the_manifests_commit(tmp_path, monkeypatch):
    """As `run.sh --exec "python3 tools/upstream_repro.py ... --into $JAXPERF_CLI_OUT"` runs it: the
    device's tree has no .git, so the commit and whether it was clean come from run.sh's manifest check."""
    out = "python_loop: 1.5 ms per kernel call\nfori_loop: 150.0 ms per kernel call, 100.00x the Python loop's\n"
    monkeypatch.setattr(upstream_repro, "ROOT", tmp_path / "device-copy")
    monkeypatch.setenv("JAXPERF_GIT_COMMIT", "a" * 40)
    monkeypatch.setenv("JAXPERF_GIT_DIRTY", "false")
    cli = tmp_path / "cli"
    args = [
        "--text",
        "jax-20909",
        "--label",
        "NVIDIA H200",
        "--key",
        "gpu",
        "--runs",
        "3",
        "--into",
        str(cli),
    ]
    assert upstream_repro.main([*args, "--python", str(_fake_python(tmp_path, out))]) == 0
    record = json.loads((cli / "jax-20909-repro" / "summary.json").read_text())
    assert record["provenance"]["git"] == {"commit": "a" * 40, "dirty": False}
    (run,) = record["runs"]
    assert run["key"] == "gpu" and run["processes"] == 3 and run["quoted"][1]["ratio"]["median"] == 100.0
    assert upstream_repro.check(["jax-20909"], (cli,)) == []
    monkeypatch.delenv("JAXPERF_GIT_DIRTY")
    assert upstream_repro.tree(cli)["dirty"] is True  # unknown is not clean


def test_on_a_device_the_commit_is_the_manifests_even_beside_a_stale_git(tmp_path, monkeypatch):
    """The TPU's copy of the tree held an old .git, and run.sh points git nowhere there: the commit is
    the one run.sh's manifest check names, not git's (which printed nothing, an empty commit)."""
    copy = tmp_path / "device-copy"
    (copy / ".git").mkdir(parents=True)
    monkeypatch.setattr(upstream_repro, "ROOT", copy)
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "no-git"))
    monkeypatch.setenv("JAXPERF_GIT_COMMIT", "b" * 40)
    monkeypatch.setenv("JAXPERF_GIT_DIRTY", "false")
    assert upstream_repro.tree(copy / "x.json") == {"commit": "b" * 40, "dirty": False}


def test_a_record_keeps_other_labels_of_the_same_repro_and_drops_another_repros(tmp_path):
    path = tmp_path / "x-repro" / "summary.json"
    path.parent.mkdir()
    runs = [{"key": "old", "repro_sha256": upstream_repro.sha("a"), "git": {"commit": "c", "dirty": False}},
            {"key": "cpu", "repro_sha256": upstream_repro.sha("b"), "git": {"commit": "d", "dirty": False}}]  # fmt: skip
    path.write_text(json.dumps({"runs": runs}))
    entry = {"key": "tpu", "repro_sha256": upstream_repro.sha("b"), "git": {"commit": "e", "dirty": False}}
    record = upstream_repro.record(path, "b", entry)
    assert [r["key"] for r in record["runs"]] == ["cpu", "tpu"]
    assert record["provenance"]["git"] == {"commit": "d", "dirty": False}
    runs[1]["git"].update(commit_source="log", log="results/tpu/logs/run-x.log")  # filled in from its log
    path.write_text(json.dumps({"runs": runs}))
    head = upstream_repro.record(path, "b", {**entry, "git": {"commit": "e", "dirty": True}})["provenance"][
        "git"
    ]
    assert head == {"commit": "d", "dirty": True, "commit_source": "log", "log": "results/tpu/logs/run-x.log"}
    stale = tmp_path / "jax-20909-repro" / "summary.json"
    stale.parent.mkdir()
    stale.write_text(json.dumps({"runs": [{"label": "TPU v5e", "repro_sha256": "0"}]}))
    problems = upstream_repro.check(["jax-20909"], (tmp_path,))
    assert "['TPU v5e'] not made by the repro in tools/templates/jax-20909.md" in problems[0]
    assert "x-repro/summary.json: no template" in problems[1]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--text", "nope", "--label", "x"], "--text 'nope' is not allowed"),
        (["--runs", "0", "--label", "x"], "--runs 0"),
        (["--label", "x", "--key", "a b"], "--key 'a b' is not allowed"),
        (["--text", "jax-mosaic-gpu-recursion"], "--label is required"),
    ],
)
def test_the_repro_runner_refuses_bad_input_naming_it(args, names, capsys):
    with pytest.raises(SystemExit) as exit_:
        upstream_repro.main(args)
    assert exit_.value.code == 2 and names in capsys.readouterr().err
