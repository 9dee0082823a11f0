#!/usr/bin/env python3
"""Render README.md from tools/README.template.md and the committed summary.json files.

Every number the README quotes is a placeholder in the template, filled from the study
that measured it:

    {{cpu/loops seed_reproduction[mode=xla,T=16384].ratio:.1f}}

reads ``results/cpu/loops/summary.json``, walks ``seed_reproduction``, picks the one list
element whose fields match every ``key=value`` of the selector, then its ``ratio``, and
formats it with ``.1f`` (``:,.0f``, ``:.2f``, ``:.0%`` ...). Dotted paths walk dicts and
lists (``answer.by_measure.loop_it_per_s.largest.leaves``).

The check that makes a quoted number citable: the sentence around each placeholder (its
sentence in prose; its row and its column's header in a table) must name what the number
is. Every selector value must appear there (``mode=xla`` as "XLA:CPU", ``T=16384`` as
"T=16384" or the row's T, a variant or method by name), and so must the words of the
field quoted (``fori_ms``: "fori_loop"; ``scalar_carry_u1_ms``: "scalar_carry" and "u=1"
or "unroll=1"; ``loop_it_per_s``: "pipelined"). A sentence that quotes the 11.0 ms of
``scalar_carry u=2`` while it names ``u=1`` fails.

The same placeholders fill the upstream texts, one Markdown template each in tools/templates/
(``equinox-192.md`` -> ``results/upstream/equinox-192.md``): what a maintainer reads, pasted
into the issue, with no prose in Python, at most :data:`MAX_UPSTREAM_LINES` lines. A ``.patch``
template there (``equinox-192.patch``) renders the file attached to that comment: its
``{{include PATH}}`` lines paste committed files whole (the ``git format-patch`` commits).

A block ``{{#if tpu/loops}} ... {{#else}} ... {{/if}}`` renders its first part where that
study's summary.json exists (a run on a lent device), its second (optional) where it does not,
so a text says plainly what was not measured rather than failing on a number it does not have.

The map of the code is rendered too, so that it cannot fall behind the code (issue 47): every
package under lib/ with the first paragraph of its docstring, and each package's own modules
(:func:`code_map`). The README template places it with ``{{map}}``; CONTRIBUTING.md holds it
between the lines :data:`MAP_BEGIN` and :data:`MAP_END`, which this rewrites.

    python tools/readme.py          # rewrite README.md, results/upstream/ (texts, patches) and CONTRIBUTING.md's map
    python tools/readme.py --check  # exit 1 if one of them differs from what it renders, or a label fails
    python tools/readme.py --root DIR  # render from another output root's results (a rerun's)
                                       # into DIR/README.md (or --out FILE)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "tools" / "README.template.md"
README = ROOT / "README.md"
#: the upstream texts' templates, and where each renders (results/upstream/<its name>)
TEMPLATES = ROOT / "tools" / "templates"
UPSTREAM = Path("results") / "upstream"
#: the longest upstream text a maintainer is asked to read, in lines (a patch is attached, not pasted)
MAX_UPSTREAM_LINES = 60
#: the longest comment GitHub takes, in characters
MAX_COMMENT_CHARS = 65536
#: ``{{include results/equinox_patch/1-....diff}}``: a committed file pasted whole (into an attached ``.patch``)
INCLUDE = re.compile(r"\{\{include (?P<path>[\w/.-]+)\}\}")
DETAILS = re.compile(r"<details>.*?</details>\n?", re.S)
LIB = ROOT / "lib"
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
#: where the map stands: a line of its own in the README template; in CONTRIBUTING.md, between these
MAP = "{{map}}"
MAP_BEGIN = "<!-- the map of lib/, rendered by tools/readme.py from each package's docstring: edit those -->"
MAP_END = "<!-- end of the map -->"
#: the map's columns: the folder, then what its docstring says, wrapped at this width
MAP_FOLDER, MAP_WIDTH = 22, 100
BLOCK = re.compile(
    r"\{\{#if (?P<study>[\w/.-]+)\}\}\n?(?P<yes>.*?)(?:\{\{#else\}\}\n?(?P<no>.*?))?\{\{/if\}\}\n?", re.S
)
PLACEHOLDER = re.compile(r"\{\{(?P<study>[\w/.-]+)\s+(?P<path>[^:}]+?)(?::(?P<fmt>[^}]*))?\}\}")
SELECTOR = re.compile(r"^(?P<key>[^\[\]]+)\[(?P<sel>[^\]]*)\]$")

#: phrases that name a selector's value in a sentence (any one of them must appear)
VALUE_WORDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("mode", "xla"): ("XLA:CPU",),
    ("mode", "pallas_interpret"): ("interpret",),
    ("mode", "xla_harness"): ("harness",),
    ("mode", "pallas"): ("TPU", "GPU"),
    ("mode", "pallas_harness"): ("harness",),
    ("measure", "loop_it_per_s"): ("pipelined",),
    ("measure", "it_per_s"): ("blocked",),
    ("step", "noop"): ("no-op",),
    ("step", "train"): ("train",),
    ("donated", "True"): ("donated",),
    ("variant", "python"): ("Python loop", "python"),
    ("method", "jit_params"): (
        "jit_params",
        "jit\\_params",
        "`jax.jit` on params",
        "`jax.jit` on the same arrays",
    ),
    ("target", "mosaic_tpu v5e"): ("mosaic_tpu v5e", "mosaic\\_tpu v5e", "Mosaic TPU"),
    ("model", "mlp_depth16_x128"): (
        "mlp_depth16_x128",
        "mlp\\_depth16\\_x128",
        "an MLP of depth 16, 128 microbatches",
    ),
    ("method", "filter_jit_patched"): ("filter_jit_patched", "filter\\_jit\\_patched", "with this commit"),
}
#: words a quoted field must appear with (each group: any one of its phrases)
FIELD_WORDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "fori_ms": (("fori_loop", "fori"), ("ms",)),
    "python_ms": (("Python loop",), ("ms",)),
    "ratio": (("×", "x"),),
    "python_compile_ms": (("compile",), ("Python loop",)),
    "fori_compile_ms": (("compile",), ("fori_loop",)),
    "scalar_carry_u1_ms": (("scalar_carry",), ("u=1", "unroll=1"), ("ms",)),
    "scalar_carry_u1_vs_python": (("scalar_carry",), ("u=1", "unroll=1"), ("Python loop",)),
    "scalar_carry_u1_compile_ms": (("scalar_carry",), ("compile",)),
    "loop_it_per_s": (("pipelined",),),
    "it_per_s": (("it/s",),),
    "cpu_us_per_call": (("host CPU", "CPU"),),
}


#: words a path segment (not the quoted field) must appear with: the measure a branch holds
SEGMENT_WORDS: dict[str, tuple[str, ...]] = {
    "seed_loop_it_per_s": ("seed's loop",),
    "loop_it_per_s": ("pipelined",),
    "it_per_s": ("blocked",),
    "sm_86": ("sm_86",),
    "sm_90": ("sm_90",),
}


class RenderError(ValueError):
    """A placeholder that cannot be filled, or whose sentence does not name what it quotes."""


def record(study: str, root: Path = ROOT) -> Path:
    """Where ``study`` is: ``<root>/results/<study>/summary.json`` (``backend/name``), or a tool's
    JSON named whole (``tpu/cli/seed.json``: what ``python -m jaxperf loops --json`` wrote there)."""
    return root / "results" / study if study.endswith(".json") else root / "results" / study / "summary.json"


def load(study: str, cache: dict[str, Any], root: Path = ROOT) -> Any:
    """:func:`record`'s file, read once into ``cache``; RenderError naming the file when there is none."""
    if study not in cache:
        path = record(study, root)
        if not path.is_file():
            raise RenderError(f"{{{{{study} ...}}}}: no {path.relative_to(root)}")
        cache[study] = json.loads(path.read_text())
    return cache[study]


