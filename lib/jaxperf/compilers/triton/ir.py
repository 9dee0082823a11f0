"""Count each level of the Triton pipeline inside and outside its loops.

- TTIR / TTGIR (:func:`mlir_counts`): ops by kind inside and outside
  ``scf.for``/``scf.while`` bodies (``tt.reduce``, loads, tensor and scalar
  arithmetic, splats); the ops inside a ``tt.reduce`` combiner are not counted apart;
- LLVM IR (:func:`llir_counts`): loops are back edges between basic blocks; warp
  shuffles, barriers, global loads/stores and floating-point operations (a
  ``<64 x half>`` add counts 64);
- SASS (:func:`sass_counts`): loops are backward branches; the instruction mix of
  :data:`jaxperf.compilers.triton.sass.CATEGORIES`.

:func:`levels` counts every level of one compile. The LLVM and SASS readers
are not Triton-specific: Mosaic GPU's output is read with them too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from . import sass as _sass

LEVELS = ("ttir (JAX)", "ttir", "ttgir", "llir", "sass")
# What "the reduction" is at each level.
REDUCTION = {
    "ttir (JAX)": "reduce",
    "ttir": "reduce",
    "ttgir": "reduce",
    "llir": "shuffle",
    "sass": "shuffle",
}
IN_LOOP, OUTSIDE = "in loop", "outside loops"

_MLIR_OP = re.compile(r'^\s*(?:%[^=]+=\s*)?"?([a-z_]+\.[a-z_.]+)"?')
_MLIR_KINDS = {"tt.reduce": "reduce", "tt.load": "load", "tt.store": "store", "tt.splat": "splat/broadcast"}
_LL_LABEL = re.compile(r"^([\w.]+):")
_LL_BRANCH = re.compile(r"label %([\w.]+)")
_LL_FP = re.compile(r"=\s*(?:fast\s+)?(fadd|fsub|fmul|fdiv|fneg)\b[^<]*(?:<(\d+) x)?|@llvm\.fma")


def triton_kind(op: str, line: str) -> tuple[str, int] | None:
    """A TTIR/TTGIR op's kind (reduce, load, store, splat/broadcast, tensor or scalar arithmetic,
    the ttg/ttng dialects, other), weight 1; None for constants and terminators."""
    if op in ("arith.constant", "scf.yield", "tt.reduce.return"):
        return None
    kind = _MLIR_KINDS.get(op, op.split(".")[0] if op.startswith(("ttg.", "ttng.")) else "")
    if op.startswith("arith."):
        kind = "tensor arithmetic" if "tensor<" in line.split(":")[-1] else "scalar arithmetic"
    if op.startswith("tt.broadcast"):
        kind = "splat/broadcast"
    return kind or "other", 1


def mlir_counts(
    text: str, kind: Callable[[str, str], tuple[str, int] | None] = triton_kind
) -> tuple[Counter[str], Counter[str], int]:
    """Ops by ``kind(op, line) -> (kind, weight) | None`` inside and outside
    ``scf.for``/``scf.while`` bodies, and the number of loops: the one MLIR counter, for Triton's
    TTIR/TTGIR (default) and Mosaic GPU's module (:func:`jaxperf.compilers.mosaic_gpu.ir.mosaic_counts`).
    The ops inside a ``tt.reduce``/``tt.scan`` combiner are not counted apart."""
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    stack: list[str] = []
    loops = 0
    for raw in text.splitlines():
        line = re.sub(r"\s+loc\(.*$", "", raw).rstrip()
        stripped = line.strip()
        if stripped.startswith("}"):
            if stack:
                stack.pop()
            if not stripped.endswith("{"):
                continue
        match = _MLIR_OP.match(line)
        op = match.group(1) if match else ""
        got = kind(op, line) if op and "combiner" not in stack else None
        if got is not None:
            (inside if "loop" in stack else outside)[got[0]] += got[1]
        if stripped.endswith("{") and not stripped.startswith("}"):
            if op in ("scf.for", "scf.while"):
                loops += 1
                stack.append("loop")
            else:
                stack.append("combiner" if op in ("tt.reduce", "tt.scan") else "region")
    return inside, outside, loops


def llir_counts(text: str) -> tuple[Counter[str], Counter[str], int]:
    """LLVM IR of the kernel: operations by kind inside and outside loops (back edges)."""
    blocks: list[tuple[str, list[str]]] = [("entry", [])]
    for line in text.split("\ndefine", 1)[-1].split("\n}\n", 1)[0].splitlines()[1:]:
        label_match = _LL_LABEL.match(line)
        if label_match:
            blocks.append((label_match.group(1), []))
        elif line.startswith("  "):
            blocks[-1][1].append(line)
    index = {name: i for i, (name, _) in enumerate(blocks)}
    in_loop = [False] * len(blocks)
    loops = 0
    for i, (_, lines) in enumerate(blocks):
        for target in (
            t for line in lines if line.lstrip().startswith("br ") for t in _LL_BRANCH.findall(line)
        ):
            if index.get(target, len(blocks)) <= i:
                loops += 1
                for j in range(index[target], i + 1):
                    in_loop[j] = True
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for i, (_, lines) in enumerate(blocks):
        counts = inside if in_loop[i] else outside
        for line in lines:
            fp = _LL_FP.search(line)
            if "shfl.sync" in line:
                counts["shuffle"] += 1
            elif "barrier" in line:
                counts["barrier"] += 1
            elif "ld.global" in line or re.search(r"= load .* addrspace\(1\)", line):
                counts["global load"] += 1
            elif "st.global" in line or re.search(r"store .* addrspace\(1\)", line):
                counts["global store"] += 1
            elif "llvm.vector.reduce" in line:
                counts["vector reduce"] += 1
            elif fp:
                counts["fp operations (elements)"] += int(fp.group(2) or 1) if fp.group(1) else 1
    return inside, outside, loops


def sass_counts(
    text: str, find: Callable[[list[Any]], list[Any]] = _sass.loops
) -> tuple[Counter[str], Counter[str], int]:
    """SASS instructions by category inside and outside the loops ``find`` reads (static counts;
    Mosaic GPU passes its own, without barrier waits)."""
    code = _sass.parse(text)
    found = find(code)
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for ins in code:
        (inside if any(lp.contains(ins.address) for lp in found) else outside)[_sass.category(ins)] += 1
    return inside, outside, len(found)


def levels(
    ttir_jax: str, texts: dict[str, str], sass_text: str
) -> dict[str, tuple[Counter[str], Counter[str], int]]:
    return {
        "ttir (JAX)": mlir_counts(ttir_jax),
        "ttir": mlir_counts(texts["ttir"]),
        "ttgir": mlir_counts(texts["ttgir"]),
        "llir": llir_counts(texts["llir"]),
        "sass": sass_counts(sass_text),
    }
