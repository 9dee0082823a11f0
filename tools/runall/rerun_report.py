"""The rerun check's report (Markdown, under the rerun's output root) and its command line,
``./run_all.sh compare COMMITTED RERUN``: the same report from two existing output roots,
without running anything. Stdlib only."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .compare import TOOLS, Check, Row, calibration, check, readme, split_results

REPORT = Path("results") / "rerun_check.md"
#: the calibration a run reads (results/<backend>/, jaxperf_study.study.CALIBRATION); the check writes
#: the pooled one beside its report, to copy there before the next full run
CALIBRATION = "rerun_calibration.json"
#: the exit status of a failed check (a verdict flipped, a number outside its spread, a value
#: missing in the rerun)
FAILED = 7
SHOWN = 10  # flipped, outside or missing placeholders printed on the terminal (all are in the report)


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    cells = [head, ["---"] * len(head), *rows]
    return ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in cells]


_OTHER = ("missing in the rerun", "not rerun", "not in the committed results")


def _groups(result: Check) -> dict[str, list[Row]]:
    rows = result.rows
    return {
        "verdicts": [r for r in rows if r.kind == "verdict" and r.status in ("held", "flipped")],
        "with_spread": [r for r in rows if r.kind == "number" and r.status in ("inside", "outside")],
        "no_spread": [r for r in rows if r.kind == "number" and r.status in ("same", "moved")],
        "other": [r for r in rows if r.status in _OTHER],
    }


def headline(result: Check) -> str:
    """The check's outcome and its counts, in one sentence."""
    n, g = result.count, _groups(result)
    return (
        f"{'FAILED' if result.failed else 'passed'}: {n('flipped')} of {len(g['verdicts'])} verdicts "
        f"flipped; {n('inside')} of {len(g['with_spread'])} numbers with a recorded spread fall inside "
        f"the committed spread ({n('outside')} outside); {len(g['no_spread'])} numbers have no spread "
        f"recorded ({n('same')} print the same, {n('moved')} moved); {n('missing in the rerun')} "
        f"missing in the rerun; {n('not rerun')} not rerun."
    )


def markdown(result: Check) -> str:
    """The report: the headline, then tables of verdicts, numbers with a spread, numbers without
    one, and what could not be compared, each in the template's order."""
    g = _groups(result)
    runs = {side: ", ".join(result.runs.get(side, [])) or "nothing read" for side in ("committed", "rerun")}
    outcome, rest = headline(result).split(": ", 1)
    lines = [
        "# Rerun check",
        "",
        "Every number and verdict the README renders (tools/README.template.md), read from the "
        f"committed run (`{_where(result.committed_root)}`, commits {runs['committed']}) and from a "
        f"rerun (`{_where(result.rerun_root)}`, commits {runs['rerun']}).",
        "",
        f"**{outcome}**: {rest}",
        "",
        "A spread is the committed one, widened to hold the committed value: over fresh processes "
        "the range a rerun's median is expected in (the processes' own 95% prediction interval, "
        "widened by the committed run's calibration), else the interquartile range of one "
        "process's rounds. A flipped verdict, a number outside its spread or a value missing in "
        "the rerun fails the check.",
    ]
    if result.calibration:
        c, used = result.calibration, result.inflation_used
        lines += [
            "",
            f"**Calibration.** The committed ranges were widened {used:.2f}-fold. A rerun's median "
            f"moved {c['rms_move']:.2f} half-widths of the processes' own interval (root mean square, "
            f"{sum(len(p['moves']) for p in c['pairs'])} moves over {len(c['pairs'])} pair(s) of full "
            f"runs); to hold all {c['quantities']} ranged quantities at once with "
            f"{c['family_level']:.0%} probability the ranges need {c['inflation']:.2f}-fold "
            f"(z = {c['z']:.2f}). Written to `{CALIBRATION}` beside this report: copy it to "
            "`results/<backend>/` before the next full run.",
        ]
    if result.quick:
        lines += ["", "The rerun is a smoke run (quick mode): its numbers measure nothing."]
    sections = [
        (
            "Verdicts",
            ["committed", "rerun", "outcome"],
            g["verdicts"],
            lambda r: [r.committed, r.rerun, r.status],
        ),
        (
            "Numbers with a recorded spread",
            ["committed", "committed spread", "rerun", "rerun spread", "outcome"],
            g["with_spread"],
            lambda r: [
                r.committed,
                r.committed_spread,
                r.rerun,
                r.rerun_spread,
                r.status + (f" (judged on {r.judged})" if r.judged else ""),
            ],
        ),
        (
            "Numbers with no spread recorded",
            ["committed", "rerun", "printed"],
            g["no_spread"],
            lambda r: [r.committed, r.rerun, r.status],
        ),
        ("Not compared", ["why"], g["other"], lambda r: [r.status + (f" {r.rerun}" if r.rerun else "")]),
    ]
    for title, head, rows, cells in sections:
        if rows:
            lines += ["", f"## {title}", ""]
            lines += _table(["placeholder", *head], [[f"`{r.placeholder}`", *cells(r)] for r in rows])
    return "\n".join(lines) + "\n"