def _split(path: str) -> list[str]:
    """``a.b[x=1.5,y=z].c`` -> ``["a", "b[x=1.5,y=z]", "c"]`` (dots inside brackets stay)."""
    parts, depth, cur = [], 0, ""
    for ch in path:
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    return [*parts, cur]


def selectors(path: str) -> list[tuple[str, str]]:
    """Every ``key=value`` of the path's selectors, in order."""
    out = []
    for part in _split(path):
        m = SELECTOR.match(part)
        if m:
            out += [tuple(kv.split("=", 1)) for kv in m["sel"].split(",") if kv]  # type: ignore[misc]
    return out  # type: ignore[return-value]


def _matches(item: Any, sel: list[tuple[str, str]]) -> bool:
    return isinstance(item, dict) and all(str(item.get(k)) == v for k, v in sel)


def walk(summary: Any, path: str) -> tuple[Any, list[dict[str, Any]]]:
    """(value at ``path``, the list elements its selectors picked)."""
    node, picked = summary, []
    for part in _split(path):
        m = SELECTOR.match(part)
        key = m["key"] if m else part
        if isinstance(node, list):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            raise RenderError(f"{path!r}: no {key!r}")
        if m:
            sel = [tuple(kv.split("=", 1)) for kv in m["sel"].split(",") if kv]
            hits = [item for item in node if _matches(item, sel)]  # type: ignore[arg-type]
            if len(hits) != 1:
                raise RenderError(f"{path!r}: selector [{m['sel']}] matches {len(hits)} elements, not one")
            node = hits[0]
            picked.append(node)
    return node, picked


