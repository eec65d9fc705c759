"""Memory without vectors is said, not hidden: ``memory add`` with the embedder down says the memory got
no vector, and ``memory search`` says which memories can only be found by keywords and what to run."""

from __future__ import annotations

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama

pytestmark = pytest.mark.slow  # the real embedder in CLI processes: `pytest -m slow` (.ci/run) runs it


def test_add_with_the_embedder_down_then_search_with_it_up(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="ollama")
    added = run_cli("memory", "add", "The boat is called Ondine", home=isolated_home)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("Remembered")
    assert "no vector was stored for it" in added.stderr and "picoora memory reindex" in added.stderr

    with FakeOllama(models=("qwen3:latest", "all-minilm:latest")) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="ollama")
        found = run_cli("memory", "search", "what is my boat called", home=isolated_home)
        reindexed = run_cli("memory", "reindex", home=isolated_home)
        again = run_cli("memory", "search", "what is my boat called", home=isolated_home)
    assert found.returncode == 0, found.stderr
    assert "1 of the memories lack a vector from" in found.stderr and "memory reindex" in found.stderr
    assert reindexed.returncode == 0 and "lack a vector" not in again.stderr
