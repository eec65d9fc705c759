"""README ("Memory at scale"): numpy is a cost of having memories, which an empty store never needs. A one-shot
turn with the default MiniLM embedder recalls from an empty file store without importing numpy; once the store
holds a memory the same turn does import it (so the check below does see numpy when it is loaded)."""

from __future__ import annotations

import subprocess

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # real CLI processes: `pytest -m slow` (.ci/run) runs it

IMPORT_TIMES = {"PYTHONPROFILEIMPORTTIME": "1"}  # python -X importtime: one stderr line per module imported


def _imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_a_turn_on_an_empty_store_never_imports_numpy(isolated_home):
    with FakeOllama([Reply("Hello."), Reply("It is called Ondine.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="minilm")

        empty = run_cli("agent", "-m", "What do you remember about me?", home=isolated_home, extra_env=IMPORT_TIMES)
        assert empty.returncode == 0 and empty.stdout == "Hello.\n", empty.stderr[-2000:]
        assert "picoora.store.files.memory_index" in _imported(empty)  # the turn did open the memory index to recall
        assert "numpy" not in _imported(empty)

        assert run_cli("memory", "add", "My boat is called Ondine", home=isolated_home).returncode == 0
        one = run_cli("agent", "-m", "What is my boat called?", home=isolated_home, extra_env=IMPORT_TIMES)
        assert one.returncode == 0 and one.stdout == "It is called Ondine.\n", one.stderr[-2000:]
        assert "numpy" in _imported(one)