#: format specs for verdicts: a boolean rendered as words
WORD_SPECS = {"met": ("met", "not met"), "yes": ("yes", "no"), "shown": ("shown", "not shown")}
#: ``:verdict``: a three-valued verdict of jaxperf_study.goals ("met", "tie", "not met") as a sentence says it
VERDICT_WORDS = {"met": "met", "tie": "not resolved", "not met": "not met"}


#: ``:goal>=X``: a median [q25, q75] judged against a goal of X, not resolved when its spread holds X
GOAL_SPEC = re.compile(r"^goal>=(?P<goal>[0-9.]+)$")


def goal_verdict(stat: Any, goal: float) -> str:
    """ "met" only when the whole interquartile range clears ``goal``, "not met" when it lies
    below, else not resolved against the goal: a rerun of the study cannot flip a stated verdict."""
    if not (isinstance(stat, dict) and {"median", "q25", "q75"} <= set(stat)):
        raise RenderError(f"format :goal>= needs a {{median, q25, q75}} value, got {stat!r}")
    # the range widened to hold the median, as jaxperf_study.goals.judge does (tests/test_goals.py)
    lo, hi = min(stat["q25"], stat["median"]), max(stat["q75"], stat["median"])
    if lo >= goal:
        return "met"
    if hi < goal:
        return "not met"
    return f"not resolved, its spread holds {goal:g}×"


def as_printed(stat: Any, spec: str) -> str | None:
    """A ranged number a repro printed, said as printed where a range would mislead: every
    process printed the same digits (``"0.67× (each of the 3 processes printed 0.67×)"``, not a
    range of zero width), or the median prints as zero, where no range is "3× its median"
    (``"0% to 1% (as the 3 processes printed)"``); None otherwise (quote the range)."""
    from jaxperf_study.reruns import RANGED  # numpy's: imported only here, as in fill's :r

    m = RANGED.match(spec)
    values = stat.get("values") if isinstance(stat, dict) else None
    if m is None or not isinstance(values, list) or len(values) < 2:
        return None
    number, unit = "{:" + m["spec"] + "}", m["unit"]
    said = {number.format(v) for v in [*values, stat["median"], stat["lo"], stat["hi"]]}
    if len(said) == 1:
        (one,) = said
        return f"{one}{unit} (each of the {len(values)} processes printed {one}{unit})"
    if float(number.format(stat["median"]).replace(",", "")) == 0:
        low, high = number.format(min(values)), number.format(max(values))
        return f"{low}{unit} to {high}{unit} (as the {len(values)} processes printed)"
    return None


