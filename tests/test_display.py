"""jaxperf_study.display: tables a notebook shows wrap at its width (issue 19, item 7). Break
opportunities (<wbr>) go after underscores and slashes of names, never inside an HTML tag,
a link target or a code span; a frame still too wide is transposed or split into column
groups; nothing but the display changes."""

from __future__ import annotations

import re

import pandas as pd

from jaxperf_study import display


def test_breakable_escapes_and_breaks_after_underscores_and_slashes():
    assert display.breakable("python_compile_ms") == "python_<wbr>compile_<wbr>ms"
    assert display.breakable("a/b <c>") == "a/<wbr>b &lt;c&gt;"
    assert display.breakable("x_ y") == "x_ y"  # a break before a space is no use
    assert display.breakable("") == ""


def test_markdown_tables_get_breaks_outside_code_links_and_tags_only():
    text = (
        "Some `prose_name` stays.\n"
        "| step\\_without | `fix_unroll` | [a_b](dir_x/f_y.md) | x<br/>y | 1.5 |\n"
        "|---|:---:|---|---|---|\n"
    )
    out = display.wrap_markdown(text)
    prose, row, rule = out.splitlines()
    assert prose == "Some `prose_name` stays."  # not a table row
    assert rule == "|---|:---:|---|---|---|"
    assert "step\\_<wbr>without" in row
    assert "`fix_`<wbr>`unroll`" in row
    assert "[a_<wbr>b](dir_x/f_y.md)" in row  # the link target is untouched
    assert "<br/>" in row and "1.5" in row
    assert out.endswith("\n")


def _columns_in(html: str) -> int:
    return len(re.findall(r"<table", html))


def test_a_narrow_frame_is_pandas_table_with_breaks_and_short_floats():
    df = pd.DataFrame({"python_compile_ms": [1.23456789, 20.0], "variant": ["fori u=1", "hand_unrolled u=8"]})
    html = display.frame_html(df)
    assert _columns_in(html) == 1 and "transposed" not in html and "groups" not in html
    assert "python_<wbr>compile_<wbr>ms" in html and "hand_<wbr>unrolled u=8" in html
    assert ">1.235<" in html and "1.23456789" not in html
    assert "<style scoped>" in html  # pandas' own look


def test_a_short_wide_frame_is_transposed_with_its_names_as_headers():
    row = {"compiler": "XLA:CPU", "kernel": "seed", "T": 1024, "variant": "fori u=1"}
    row |= {f"measure_number_{k}": 1000.5 + k for k in range(20)}
    df = pd.DataFrame([row, {**row, "variant": "python"}])
    html = display.frame_html(df)
    assert html.startswith("<div><p>(transposed to fit") and _columns_in(html) == 1
    body = html.split("<tbody>")[1]
    assert "measure_<wbr>number_<wbr>19" in body  # the measures are rows now
    assert "python" in html.split("<tbody>")[0]  # the names head the columns


def test_a_long_wide_frame_is_split_into_column_groups_that_each_fit():
    df = pd.DataFrame({f"column_{k}": [123456.789 + k] * 80 for k in range(30)})
    html = display.frame_html(df)
    assert "(columns in" in html and _columns_in(html) >= 2
    assert "first 60 of 80 rows" in html
    for table in html.split("<table")[1:]:
        heads = re.findall(r"<th>(column_<wbr>\d+)</th>", table)
        assert heads and display.CELL_PAD_PX * (len(heads) + 1) < display.WIDTH_PX


def test_install_outside_a_kernel_changes_nothing():
    assert display.install() is False


def test_each_level_of_a_multiindex_counts_as_a_column_of_its_own():
    """A 3-level index renders as three label columns, each padded: counted as one (the
    committed 03 run), a table estimated to fit was 940 px in an 898 px column."""
    rows = [
        {"release": "0.11.6", "jax": "0.12.0.1", "variant": "eqx.filter_jit", "m": 1.0},
        {"release": "0.11.7", "jax": "0.12.0.1", "variant": "jax.jit", "m": 2.0},
    ]
    one = pd.DataFrame(rows).set_index(["release", "jax", "variant"])
    labels, _ = display._widths(one)
    single = display._width(["release 0.11.6 0.12.0.1 eqx.filter_jit"])
    assert labels > 2 * single
    assert labels == sum(
        display._width(t)
        for t in (
            ["release", "0.11.6", "0.11.7"],
            ["jax", "0.12.0.1"] * 2,
            ["variant", "eqx.filter", "jax.jit"],
        )
    )


