"""Whether a file that made a result still holds the same code: a move, or an edit of its
imports, module paths, comments, docstrings or layout, is not a change to what computes a
number (standard library only; :func:`jaxperf`-free, as the rest of run_all's engine).

- :func:`renames`: where each file git saw renamed since a commit is now, followed commit by
  commit (``git log -M``), then through the uncommitted tree (``git diff -M HEAD``).
- :func:`code_of`: a file's code with what cannot move a number taken out: a Python module's
  docstrings and comments, its layout, and the spelling of its imports (each import becomes the
  absolute names it binds, so ``from ..errors import bad_value`` in ``lib/jaxperf/a/b.py`` and
  ``from jaxperf.errors import bad_value`` anywhere bind the same thing; a binding that changes
  is a change; a module named relative to its package in a string, ``"..fixes"``, is read
  absolute); a notebook's code cells, each so read (its text cells are presentation). Old module paths and file paths are
  then written as the present ones (:func:`module_map`), in imports, strings, attribute chains
  and a notebook's text alike.
- :data:`REFACTORS`: code changes declared not to change what a result computes, each pinned
  by the hashes of :func:`code_of` before and after (any later edit of the code breaks the pin)
  and named with the test that shows it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

#: the declared refactors (see the module docstring); a missing file declares none
REFACTORS = Path(__file__).with_name("refactors.json")


def follow(moves: dict[str, str], old: str, new: str) -> None:
    """Record that ``old`` became ``new`` in ``moves`` (first path -> present path)."""
    earlier = [first for first, now in moves.items() if now == old]
    for first in earlier:
        moves[first] = new
    if not earlier:
        moves[old] = new


def _renamed(lines: Iterable[str], moves: dict[str, str]) -> None:
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].startswith("R"):
            follow(moves, parts[1], parts[2])


def renames(git: Any, commit: str) -> dict[str, str]:
    """First path -> present path of every file git saw renamed between ``commit`` and the
    working tree (``git``: a function running git in the project, returning its output)."""
    moves: dict[str, str] = {}
    log = git("log", "--topo-order", "--reverse", "-M", "--diff-filter=R", "--name-status", "--format=",
              f"{commit}..HEAD")  # fmt: skip
    _renamed(log.stdout.splitlines(), moves)
    _renamed(git("diff", "-M", "--diff-filter=R", "--name-status", "HEAD").stdout.splitlines(), moves)
    return {old: new for old, new in moves.items() if old != new}


def module_name(path: str) -> str | None:
    """``lib/jaxperf/a/b.py`` -> ``jaxperf.a.b`` (a package's ``__init__.py``: the package);
    None for a file outside ``lib/`` or not a module."""
    p = PurePosixPath(path)
    if p.parts[:1] != ("lib",) or p.suffix != ".py" or len(p.parts) < 2:
        return None
    parts = p.with_suffix("").parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or None


def module_map(moves: Mapping[str, str]) -> dict[str, str]:
    """Old name -> present name of everything among ``moves``: each file's path, and each
    module's dotted path (``lib/jaxperf/a/b.py``: ``jaxperf.a.b``)."""
    out = dict(moves)
    for old, new in moves.items():
        was, now = module_name(old), module_name(new)
        if was and now and was != now:
            out[was] = now
    return out


def rename_modules(text: str, modules: Mapping[str, str]) -> str:
    """``text`` with every old name of ``modules`` (a dotted module path or a file path, not
    inside a longer one) written as its present name, the longest first."""
    if not modules:
        return text
    olds = sorted(modules, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w./])(" + "|".join(re.escape(o) for o in olds) + r")(?!\w)")
    return pattern.sub(lambda m: modules[m.group(1)], text)


def rename_value(value: Any, modules: Mapping[str, str]) -> Any:
    """A parameter's value with old module paths in its strings written as present ones
    (``"jaxperf.diagnosis.examples:seed_noop"``)."""
    if isinstance(value, str):
        return rename_modules(value, modules)
    if isinstance(value, list):
        return [rename_value(v, modules) for v in value]
    if isinstance(value, dict):
        return {k: rename_value(v, modules) for k, v in value.items()}
    return value


def _bindings(node: ast.Import | ast.ImportFrom, module: str | None, package: bool) -> list[str]:
    """What an import binds, as absolute names: ``name=module.attr``, or the module imported."""
    if isinstance(node, ast.Import):
        return [f"{a.asname}={a.name}" if a.asname else a.name for a in node.names]
    base = node.module or ""
    if node.level:
        here = (module or "").split(".") if module else []
        parent = here if package else here[:-1]
        up = parent[: len(parent) - node.level + 1] if module else ["." * node.level]
        base = ".".join([*up, *([node.module] if node.module else [])])
    return [f"{a.asname or a.name}={base}.{a.name}" for a in node.names]


_BLOCKS = ("body", "orelse", "finalbody")
#: a string that names a module relative to a package above its own (``"..fixes"``): a move
#: can make it name another module, so it is read absolute. A string relative to the module's
#: own package (``".methods"``, or a suffix, ``".csv"``) moves with its package: read as written.
_RELATIVE = re.compile(r"^(\.\.+)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")


class _Absolute(ast.NodeTransformer):
    """Module names relative to a parent package in strings (as ``importlib.import_module(name,
    package)`` takes them) written absolute, from the module's own package."""

    def __init__(self, package: list[str]) -> None:
        self.package = package

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        m = _RELATIVE.match(node.value) if isinstance(node.value, str) else None
        if m and len(m.group(1)) <= len(self.package):
            base = self.package[: len(self.package) - len(m.group(1)) + 1]
            return ast.Constant(".".join([*base, m.group(2)]))
        return node


