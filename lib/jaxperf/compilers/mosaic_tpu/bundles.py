"""Read libtpu's final VLIW schedule (``*final_bundles.txt``, written with
``LIBTPU_INIT_ARGS=--xla_jf_dump_to=DIR``) into bundles and loops. One line per bundle::

       0x3 LB: > { %s20 = sadd.s32 1, %s406 ;; ... } /* Start region 74 :: ... */
      0x4b   : > { %p8 = scmp.ge.s32.totalorder %s11, 258 /* loop exit test */ ;; ... }
      0x4d   :  { %10 = sbr.rel (!%p8) target = $region74 }

an address, a marker (``LH``/``LB``/``LE`` loop header/body/exit, ``PB``/``PF`` predicated, ``CT``
control target), one ``>`` per loop level, the operations. A loop runs from its ``LB`` bundle (or
the ``LH`` ones before it) to its back-branch (``sbr.rel`` to a region opened at its first bundle)
plus the delay slots after it; it runs ``ceil(N / K)`` times for its own exit test ``scmp.ge
counter, N`` and the counter's ``sadd.s32 K`` (None when N is not a constant)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_BUNDLE = re.compile(r"^\s*(0x[0-9a-fA-F]+|\d+)\s+(?:(LH|LB|LE|PB|PF|CT):)?\s*:?\s*(>*)\s*\{(.*)$")
_START_REGION = re.compile(r"Start region (\d+)")
_BRANCH = re.compile(r"sbr\.rel[^;]*?target = \$region(\d+)")
_EXIT_TEST = re.compile(r"scmp\.(ge|gt)\.s32\.totalorder (%\w+), (-?\d+) /\* loop exit test \*/")


@dataclasses.dataclass(frozen=True)
class Bundle:
    """One VLIW bundle: its address, loop marker and depth (number of ``>``), its text."""

    address: int
    marker: str | None
    depth: int
    text: str

    @property
    def empty(self) -> bool:
        return self.text.lstrip().startswith("}")

    @property
    def is_exit(self) -> bool:
        return "exit bundle" in self.text

    @property
    def regions_started(self) -> tuple[int, ...]:
        return tuple(int(r) for r in _START_REGION.findall(self.text))

    @property
    def branch_target(self) -> int | None:
        found = _BRANCH.search(self.text)
        return int(found.group(1)) if found else None

    @property
    def exit_test(self) -> tuple[str, int] | None:
        """``(counter register, first counter value that exits)`` of a ``loop exit test``."""
        found = _EXIT_TEST.search(self.text)
        if not found:
            return None
        compare, register, bound = found.groups()
        return register, int(bound) + (1 if compare == "gt" else 0)

    def step_of(self, register: str) -> int | None:
        """The increment of ``register`` if this bundle sets it (``%r = sadd.s32 K, ...``)."""
        found = re.search(re.escape(register) + r" = sadd\.s32 (-?\d+), ", self.text)
        return int(found.group(1)) if found else None


@dataclasses.dataclass(frozen=True)
class Loop:
    """A loop: bundle indices ``start..end`` (inclusive), depth, trip count (None: not constant)."""

    start: int
    end: int
    depth: int
    trips: int | None
    parent: int | None  # index into Schedule.loops of the enclosing loop

    @property
    def bundles(self) -> int:
        return self.end - self.start + 1


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A kernel's final bundles and the loops found in them."""

    name: str
    bundles: tuple[Bundle, ...]
    loops: tuple[Loop, ...]

    @property
    def total(self) -> int:
        return len(self.bundles)

    def children(self, parent: int | None) -> list[int]:
        return [i for i, loop in enumerate(self.loops) if loop.parent == parent]

    def own_bundles(self, parent: int | None) -> int:
        """Bundles of a loop (or of the straight-line part, ``None``) outside its inner loops."""
        span = self.total if parent is None else self.loops[parent].bundles
        return span - sum(self.loops[c].bundles for c in self.children(parent))


