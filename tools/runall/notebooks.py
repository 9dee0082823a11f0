"""Which notebooks run, and the parameters each receives, checked statically
(stdlib only: this runs before the environment exists)."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .options import Options, UsageError

_SETTINGS = re.compile(r"\b((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*Settings)\.from_parameters\(")


@dataclass
class Notebook:
    path: Path
    declared: dict[str, Any]  # the parameters cell's literal defaults
    source: str = ""  # the parameters cell
    settings_imports: list[str] = field(default_factory=list)  # the imports that bind it
    settings_class: str | None = None  # e.g. "DispatchSettings" or "loops.LoopSettings"

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def number(self) -> str:
        return self.name.split("_", 1)[0]


def _literal_defaults(source: str, path: Path) -> dict[str, Any]:
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise UsageError(f"{path}: the parameters cell does not parse ({err})") from err
    declared: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                declared[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                declared[node.targets[0].id] = None  # not a literal: type unknown
    return declared


def load(path: Path) -> Notebook:
    """Read a notebook's parameters cell and how it builds its settings object."""
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError) as err:
        raise UsageError(f"{path}: not a readable notebook ({err})") from err
    code = ["".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code"]
    params = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    source = "".join(params[0].get("source", "")) if params else ""
    nb = Notebook(path, _literal_defaults(source, path), source)
    for src in code:
        match = _SETTINGS.search(src)
        if match and nb.settings_class is None:
            nb.settings_class = match.group(1)
    if nb.settings_class:
        for src in code:
            try:
                tree = ast.parse(src)
            except SyntaxError:
                continue
            head = nb.settings_class.split(".")[0]
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [a for a in node.names if (a.asname or a.name.split(".")[0]) == head]
                    if names:  # only the binding we need, not the rest of the line
                        node.names = names
                        nb.settings_imports.append(ast.unparse(node))
    return nb


def discover(nb_dir: Path) -> list[Notebook]:
    if not nb_dir.is_dir():
        raise UsageError(f"notebook folder '{nb_dir}' does not exist")
    return [load(p) for p in sorted(nb_dir.glob("[0-9][0-9]_*.ipynb"))]


def select(all_nbs: list[Notebook], opts: Options) -> list[Notebook]:
    """Every notebook, or exactly what --only names."""
    if opts.only is None:
        return list(all_nbs)
    have = ", ".join(nb.number for nb in all_nbs) or "none"
    chosen: list[Notebook] = []
    for want in opts.only:
        match = [nb for nb in all_nbs if want in (nb.number, nb.name, nb.path.name)]
        if not match:
            raise UsageError(f"--only '{','.join(opts.only)}': '{want}' matches no notebook (have: {have})")
        if match[0] in chosen:
            raise UsageError(f"--only '{','.join(opts.only)}' names notebook {match[0].name} twice")
        chosen.append(match[0])
    return sorted(chosen, key=lambda nb: nb.name)


def _parse_value(name: str, text: str, default: Any) -> Any:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text  # a bare word: a string
    if isinstance(default, str) and not isinstance(value, str):
        value = text
    if default is None:
        return value
    ok = isinstance(value, bool) == isinstance(default, bool) and (
        isinstance(value, type(default)) or (isinstance(default, float) and isinstance(value, int))
    )
    if not ok:
        raise UsageError(
            f"-p {name} {text!r}: expected {type(default).__name__} like the notebook's default {default!r}"
        )
    return value


def parameters(nb: Notebook, opts: Options, backend: str) -> dict[str, Any]:
    """What papermill injects into ``nb``: only parameters it declares."""
    chosen: dict[str, Any] = {"backend": backend, "quick": opts.quick, "host_devices": opts.host_devices}
    for name, text in opts.params:
        if name in nb.declared:
            chosen[name] = _parse_value(name, text, nb.declared[name])
    return {k: v for k, v in chosen.items() if k in nb.declared}


def check_params(selected: list[Notebook], opts: Options) -> None:
    """Every -p NAME is declared by a selected notebook and has its default's type."""
    for name, _ in opts.params:
        if not any(name in nb.declared for nb in selected):
            names = ", ".join(nb.name for nb in selected)
            raise UsageError(f"-p {name}: no selected notebook declares '{name}' ({names})")
    for nb in selected:
        parameters(nb, opts, "cpu")
