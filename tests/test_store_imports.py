"""The store's modules import each other without a circle: every import counts, the ones inside functions and
under TYPE_CHECKING too (a lazy import hides a circle from Python, not from the next person reading it)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

from tests.cli_support import REPO


def module_names(root: Path, package: str) -> dict[str, Path]:
    names = {}
    for path in (root / package.replace(".", "/")).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported(name: str, path: Path, modules: set[str]) -> set[str]:
    """What module ``name`` (at ``path``) imports, anywhere in it: ``from pkg import mod`` names the module,
    ``from pkg import function`` the package."""
    found = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names)
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    modules = module_names(root, package)
    names = set(modules)
    return {name: (imported(name, path, names) & names) - {name} for name, path in modules.items()}


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_store_has_no_import_circle():
    assert circle(import_graph(REPO, "picoora.store")) is None


def test_the_check_finds_a_lazy_circle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "log.py").write_text("def f():\n    from pkg import snapshot\n")
    (package / "snapshot.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    from .log import f\n")
    found = circle(import_graph(tmp_path, "pkg"))
    assert found is not None and set(found) == {"pkg.log", "pkg.snapshot"}


@pytest.mark.parametrize("line", ["import pkg.snapshot", "from pkg.snapshot import g", "from . import snapshot"])
def test_every_import_form_counts(tmp_path, line):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "log.py").write_text(line + "\n")
    (package / "snapshot.py").write_text("from pkg.log import x\n")
    assert circle(import_graph(tmp_path, "pkg")) is not None