def fmt(value: Any, spec: str | None) -> str:
    if value is None:
        raise RenderError("a placeholder's value is null (not measured): quote it as words instead")
    if spec and GOAL_SPEC.match(spec):
        return goal_verdict(value, float(GOAL_SPEC.match(spec)["goal"]))  # type: ignore[index]
    if spec == "ranged":  # a ratio over processes: its rerun range, or "not resolved" when that holds 1
        if not (isinstance(value, dict) and {"median", "lo", "hi"} <= set(value)):
            raise RenderError(f"format :ranged needs a {{median, lo, hi}} value, got {value!r}")
        med, lo, hi = value["median"], value["lo"], value["hi"]
        # a ratio against 1 is not resolved while its range holds 1, and by :r's 3x rule
        from jaxperf_study.reruns import quote  # numpy's: the run_all engine imports this file stdlib-only

        return (
            f"not resolved (median {med:.2f}×; its range holds 1)" if lo <= 1 <= hi else quote(value, "r.2f×")
        )
    if spec == "count":  # how many a list holds (the T a run timed: its parameters)
        if not isinstance(value, (list, dict)):
            raise RenderError(f"format :count needs a list, got {value!r}")
        return str(len(value))
    if spec == "verdict":
        if value not in VERDICT_WORDS:
            raise RenderError(f"format :verdict needs one of {sorted(VERDICT_WORDS)}, got {value!r}")
        return VERDICT_WORDS[value]
    if spec in WORD_SPECS:
        if not isinstance(value, bool):
            raise RenderError(f"format :{spec} needs a true/false value, got {value!r}")
        return WORD_SPECS[spec][0 if value else 1]
    out = format(value, spec) if spec else str(value)
    return out[1:] if re.fullmatch(r"-0(\.0*)?", out) else out  # a value that rounds to 0 has no sign


def _after_blank(text: str, start: int) -> int:
    """Where the block (paragraph, table) holding ``start`` begins."""
    blank = text.rfind("\n\n", 0, start)
    return 0 if blank < 0 else blank + 2


def context(text: str, start: int, end: int) -> str:
    """What names a placeholder at ``text[start:end]``: in a table, its row and its column's
    header; in prose, its sentence (from the last sentence end before it to the next one),
    within its paragraph."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    if line.lstrip().startswith("|"):
        block_start = _after_blank(text, start)
        header = text[block_start : text.find("\n", block_start)]
        column = text[line_start:start].count("|") - 1
        cells = header.split("|")
        head = cells[column + 1] if 0 <= column + 1 < len(cells) else header
        return f"{head} {line}"
    para_start = _after_blank(text, start)
    para_end = text.find("\n\n", end)
    para = text[para_start : para_end if para_end >= 0 else len(text)]
    offset = start - para_start
    breaks = [m.end() for m in re.finditer(r"[.;:]\s(?=[A-Z*`(-])|\n- ", para) if m.end() <= offset]
    after = [
        m.start() for m in re.finditer(r"\.\s(?=[A-Z*`(])|\n- ", para) if m.start() >= offset + (end - start)
    ]
    return para[(breaks[-1] if breaks else 0) : (after[0] if after else len(para))]


def required(study: str, path: str, picked: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The phrase groups a placeholder's sentence must contain (each group: any one phrase)."""
    groups: list[tuple[str, ...]] = []
    for key, value in selectors(path):
        if key == "T":
            groups.append((f"T={value}", f"| {value} |", f"T = {value}"))
        elif (key, value) in VALUE_WORDS:
            groups.append(VALUE_WORDS[(key, value)])
        elif key in ("variant", "method", "model", "target", "kernel", "generation", "release"):
            groups.append((value, value.replace("_", "\\_")))
    parts = _split(path)
    field = parts[-1]
    groups += list(FIELD_WORDS.get(field, ()))
    for part in parts[:-1]:
        key = SELECTOR.match(part)["key"] if SELECTOR.match(part) else part  # type: ignore[index]
        if key in SEGMENT_WORDS:
            groups.append(SEGMENT_WORDS[key])
    for item in picked:  # a fix chosen per T is named by its form and unroll
        if field.startswith("fix_") and "fix_form" in item and item.get("fix_form"):
            groups.append((f"{item['fix_form']} u={item['fix_unroll']}",))
    return groups


def plain(doc: str) -> str:
    """A docstring's first paragraph as plain words: reST roles, literals and emphasis unmarked
    (``:func:`~.forms.kernel_loop``` -> ``kernel_loop``), whitespace folded."""
    first = doc.strip().split("\n\n", 1)[0]

    def role(m: re.Match[str]) -> str:
        target = m.group(1)
        return target.lstrip("~.").rsplit(".", 1)[-1] if target.startswith("~") else target.lstrip(".")

    first = re.sub(r":\w+:`([^`]+)`", role, first)
    first = re.sub(r"``([^`]+)``|`([^`]+)`", lambda m: m.group(1) or m.group(2), first)
    first = re.sub(r"(?<![\w*])\*([A-Za-z][\w ]*)\*(?![\w*])", r"\1", first)
    return " ".join(first.split())