def parse(text: str, name: str = "") -> Schedule:
    """Parse a ``*final_bundles.txt`` text; other lines (continuations) join the bundle before them."""
    bundles: list[Bundle] = []
    for line in text.splitlines():
        found = _BUNDLE.match(line)
        if found:
            address, marker, depth, rest = found.groups()
            bundles.append(Bundle(int(address, 0), marker, len(depth), rest))
        elif bundles:
            last = bundles[-1]
            bundles[-1] = dataclasses.replace(last, text=last.text + "\n" + line)
    return Schedule(name, tuple(bundles), _loops(bundles))


def read(path: str | Path) -> Schedule:
    path = Path(path)
    return parse(path.read_text(errors="replace"), name=path.name)


def _loop_start(bundles: list[Bundle], body: int) -> int:
    start = body
    while start > 0 and bundles[start - 1].marker == "LH" and bundles[start - 1].depth == bundles[body].depth:
        start -= 1
    return start


def _loop_end(bundles: list[Bundle], start: int, body: int) -> tuple[int, int]:
    """``(last bundle index, depth)`` of the loop whose body starts at ``body``."""
    regions = set(bundles[start].regions_started) | set(bundles[body].regions_started)
    branches = [i for i in range(body, len(bundles)) if bundles[i].branch_target in regions]
    if not branches:  # no back-branch found: the last bundle still marked at this depth
        depth, end = bundles[body].depth, body
        for i in range(body + 1, len(bundles)):
            if bundles[i].depth >= depth:
                end = i
            elif not bundles[i].empty:
                break
        return end, depth
    branch = branches[-1]
    # the loop's ``>`` level: its first marked bundle's (a lone ``vdelay`` may carry none)
    depth = next((b.depth for b in bundles[body : branch + 1] if b.depth > 0), 0)
    # Delay slots: bundles after the branch that still belong to the loop.
    i, last = branch + 1, branch
    while i < len(bundles) and not bundles[i].is_exit:
        if bundles[i].marker == "LB":  # the next loop's body (a two-pass kernel's second loop)
            break
        if bundles[i].depth >= depth and not bundles[i].empty:
            last = i
        elif not bundles[i].empty:
            break
        i += 1
    reached_exit = i == len(bundles) or bundles[i].is_exit
    return (i - 1 if reached_exit else last), depth


def _trips(bundles: list[Bundle], start: int, end: int, inner: list[tuple[int, int]]) -> int | None:
    """Trip count from the loop's own exit test (counter from 0, step read from its increment)."""
    own = [i for i in range(start, end + 1) if not any(s <= i <= e for s, e in inner)]
    tests = [test for i in own if (test := bundles[i].exit_test) is not None]
    if len(tests) != 1:
        return None
    register, bound = tests[0]
    steps = [bundles[i].step_of(register) for i in own]
    step = next((s for s in steps if s), 1)
    return max(-(-bound // step), 0) if step > 0 else None


def _loops(bundles: list[Bundle]) -> tuple[Loop, ...]:
    spans = []
    for body, bundle in enumerate(bundles):
        if bundle.marker == "LB":
            start = _loop_start(bundles, body)
            spans.append((start, *_loop_end(bundles, start, body)))
    loops: list[Loop] = []
    for index, (start, end, depth) in enumerate(spans):
        parents = [i for i, (s, e, _) in enumerate(spans) if i != index and s <= start and end <= e]
        parent = max(parents, key=lambda i: spans[i][0]) if parents else None
        inner = [(s, e) for i, (s, e, _) in enumerate(spans) if i != index and start <= s and e <= end]
        loops.append(Loop(start, end, depth, _trips(bundles, start, end, inner), parent))
    return tuple(loops)


def kernel_files(dump_dir: Path, before: set[str]) -> list[Path]:
    """The ``*final_bundles.txt`` files written since ``before`` (a set of names), oldest first, of
    the Mosaic (Pallas) kernels among them: their exit bundle leaves a custom-call."""
    found = sorted(p for p in Path(dump_dir).glob("*final_bundles.txt") if p.name not in before)
    kernel = re.compile(r"exit bundle: %\S+ = custom-call")
    return [
        p for p in found if "schedule-analysis" not in p.name and kernel.search(p.read_text(errors="replace"))
    ]
