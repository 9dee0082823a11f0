"""Read Mosaic GPU's SASS (its ``nvdisasm`` dump, rewritten in ``cuobjdump -sass`` form by
:func:`to_cuobjdump`) with :mod:`jaxperf.compilers.triton.sass`, and count it (a static estimate,
never a measurement). Two kinds of backward branch are not the kernel's loops (:func:`loops`): a
barrier wait's spin, counted as one pass, and the branch that resumes the kernel after it, dropped."""

from __future__ import annotations

import re

from ..triton import sass as _sass
from ..triton.sass import DynamicCounts
from ..triton.sass import dynamic_counts as _dynamic_counts

_LINE = re.compile(r"^\s*(?:\S+\s+)?/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):\s*$")
_TARGET = re.compile(r"`\((\.L_x_\d+)\)")
WAIT_OPCODES = ("SYNCS", "NANOSLEEP")


def to_cuobjdump(nvdisasm: str) -> str:
    """``nvdisasm`` text (with or without control codes) as ``cuobjdump -sass`` lines."""
    lines = nvdisasm.splitlines()
    labels: dict[str, int] = {}
    pending: list[str] = []
    for line in lines:
        label = _LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        found = _LINE.match(line)
        if found:
            labels.update(dict.fromkeys(pending, int(found.group(1), 16)))
            pending = []
    out = []
    for line in lines:
        found = _LINE.match(line)
        if found:
            text = _TARGET.sub(
                lambda m: f"{labels[m.group(1)]:#06x}" if m.group(1) in labels else m.group(0), found.group(2)
            )
            out.append(f"        /*{found.group(1)}*/                   {text} ;")
    return "\n".join(out)


def loops(code: list[_sass.Instruction]) -> list[_sass.Loop]:
    """The kernel's loops (trip counts read as for Triton) and its barrier waits (``trips=1``)."""
    end = next((i.address for i in code if i.base == "EXIT" and not i.predicate), None)
    out = []
    for loop in _sass.loops(code):
        body = [i for i in code if loop.contains(i.address)]
        if end is not None and loop.branch > end >= loop.head:
            continue  # resumes the kernel after an out-of-line wait: not a loop
        if loop.trips is None and any(i.base in WAIT_OPCODES for i in body):
            out.append(_sass.Loop(loop.head, loop.branch, 1, "a barrier wait, counted once"))
        else:
            out.append(loop)
    return out


def kernel_loops(code: list[_sass.Instruction]) -> list[_sass.Loop]:
    """:func:`loops` without the barrier waits: the loops the kernel's own code makes."""
    return [lp for lp in loops(code) if lp.how != "a barrier wait, counted once"]


def dynamic_counts(sass_text: str) -> DynamicCounts:
    """Instructions one warp issues per program (``cuobjdump`` form, see :func:`to_cuobjdump`)."""
    return _dynamic_counts(sass_text, find=loops, own=kernel_loops)
