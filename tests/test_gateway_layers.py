"""The gateway's layers, read from the source (every import, also those only for type checking): the
runtime reaches the channels only through their shared vocabulary (``links``, ``base``) and the registry,
never a platform's module; no channel imports the runtime."""

from __future__ import annotations

import ast
from pathlib import Path

import picoora

PACKAGE = Path(picoora.__file__).parent
CHANNELS = "picoora.gateway.channels"
SHARED = {CHANNELS, f"{CHANNELS}.links", f"{CHANNELS}.base"}


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``from x import y`` gives ``x``, and ``x.y`` when y is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if _is_module(f"{node.module}.{alias.name}"))
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def modules_under(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def test_the_runtime_imports_no_platforms_module():
    wrong = {f"{path.relative_to(PACKAGE)}: {name}" for path in modules_under("gateway/runtime")
             for name in imports(path) if name.startswith(CHANNELS) and name not in SHARED}
    assert wrong == set()


def test_no_channel_imports_the_runtime():
    wrong = {f"{path.relative_to(PACKAGE)}: {name}" for path in modules_under("gateway/channels")
             for name in imports(path) if name.startswith("picoora.gateway.runtime")}
    assert wrong == set()


def test_the_vocabulary_imports_neither_side():
    names = imports(PACKAGE / "gateway/channels/links.py")
    assert {name for name in names if name.startswith("picoora.gateway")} == set()


def test_the_config_reads_the_channel_registry_without_the_gateway():
    for module in ("config.py", "channel_registry.py"):
        assert {name for name in imports(PACKAGE / module) if name.startswith("picoora.gateway")} == set()
    assert {name for name in imports(PACKAGE / "channel_registry.py") if name.startswith("picoora")} == set()