def _strip(statements: list[ast.stmt], module: str | None, package: bool) -> list[ast.stmt]:
    """``statements`` without docstrings and other bare strings, each run of imports as one
    statement naming the sorted absolute bindings; nested blocks likewise."""
    out: list[ast.stmt] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append(ast.Expr(ast.Name("import " + "; ".join(sorted(set(run))))))
            run.clear()

    for stmt in statements:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            run.extend(_bindings(stmt, module, package))
            continue
        flush()
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            continue
        for name in _BLOCKS:
            block = getattr(stmt, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(stmt, name, _strip(block, module, package))
        for handler in getattr(stmt, "handlers", []) or []:
            handler.body = _strip(handler.body, module, package)
        for case in getattr(stmt, "cases", []) or []:
            case.body = _strip(case.body, module, package)
        out.append(stmt)
    flush()
    return out or [ast.Pass()]


def python_code(text: str, path: str) -> str:
    """The code of the Python module at ``path`` (project-relative) as :func:`code_of` reads it;
    a module that does not parse is its text."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    module, package = module_name(path), PurePosixPath(path).name == "__init__.py"
    tree.body = _strip(tree.body, module, package)
    if module:
        tree = _Absolute(module.split(".") if package else module.split(".")[:-1]).visit(tree)
    return ast.unparse(tree)


def notebook_code(text: str, prose: bool = False) -> str:
    """A notebook's code cells in order, each as :func:`python_code` reads it (outputs, counts
    and metadata left out); with ``prose``, its other cells' text instead (what a reader reads
    around the code, presentation: a change to it needs a render, never a rerun)."""
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        return text
    out = []
    for cell in cells:
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if (cell.get("cell_type", "code") == "code") != prose:
            out.append(source if prose else python_code(source, ""))
    return "\n\n# cell\n".join(out)


def code_of(text: str, path: str, modules: Mapping[str, str] | None = None, prose: bool = False) -> str:
    """The code of the file at ``path`` whose text is ``text``: a Python module
    (:func:`python_code`), a notebook's code cells (:func:`notebook_code`; with ``prose``, its
    text cells) or any other file as it is; with ``modules`` (:func:`module_map`), old module
    paths and file paths written as present ones."""
    suffix = PurePosixPath(path).suffix
    if suffix == ".ipynb":
        code = notebook_code(text, prose)
    else:
        code = python_code(text, path) if suffix == ".py" else text
    return rename_modules(code, modules or {})


def digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def refactors(path: Path | None = None) -> dict[str, set[str]]:
    """The declared refactors (:data:`REFACTORS` by default) as an undirected graph of code
    hashes (each ``was`` joined to its ``is``): code reachable from a result's code holds the
    same computation."""
    graph: dict[str, set[str]] = {}
    path = REFACTORS if path is None else path
    if not path.is_file():
        return graph
    for entry in json.loads(path.read_text())["refactors"]:
        for pin in entry["files"].values():
            graph.setdefault(pin["was"], set()).add(pin["is"])
            graph.setdefault(pin["is"], set()).add(pin["was"])
    return graph


class WrongPython(RuntimeError):
    """The declared refactors cannot be read under this Python: their pins hash ``ast.unparse``'s
    text, which differs between Python versions (this project's pins, made by 3.12, read as
    changed code under 3.11), so a pinned refactor would read as a change of code."""


def pins_python(path: Path | None = None) -> str | None:
    """The Python (``major.minor``) whose ``ast.unparse`` made the pins of refactors.json."""
    path = REFACTORS if path is None else path
    return json.loads(path.read_text()).get("python") if path.is_file() else None


def python_now() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def check_python(path: Path | None = None) -> None:
    """Raise :class:`WrongPython` when this Python is not the one that made the pins."""
    made = pins_python(path)
    if made is not None and made != python_now():
        where = REFACTORS if path is None else path
        raise WrongPython(
            f"{where} pins code hashes that Python {made} wrote (ast.unparse differs between "
            f"versions) and this is Python {python_now()}: run this under Python {made}, the "
            "project's .venv (./run_all.sh picks it first)"
        )


def declared_same(was: str, now: str, graph: Mapping[str, set[str]]) -> bool:
    """Whether the code hashed ``was`` reaches the code hashed ``now`` through declared refactors."""
    seen, todo = {was}, [was]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt == now:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def pin(project: Path, commit: str, path: str) -> dict[str, str]:
    """A refactors.json pin for the file at ``path`` in ``commit``: the hash of its code then
    (``was``, old names written as present ones) and of its code now, where git followed it."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=60)

    moved = renames(git, commit)
    now = moved.get(path, path)
    old = code_of(git("show", f"{commit}:{path}").stdout, path, module_map(moved))
    return {"was": digest(old), "is": digest(code_of((project / now).read_text(), now)), "path": now}


if __name__ == "__main__":  # python tools/runall/moves.py COMMIT PATH...: the pins to declare
    try:
        check_python()
    except WrongPython as e:
        sys.exit(f"moves.py: {e}")
    root = Path(__file__).resolve().parents[2]
    print(json.dumps({p: pin(root, sys.argv[1], p) for p in sys.argv[2:]}, indent=2))
