"""Unified diffs read and applied in pure Python, so that the Equinox patch can be built into
this process without ``git`` or ``patch`` on the machine.

:func:`parse` reads a ``git diff`` (or ``diff -u``) into one :class:`FilePatch` per file;
:func:`apply` applies one to a file's text. A hunk applies where its old lines (context and
removed) match the text exactly: at the line its header names, else at the one other place
they occur (as ``patch`` would, with an offset and no fuzz). When they match nowhere, or at
more than one place, :class:`DoesNotApply` says which hunk and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DoesNotApply(ValueError):
    """A hunk's old lines are not in the text it is applied to (or not at one place)."""


@dataclass
class Hunk:
    old_start: int  # 1-based line of the first old line, as the header says
    old: list[str] = field(default_factory=list)  # context and removed lines, with their newlines
    new: list[str] = field(default_factory=list)  # context and added lines
    context: int = 0  # lines in both

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{len(self.old)} +{self.old_start},{len(self.new)} @@"


@dataclass
class FilePatch:
    path: str  # relative to the tree the diff was made in, without git's a/ and b/
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def added(self) -> int:
        return sum(len(h.new) - h.context for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(len(h.old) - h.context for h in self.hunks)


def _strip_prefix(path: str) -> str:
    path = path.split("\t", 1)[0].strip()
    return path[2:] if path[:2] in ("a/", "b/") else path


def parse(text: str) -> list[FilePatch]:
    """The file patches of the unified diff ``text``, in order. Raises ValueError naming the
    line when a hunk line has no ``' '``, ``'-'`` or ``'+'`` marker or a hunk ends early."""
    patches: list[FilePatch] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            patches.append(FilePatch(_strip_prefix(lines[i + 1][4:])))
            i += 2
            continue
        match = _HUNK.match(line)
        if match is None:
            i += 1  # "diff --git", "index", or prose around the diff
            continue
        if not patches:
            raise ValueError(f"diff line {i + 1}: a hunk before any '--- a/... +++ b/...' header.")
        old_len = int(match[2]) if match[2] is not None else 1
        new_len = int(match[4]) if match[4] is not None else 1
        hunk = Hunk(int(match[1]))
        i += 1
        while len(hunk.old) < old_len or len(hunk.new) < new_len:
            if i >= len(lines):
                raise ValueError(f"diff ends inside hunk {hunk.header} of {patches[-1].path}.")
            body, marker = lines[i][1:], lines[i][:1]
            if marker == " " or lines[i] in ("\n", "\r\n"):  # some tools strip a blank context line's space
                body = body or "\n"
                hunk.old.append(body)
                hunk.new.append(body)
                hunk.context += 1
            elif marker == "-":
                hunk.old.append(body)
            elif marker == "+":
                hunk.new.append(body)
            elif marker != "\\":  # "\ No newline at end of file"
                raise ValueError(f"diff line {i + 1}: {lines[i]!r} is not a hunk line of {patches[-1].path}.")
            i += 1
        patches[-1].hunks.append(hunk)
    return patches


def _find(lines: list[str], block: list[str], start: int, expected: int) -> int:
    """Where ``block`` occurs in ``lines[start:]``: at ``expected`` if it is there, else at its
    only occurrence; -1 when absent, -2 when it occurs more than once elsewhere."""
    width = len(block)
    if expected >= start and lines[expected : expected + width] == block:
        return expected
    found = [at for at in range(start, len(lines) - width + 1) if lines[at : at + width] == block]
    if not found:
        return -1
    return found[0] if len(found) == 1 else -2


def apply(text: str, patch: FilePatch) -> str:
    """``text`` with every hunk of ``patch`` applied, in order. Raises :class:`DoesNotApply`
    naming the file, the hunk and why when a hunk's old lines do not match."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # lines[:position] are done
    offset = 0  # how far earlier hunks moved from their headers' lines
    for number, hunk in enumerate(patch.hunks, start=1):
        expected = hunk.old_start - 1 + offset if hunk.old else hunk.old_start + offset
        at = _find(lines, hunk.old, position, expected)
        if at < 0:
            why = "its old lines are not in the file" if at == -1 else "its old lines occur more than once"
            first = next((line.rstrip("\n") for line in hunk.old if line.strip()), "")
            raise DoesNotApply(
                f"{patch.path}: hunk {number} of {len(patch.hunks)} ({hunk.header}) does not apply: "
                f"{why} (its first line: {first!r})."
            )
        out += lines[position:at] + hunk.new
        position = at + len(hunk.old)
        offset = at - (hunk.old_start - 1)
    return "".join(out + lines[position:])
