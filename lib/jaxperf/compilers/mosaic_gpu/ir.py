"""Count Mosaic GPU's output inside and outside its loops, level by level.

- ``mosaic (JAX)`` (:func:`mosaic_counts`): the module Pallas' Mosaic GPU lowering emits
  (structured: loops are ``scf.for``/``scf.while``); also the types each loop carries;
- ``llvm`` (:func:`llvm_counts`): the kernel's ``gpu.module`` in the LLVM dialect, after
  Mosaic GPU's passes (NVVM intrinsics, inline PTX); loops are branches back to a block;
- ``ptx`` (:func:`ptx_counts`): LLVM's NVPTX output; loops are branches back to a label;
  the spin loops of a barrier wait (inline PTX ``LAB_WAIT``) are left out.

Every level sorts its work into the same kinds (:data:`KINDS`): the warp shuffles and
barriers of a reduction, floating-point arithmetic (counted per element: a ``vector<4xf32>``
add counts 4), shared-memory loads and stores. SASS is read by
:mod:`jaxperf.compilers.mosaic_gpu.sass`. The Mosaic GPU study's points (:func:`point`) and
the counts of their dumps (:func:`level_counts`, :func:`point_counts`) are here too: the tool
reads only SASS.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ...jax20909 import mosaic_gpu_kernel, vocab
from ..triton.ir import mlir_counts, sass_counts
from . import sass

KINDS = ("shuffle", "barrier", "fp arithmetic", "shared load", "shared store")
Counts = tuple[Counter[str], Counter[str], int]  # inside loops, outside, loops

_MLIR_OP = re.compile(r'^\s*(?:%[^=]+=\s*)?"?([a-z_]+\.[a-z_.]+)"?')
_VECTOR = re.compile(r"vector<(?:(\d+)x)+[a-z0-9]+>")
_FP = re.compile(r"^(?:arith|llvm)\.(?:addf|subf|mulf|divf|fadd|fsub|fmul|fdiv|fma|maximumf|minimumf)$")
_CARRIED = re.compile(r"->\s*\(([^)]*)\)\s*:")
_BAR_SYNC = re.compile(r"\bbar\.sync\b|\bbarrier\.sync\b")


def _elements(type_text: str) -> int:
    found = _VECTOR.search(type_text)
    if not found:
        return 1
    dims = re.findall(r"(\d+)x", found.group(0))
    total = 1
    for d in dims:
        total *= int(d)
    return total


def _kind(op: str, line: str) -> str | None:
    """The kind of one MLIR op line (LLVM dialect or Mosaic's mix of dialects), or None."""
    if op == "nvvm.shfl.sync":
        return "shuffle"
    if op in ("nvvm.barrier", "nvvm.barrier0", "gpu.barrier") or (
        op == "llvm.inline_asm" and _BAR_SYNC.search(line)
    ):
        return "barrier"
    if _FP.match(op):
        return "fp arithmetic"
    shared = "address_space<workgroup>" in line or "ptr<3>" in line
    if shared and op in ("vector.load", "memref.load", "llvm.load"):
        return "shared load"
    if shared and op in ("vector.store", "memref.store", "llvm.store"):
        return "shared store"
    return None


def _weight(kind: str, line: str) -> int:
    return _elements(line.split(":")[-1]) if kind == "fp arithmetic" else 1


def _mosaic_kind(op: str, line: str) -> tuple[str, int] | None:
    kind = _kind(op, line)
    return None if kind is None else (kind, _weight(kind, line))


def mosaic_counts(text: str) -> Counts:
    """Ops by kind inside and outside ``scf.for``/``scf.while`` bodies, and the number of loops
    (the MLIR counter of :func:`jaxperf.compilers.triton.ir.mlir_counts`, Mosaic's kinds)."""
    return mlir_counts(text, _mosaic_kind)


def carried(text: str) -> list[str]:
    """The types each ``scf.for`` of the Mosaic module carries (``["f32"]``: one scalar)."""
    out = []
    for line in text.splitlines():
        if "scf.for" in line and "iter_args" in line:
            found = _CARRIED.search(line)
            out.append(found.group(1).strip() if found else "")
    return out


def carried_elements(types: str) -> int:
    """Elements of the values one loop carries, per thread (``"f32, i32"`` is 2)."""
    parts = [p.strip() for p in re.split(r",\s*(?![^<]*>)", types) if p.strip()]
    return sum(_elements(p) for p in parts)


_LL_BLOCK = re.compile(r"^\s*\^bb(\d+)")
_LL_TARGET = re.compile(r"\^bb(\d+)")


def llvm_counts(text: str) -> Counts:
    """The LLVM-dialect kernel: ops by kind inside and outside loops (branches back to a block)."""
    blocks: list[tuple[int, list[str]]] = [(0, [])]
    for raw in text.splitlines():
        line = re.sub(r"\s+loc\(.*$", "", raw).rstrip()
        head = _LL_BLOCK.match(line)
        if head:
            blocks.append((int(head.group(1)), []))
        else:
            blocks[-1][1].append(line)
    order = {number: i for i, (number, _) in enumerate(blocks)}
    in_loop = [False] * len(blocks)
    loops = 0
    for i, (_, lines) in enumerate(blocks):
        for line in lines:
            if re.search(r"\bllvm\.(?:br|cond_br)\b", line):
                for target in _LL_TARGET.findall(line):
                    j = order.get(int(target), len(blocks))
                    if j <= i:
                        loops += 1
                        for k in range(j, i + 1):
                            in_loop[k] = True
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for i, (_, lines) in enumerate(blocks):
        for line in lines:
            match = _MLIR_OP.match(line)
            kind = _kind(match.group(1), line) if match else None
            if kind:
                (inside if in_loop[i] else outside)[kind] += _weight(kind, line)
    return inside, outside, loops


_PTX_LABEL = re.compile(r"^\s*(\$?[A-Za-z_][\w$]*):")
_PTX_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$?[A-Za-z_][\w$]*)\s*;")
_PTX_FP = re.compile(
    r"^\s*(?:@!?%p\d+\s+)?(add|sub|mul|fma|max|min)(?:\.r[nzmp])?(?:\.ftz)?\.(f32|f16x2|f16|bf16x2)\b"
)
_WAIT_LABELS = ("LAB_WAIT", "DONE")  # Mosaic GPU's inline barrier-wait spin