def _docstring(init: Path) -> str:
    doc = ast.get_docstring(ast.parse(init.read_text()))
    if not doc:
        raise RenderError(f"{init}: no docstring to map")
    return doc


def _entry(folder: str, text: str) -> list[str]:
    lines = textwrap.wrap(text, MAP_WIDTH - MAP_FOLDER) or [""]
    head = folder.ljust(MAP_FOLDER) if len(folder) < MAP_FOLDER else folder + "\n" + " " * MAP_FOLDER
    return [head + lines[0], *(" " * MAP_FOLDER + line for line in lines[1:])]


def code_map(lib: Path = LIB, brief: bool = False) -> str:
    """The map of ``lib``: each package (a folder with an ``__init__.py``) with the first
    paragraph of its docstring, nested as the folders are, subpackages in name order, then its
    own modules (``*.py``) by name; a code block. ``brief`` (the README's): two levels of
    packages, each with its docstring's first sentence. RenderError for a package without a docstring."""

    def package(folder: Path, depth: int) -> list[str]:
        name = f"{folder.relative_to(lib.parent).as_posix()}/" if depth == 0 else f"{folder.name}/"
        text = plain(_docstring(folder / "__init__.py"))
        out = _entry("  " * depth + name, re.split(r"(?<=[.?!])\s", text)[0] if brief else text)
        for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file()):
            out += package(sub, depth + 1) if depth < 1 or not brief else []
        modules = sorted(p.stem for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
        if modules and depth == 0 and not brief:
            out += _entry("  *.py", ", ".join(modules))
        return out

    roots = sorted(p for p in lib.iterdir() if (p / "__init__.py").is_file())
    return "```\n" + "\n".join(line for root in roots for line in package(root, 0)) + "\n```"


def with_map(text: str, lib: Path = LIB) -> str:
    """``text`` (CONTRIBUTING.md) with the map between :data:`MAP_BEGIN` and :data:`MAP_END`
    rendered anew; RenderError when the markers are missing."""
    begin, end = text.find(MAP_BEGIN), text.find(MAP_END)
    if begin < 0 or end < begin:
        raise RenderError(f"no map between {MAP_BEGIN!r} and {MAP_END!r}")
    return text[: begin + len(MAP_BEGIN)] + "\n" + code_map(lib) + "\n" + text[end:]


def resolve_blocks(template: str, cache: dict[str, Any], root: Path = ROOT) -> str:
    """``template`` with each ``{{#if study}}`` block replaced by the part that applies to ``root``'s
    results (or ``cache``'s): what renders, and what a check of the placeholders should read."""

    def part(m: re.Match[str]) -> str:
        ran = m["study"] in cache or record(m["study"], root).is_file()
        return m["yes"] if ran else m["no"] or ""

    return BLOCK.sub(part, template)


#: a ranged number's pieces quoted apart (the 3x rule is :r's, jaxperf_study.reruns.quote)
BARE_RANGE = re.compile(r"(\.|_)(lo|hi)$")


def relative_links(text: str) -> list[str]:
    """The Markdown links of ``text`` that are not absolute (an issue's reader has no clone)."""
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not t.startswith(("https://", "http://", "#"))]