def test_a_frame_whose_labels_push_it_over_is_split():
    row = {"release": "0.11.10", "jax": "0.12.0.1", "variant": "cached_filter_jit"}
    row |= {f"ratio_q{k}": 0.003629 for k in range(8)}
    html = display.frame_html(pd.DataFrame([row] * 12))
    assert "(columns in" in html
    for table in html.split("<table")[1:]:
        assert ">release<" in table and ">variant<" in table  # the labels repeat


def _md_table(columns: int, rows: int = 3) -> str:
    head = "| variant | " + " | ".join(f"measure number {k}" for k in range(columns)) + " |"
    rule = "|" + "---|" * (columns + 1)
    body = [
        f"| hand\\_unrolled u={r} | " + " | ".join(f"{k}.50" for k in range(columns)) + " |"
        for r in range(rows)
    ]
    return "\n".join([head, rule, *body]) + "\n"


def test_a_wide_markdown_table_is_split_into_groups_that_repeat_its_names():
    out = display.wrap_markdown("Before.\n\n" + _md_table(16) + "\nAfter.\n")
    assert out.startswith("Before.\n") and out.rstrip().endswith("After.")
    assert "(columns in " in out
    tables = [t for t in out.split("\n\n") if t.lstrip().startswith("|")]
    assert len(tables) >= 2
    seen = []
    for t in tables:
        lines = t.strip().splitlines()
        assert lines[0].startswith("| variant |") and re.fullmatch(r"\|( --- \|)+", lines[1])
        assert all(line.startswith("| hand\\_<wbr>unrolled u=") for line in lines[2:])
        assert len({line.count("|") for line in lines}) == 1  # every row has the header's cells
        heads = [c.strip() for c in lines[0].strip("|").split("|")][1:]
        widths = [display._width([h, "15.50"]) for h in heads]
        assert display._width(["variant", "hand_", "unrolled u=2"]) + sum(widths) <= display.WIDTH_PX
        seen += heads
    assert seen == [f"measure number {k}" for k in range(16)]  # each once, in order


def test_a_markdown_table_that_fits_keeps_its_rows_and_an_odd_one_is_left_alone():
    narrow = _md_table(3)
    assert display.wrap_markdown(narrow).replace("<wbr>", "") == narrow
    ragged = "| a | b |\n|---|---|\n| 1 |\n"  # a row short of cells: shown as written
    assert display.wrap_markdown(ragged) == ragged
    escaped = "| x \\| y | z |\n|---|---|\n| 1 | 2 |\n"
    assert display._md_cells(escaped.splitlines()[0]) == ["x \\| y", "z"]


def test_a_split_markdown_table_repeats_its_sweep_keys_keeps_its_indent_and_its_note_is_a_paragraph():
    # 04's compile-stage table: kernel, variant, then T (numeric, a key by its header)
    heads = ["kernel", "variant", "T", *(f"stage number {k}" for k in range(14))]
    rows = [
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
        *(
            f"| seed | fori u={u} | {T} | " + " | ".join("12.5" for _ in heads[3:]) + " |"
            for u, T in ((1, 256), (2, 8192))
        ),
    ]
    text = "Text just before.\n" + "\n".join("  " + r for r in rows) + "\n"
    out = display.wrap_markdown(text)
    assert "Text just before.\n\n  (columns in " in out  # its own paragraph, at the table's indent
    tables = [t for t in out.split("\n\n") if t.lstrip().startswith("|")]
    assert len(tables) >= 2
    for t in tables:
        lines = t.splitlines()
        assert all(line.startswith("  | ") for line in lines)  # still inside the list item
        assert lines[0].startswith("  | kernel | variant | T |")
        assert lines[2].startswith("  | seed | fori u=1 | 256 |") and lines[3].startswith(
            "  | seed | fori u=2 | 8192 |"
        )


def test_a_numeric_column_not_named_as_a_key_is_not_repeated():
    out = display.wrap_markdown(
        _md_table(16)
        .replace("| variant |", "| variant | score |", 1)
        .replace("---|", "---|---|", 1)
        .replace("unrolled u=0 |", "unrolled u=0 | 1.5 |")
        .replace("unrolled u=1 |", "unrolled u=1 | 2.5 |")
        .replace("unrolled u=2 |", "unrolled u=2 | 3.5 |")
    )
    tables = [t for t in out.split("\n\n") if t.lstrip().startswith("|")]
    assert len(tables) >= 2 and not tables[1].startswith("| variant | score |")