def ptx_counts(text: str) -> Counts:
    """PTX: instructions by kind inside and outside loops (branches back to a label)."""
    lines = [line.split("//", 1)[0].rstrip() for line in text.splitlines()]
    labels = {}
    for i, line in enumerate(lines):
        found = _PTX_LABEL.match(line)
        if found:
            labels[found.group(1)] = i
    in_loop = [False] * len(lines)
    loops = 0
    for i, line in enumerate(lines):
        found = _PTX_BRANCH.search(line)
        if found and found.group(1) not in _WAIT_LABELS and labels.get(found.group(1), len(lines)) <= i:
            loops += 1
            for k in range(labels[found.group(1)], i + 1):
                in_loop[k] = True
    inside: Counter[str] = Counter()
    outside: Counter[str] = Counter()
    for i, line in enumerate(lines):
        kind, weight = None, 1
        fp = _PTX_FP.match(line)
        if "shfl.sync" in line:
            kind = "shuffle"
        elif _BAR_SYNC.search(line):
            kind = "barrier"
        elif fp:
            kind, weight = "fp arithmetic", 2 if fp.group(2).endswith("x2") else 1
        elif re.search(r"\bld\.shared\b", line):
            kind = "shared load"
        elif re.search(r"\bst\.shared\b", line):
            kind = "shared store"
        if kind:
            (inside if in_loop[i] else outside)[kind] += weight
    return inside, outside, loops


LEVELS = ("mosaic (JAX)", "llvm", "ptx", "sass")
#: the study's Mosaic GPU port, as the compile worker builds it
BUILDER = "jaxperf.jax20909.mosaic_gpu_kernel:build"
WARPS_PER_PROGRAM = 4  # one warpgroup: the 128 threads Mosaic GPU launches per program


def point(
    loop_form: str, unroll: int, T: int, *, batch: int = 1, D: int = 64, dtype: str = "float16"
) -> dict:
    """One point of a :func:`~jaxperf.compilers.mosaic_gpu.compile.compile_points` request: the
    study's port (:data:`BUILDER`) at (loop_form, unroll, T), checked here (ValueError before any compile)."""
    mosaic_gpu_kernel.check(loop_form, unroll, T=T, D=D, batch=batch, dtype=dtype)
    return dict(
        builder=BUILDER, loop_form=loop_form, unroll=int(unroll), T=int(T), batch=batch, D=D, dtype=dtype
    )


def sass_counts_of(sass_text: str) -> tuple[dict[str, int], dict[str, int], int]:
    """SASS instructions by category inside and outside the kernel's loops (static counts)."""
    inside, outside, loops_ = sass_counts(sass_text, sass.kernel_loops)
    return dict(inside), dict(outside), loops_


def level_counts(texts: dict[str, str]) -> dict[str, Counts]:
    """Every level's counts inside and outside loops (SASS by instruction category)."""
    inside, outside, loops = sass_counts_of(texts["sass"])
    return {
        "mosaic (JAX)": mosaic_counts(texts["mosaic"]),
        "llvm": llvm_counts(texts["llvm"]),
        "ptx": ptx_counts(texts["ptx"]),
        "sass": (Counter(inside), Counter(outside), loops),
    }


def point_counts(texts: dict[str, str], *, programs: int) -> dict[str, Any]:
    """A compiled point's code metrics and its static estimate (one warpgroup per program)."""
    counts = sass.dynamic_counts(texts["sass"])
    registers = re.search(r"Used (\d+) registers", texts.get("ptxas", ""))
    loops = carried(texts["mosaic"])
    per_call = None if counts.per_program is None else counts.per_program * WARPS_PER_PROGRAM * programs
    return {
        "mosaic_loops": len(loops),
        "loop_carries": "; ".join(loops),
        "carried_elements_per_thread": max((carried_elements(c) for c in loops), default=0),
        "ptx_lines": texts["ptx"].count("\n") + 1,
        "sass_instructions": counts.outside_loops + counts.in_loops,
        "sass_loops": counts.loops,
        "sass_loop_trips": ",".join("?" if t is None else str(t) for t in counts.loop_trips),
        "registers": int(registers.group(1)) if registers else None,
        "sass_dynamic_per_program": counts.per_program,
        "sass_dynamic_per_call": per_call,
        "sass_trips_how": counts.how,
    }


def programs(T: int, batch: int) -> int:
    """Programs (CTAs) per kernel call: T/128 row blocks per batch element."""
    return batch * (T // vocab.SEED_PROGRAM_ROWS)