def render(template: str, cache: dict[str, Any] | None = None, root: Path = ROOT) -> str:
    """The README: every placeholder filled from ``root``'s results (the project's by default);
    raises RenderError for a placeholder that cannot be filled or whose sentence does not name
    what it quotes, and for a range's ends quoted apart from its number (``:r`` quotes them)."""
    cache = {} if cache is None else cache
    errors: list[str] = []
    template = resolve_blocks(template, cache, root)
    if MAP in template:
        template = template.replace(MAP, code_map(brief=True))

    def one(m: re.Match[str]) -> str:
        try:
            if BARE_RANGE.search(m["path"].strip()):
                raise RenderError(
                    "a range's end quoted apart: quote the number with :r (a range wider than 3x it reads not resolved)"
                )
            value, picked = walk(load(m["study"], cache, root), m["path"].strip())
            around = context(template, m.start(), m.end())
            plain = PLACEHOLDER.sub("", around)
            for group in required(m["study"], m["path"].strip(), picked):
                if not any(phrase in plain for phrase in group):
                    raise RenderError(f"its sentence names none of {list(group)}: {plain.strip()[:160]!r}")
            # a number with its rerun range, or "not resolved" (numpy's: imported only here, as the
            # run_all engine imports this file with the standard library alone)
            if m["fmt"] and m["fmt"] != "ranged" and m["fmt"].startswith("r"):
                from jaxperf_study.pages import ranged
                from jaxperf_study.reruns import quote

                stat = ranged(load(m["study"], cache, root), m["path"].strip(), value)
                return as_printed(stat, m["fmt"]) or quote(stat, m["fmt"])
            return fmt(value, m["fmt"])
        except (RenderError, ValueError, TypeError, IndexError) as err:
            errors.append(f"{m.group(0)}: {err}")
            return m.group(0)

    out = PLACEHOLDER.sub(one, template)
    if errors:
        raise RenderError("\n".join(errors))
    return out


def included(name: str, path: str) -> str:
    """The project's file at ``path`` (``{{include PATH}}`` in template ``name``), without its last newline."""
    if not (ROOT / path).is_file():
        raise RenderError(f"{name}: {{{{include {path}}}}}: no {path}")
    return (ROOT / path).read_text().rstrip("\n")


def upstream(root: Path = ROOT, cache: dict[str, Any] | None = None) -> dict[Path, str]:
    """Every upstream text (path under ``root`` -> rendered text) from tools/templates/*.md and
    ``root``'s results, and each attachment from tools/templates/*.patch, its ``{{include PATH}}``
    lines replaced by the project's files (a patch is not a run's output); RenderError for a text
    longer than :data:`MAX_UPSTREAM_LINES` or :data:`MAX_COMMENT_CHARS`."""
    cache = {} if cache is None else cache
    out = {
        root / UPSTREAM / t.name: INCLUDE.sub(lambda m, name=t.name: included(name, m["path"]), t.read_text())
        for t in sorted(TEMPLATES.glob("*.patch"))
    }
    for template in sorted(TEMPLATES.glob("*.md")):
        text = render(template.read_text(), cache, root)
        lines = text.count("\n")
        if lines > MAX_UPSTREAM_LINES:
            raise RenderError(f"{template.name}: {lines} lines, more than {MAX_UPSTREAM_LINES}")
        if len(text) > MAX_COMMENT_CHARS:
            raise RenderError(
                f"{template.name}: {len(text)} characters, more than a comment's {MAX_COMMENT_CHARS}"
            )
        prose = re.sub(r"```.*?```", "", DETAILS.sub("", text), flags=re.S)  # code is not a link
        links = relative_links(prose)
        if links:
            raise RenderError(f"{template.name}: relative links {links}: an issue's reader has no clone")
        out[root / UPSTREAM / template.name] = text
    return out


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if README.md is not what the template renders"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=ROOT,
        help="the output root whose results/ to read (default: the project's committed results)",
    )
    parser.add_argument("--out", type=Path, help="where to write the README (default: README.md in --root)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    root = args.root.resolve()
    if not (root / "results").is_dir():
        parser.error(f"--root {args.root}: no results/ folder there (give an output root of run_all.sh)")
    out = args.out or root / "README.md"
    if args.check and out.resolve() != README:
        parser.error("--check compares the project's README.md: give no --root or --out")
    try:
        text = render(TEMPLATE.read_text(), root=root)
        texts = upstream(root)
        if out.resolve() == README:  # the project's own README: its CONTRIBUTING.md's map too
            texts[CONTRIBUTING] = with_map(CONTRIBUTING.read_text())
    except RenderError as err:
        print(f"readme: {err}", file=sys.stderr)
        return 1
    if args.check:
        stale = [p for p, t in {README: text, **texts}.items() if not p.is_file() or p.read_text() != t]
        if stale:
            names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
            print(f"readme: {names} not what the templates render: run tools/readme.py", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    for path, body in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
