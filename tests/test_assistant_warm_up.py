"""Assistant.warm_up: what a first turn would pay for is done before serving, and nothing is recorded."""

from __future__ import annotations

import asyncio

from picoora.assistant import build_assistant
from picoora.config import load_config
from picoora.store.base import StoreError
from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url


def test_warm_up_loads_the_embedder_and_records_nothing(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="minilm")

    added = run_cli("memory", "add", "The spare key is under the blue flowerpot", home=isolated_home)
    memory_id = added.stdout.split()[-1]  # "Remembered <id>", by another process: this one has no model loaded
    workspace = isolated_home / "workspace"
    files_before = sorted(p.relative_to(workspace) for p in workspace.rglob("*") if p.is_file())

    async def warm() -> tuple[bool, bool, int]:
        async with build_assistant(load_config()) as assistant:
            embedder = assistant.store._embedder
            loaded_before = embedder._model is not None
            await assistant.warm_up()  # the model server is nowhere: warming needs none
            return loaded_before, embedder._model is not None, assistant.store.memories.get(memory_id).access_count

    loaded_before, loaded_after, accesses = asyncio.run(warm())
    assert not loaded_before and loaded_after
    assert accesses == 0  # the warm-up's recall touched nothing
    files_after = sorted(p.relative_to(workspace) for p in workspace.rglob("*") if p.is_file())
    assert [f for f in files_after if f not in files_before and "memories.index" not in str(f)] == []


def test_a_failing_warm_up_is_left_for_the_first_turn(isolated_home, monkeypatch):
    write_config(isolated_home, ollama_url=closed_port_url())

    def broken(*args, **kwargs):
        raise StoreError("the disk is gone")

    async def warm() -> None:
        async with build_assistant(load_config()) as assistant:
            monkeypatch.setattr(assistant.store.memories, "recall", broken)
            await assistant.warm_up()

    asyncio.run(warm())