def _where(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(TOOLS.parent)) or "."
    except ValueError:
        return str(path)


def run_check(
    committed: str | Path,
    rerun_root: Path,
    *,
    studies: set[str] | None = None,
    out: Path | None = None,
    template: Path = readme.TEMPLATE,
    say=print,
) -> int:
    """Compare, write the report (default ``<rerun root>/results/rerun_check.md``), print the
    headline and every flipped, outside or missing placeholder. Returns 0, or 7 when the check
    failed (a verdict flipped, a number outside its spread, a value missing in the rerun):
    :data:`FAILED`."""
    committed_root, backend = split_results(committed)
    result = check(template.read_text(), committed_root, Path(rerun_root), backend=backend, studies=studies)
    out = out or Path(rerun_root) / REPORT
    out.parent.mkdir(parents=True, exist_ok=True)
    earlier_file = committed_root / "results" / (backend or "cpu") / CALIBRATION
    earlier = json.loads(earlier_file.read_text()) if earlier_file.is_file() else None
    if any(r.move is not None for r in result.rows) and not result.quick:
        result.calibration = calibration(result, earlier)
        (out.parent / CALIBRATION).write_text(json.dumps(result.calibration, indent=1) + "\n")
    out.write_text(markdown(result))
    say(f"\n=== rerun check: {headline(result)}")
    shown = [r for r in result.rows if r.status in ("flipped", "outside", "missing in the rerun")]
    for row in shown[:SHOWN]:
        say(f"  {row.status}: {row.placeholder}: {row.committed} {row.committed_spread} -> {row.rerun}")
    if len(shown) > SHOWN:
        say(f"  ... and {len(shown) - SHOWN} more")
    say(f"rerun check report: {out}")
    return FAILED if result.failed else 0


def main(argv: list[str]) -> int:
    """``./run_all.sh compare COMMITTED RERUN [--studies LIST] [--out FILE]``."""
    parser = argparse.ArgumentParser(
        prog="./run_all.sh compare",
        description="Compare every number and verdict the README renders between two output roots "
        "(no notebook runs). Exit 0, 7 when a verdict flipped, a number fell outside its range or a value is missing in the rerun, 2 on "
        "a bad argument.",
    )
    parser.add_argument("committed", help="the committed output root, or its results/<backend> (results/cpu)")
    parser.add_argument("rerun", help="the rerun's output root (a folder holding results/)")
    parser.add_argument("--studies", help="only these studies were rerun, e.g. cpu/dispatch,cpu/loops")
    parser.add_argument("--out", type=Path, help="the report (default: <rerun>/results/rerun_check.md)")
    parser.add_argument(
        "--template",
        type=Path,
        default=readme.TEMPLATE,
        help="the README template whose placeholders to compare",
    )
    args = parser.parse_args(argv)
    try:
        split_results(args.committed)
        rerun_root, _ = split_results(args.rerun)
    except ValueError as err:
        parser.error(str(err))
    studies = {s.strip() for s in args.studies.split(",") if s.strip()} if args.studies else None
    if not args.template.is_file():
        parser.error(f"--template {args.template}: no such file")
    return run_check(args.committed, rerun_root, studies=studies, out=args.out, template=args.template)
