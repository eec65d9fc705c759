"""mypy sees the store's types: every family call, blocking and awaited, has its real type, never ``Any``
from a name-driven proxy; and no class in picoora/store answers unknown names (``__getattr__``)."""

from __future__ import annotations

import ast

import pytest

from tests.cli_support import REPO

CALLER = '''
from picoora.store.aio import AsyncStore
from picoora.store.protocol import Store

def calls(store: Store, astore: AsyncStore) -> None:
    reveal_type(store.memories.recall("q"))
    reveal_type(store.notes.recent())
    reveal_type(store.sessions.load("k"))
    reveal_type(store.transcripts.read("k"))
    reveal_type(store.traces.last())
    reveal_type(store.tool_outputs.get("h"))
    reveal_type(store.state.get("k"))
    reveal_type(store.config.all())
    reveal_type(store.prompts.list())
    reveal_type(store.documents.search("q"))
    reveal_type(store.leases)
    reveal_type(astore.memories.add("fact"))
    reveal_type(astore.sessions.load("k"))
    reveal_type(astore.documents.counts())
    reveal_type(astore.state.delete("k"))
'''

EXPECTED = [
    "picoora.store.base.RecallResult",
    "list[picoora.store.base.DailyNote]",
    "picoora.store.base.Session",
    "list[picoora.store.base.TranscriptEntry]",
    "picoora.store.base.TurnTrace | None",
    "picoora.store.base.ToolOutput | None",
    "str | None",
    "dict[str, str]",
    "list[picoora.store.base.Prompt]",
    "list[picoora.store.base.DocumentHit]",
    "picoora.store.leases.Leases",
    "typing.Awaitable[picoora.store.base.AddMemoryResult]",
    "typing.Awaitable[picoora.store.base.Session]",
    "typing.Awaitable[picoora.store.base.DocumentCounts]",
    "typing.Awaitable[bool]",
]


@pytest.mark.slow
def test_mypy_sees_every_family_call_with_its_type(tmp_path):
    from mypy import api

    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    out, err, _ = api.run([str(caller), "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
                           "--config-file", str(REPO / "pyproject.toml")])
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"') for line in out.splitlines()
                if "Revealed type is" in line]
    assert revealed == EXPECTED, out + err


def test_no_store_class_answers_unknown_names():
    found = []
    for path in (REPO / "picoora" / "store").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__getattribute__"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []
