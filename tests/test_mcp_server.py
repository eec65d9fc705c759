"""``picoora mcp`` driven by the mcp SDK's own client, as Claude Desktop or an editor would use it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import REPO, run_cli
from tests.fakes._http import closed_port_url, free_port, wait_for_port
from tests.mcp_support import check_protocol_facts, protocol_facts, session

pytestmark = pytest.mark.slow  # real MCP server processes: `pytest -m slow` (.ci/run) runs it

TOKEN = "mcp-test-token-0123"


def write_config(home: Path, **sections) -> None:
    config = {"providers": {"ollama": {"api_base": closed_port_url()}}, "memory": {"embedder": "none"}, **sections}
    (home / "config.json").write_text(json.dumps(config))


def server_params(home: Path):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "picoora", "mcp"], cwd=str(REPO),
                                 env={"PICOORA_HOME": str(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")})


def test_remember_in_one_process_then_recall_by_meaning_in_another(isolated_home):
    write_config(isolated_home, memory={"embedder": "minilm"})
    names, [(failed, remembered)] = asyncio.run(session(server_params(isolated_home), [
        ("remember", {"text": "My favourite programming language is Go", "category": "preference"}),
    ]))
    assert names == ["forget", "list_memories", "recall", "remember", "search_docs"]
    assert not failed and remembered.startswith("Remembered (ID: ")
    _, [(failed, found)] = asyncio.run(session(server_params(isolated_home), [
        ("recall", {"query": "Which coding language do I like best?"}),
    ]))
    assert not failed
    assert "Found 1 matching memories" in found and "favourite programming language is Go" in found
    assert "keyword" not in found  # by meaning, not a degraded keyword match


def test_what_a_client_is_told_over_stdio(isolated_home):
    write_config(isolated_home)
    check_protocol_facts(asyncio.run(protocol_facts(server_params(isolated_home))))


def test_list_forget_and_bad_arguments(isolated_home):
    write_config(isolated_home)
    _, results = asyncio.run(session(server_params(isolated_home), [
        ("remember", {"text": "The cat is called Miso"}),
        ("list_memories", {"limit": 5}),
        ("recall", {"query": ""}),
        ("remember", {"text": "x", "importance": 7}),
        ("forget", {"id": "no-such-id"}),
    ]))
    (_, remembered), (_, listed), (empty_failed, empty), (big_failed, big), (forget_failed, forget) = results
    memory_id = remembered.split("ID: ")[1].split(",")[0]
    assert (f"(ID: {memory_id}, category: general, importance: 0.7, source: told by owner in mcp) "
            "The cat is called Miso") in listed
    assert empty_failed and "query" in empty
    assert big_failed and "importance" in big
    assert forget_failed and "no memory with ID no-such-id" in forget
    _, [(failed, text), (_, after)] = asyncio.run(session(server_params(isolated_home), [
        ("forget", {"id": memory_id}), ("list_memories", {}),
    ]))
    assert not failed and text == f"Forgot memory {memory_id}"
    assert after == "No memories stored yet."


def test_stdout_stays_the_protocol_when_storage_falls_back(isolated_home):
    port = int(closed_port_url().rsplit(":", 1)[1])
    write_config(isolated_home, oracle={"enabled": True, "host": "127.0.0.1", "port": port, "password": "pw",
                                        "connect_timeout_seconds": 2})
    names, [(failed, _)] = asyncio.run(session(server_params(isolated_home), [("list_memories", {})]))
    assert "recall" in names and not failed


@pytest.fixture
def http_memory(isolated_home):
    write_config(isolated_home, gateway={"token": TOKEN}, users=[{"name": "alice"}])
    port = free_port()
    env = {**os.environ, "PICOORA_HOME": str(isolated_home)}
    process = subprocess.Popen([sys.executable, "-m", "picoora", "mcp", "--http", "--port", str(port)], cwd=REPO,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_port(port, process)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


def test_streamable_http_behind_the_token(http_memory):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    names, [(failed, text)] = asyncio.run(session(http_memory, [("remember", {"text": "Over HTTP"})],
                                                  headers=bearer))
    assert "remember" in names and not failed and "Over HTTP" in text
    _, [(_, listed)] = asyncio.run(session(http_memory + "/", [("list_memories", {})], headers=bearer))
    assert "Over HTTP" in listed  # /mcp and /mcp/ are the one endpoint
    check_protocol_facts(asyncio.run(protocol_facts(http_memory, bearer)))
    import httpx

    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        # The SDK's client cannot connect: its error comes inside nested task-group exception groups (a builtin
        # only from Python 3.11).
        with pytest.raises(Exception):  # noqa: B017
            asyncio.run(session(http_memory, [], headers=headers))
        raw = httpx.post(http_memory, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
        assert raw.status_code == 401 and raw.headers["www-authenticate"] == "Bearer"
        assert "'Authorization: Bearer <token>'" in raw.json()["error"]["message"]


def test_a_persons_token_reaches_their_own_memory_over_http(http_memory, isolated_home):
    made = run_cli("token", "create", "alice", home=isolated_home)
    assert made.returncode == 0, made.stderr
    alice, owner = {"Authorization": f"Bearer {made.stdout.strip()}"}, {"Authorization": f"Bearer {TOKEN}"}
    asyncio.run(session(http_memory, [("remember", {"text": "Alice likes lemon tea"})], headers=alice))
    asyncio.run(session(http_memory, [("remember", {"text": "The owner likes coffee"})], headers=owner))
    _, [(_, hers)] = asyncio.run(session(http_memory, [("list_memories", {})], headers=alice))
    _, [(_, theirs)] = asyncio.run(session(http_memory, [("list_memories", {})], headers=owner))
    assert "lemon tea" in hers and "coffee" not in hers
    assert "coffee" in theirs and "lemon tea" not in theirs


def test_http_needs_a_token(isolated_home):
    write_config(isolated_home)
    result = run_cli("mcp", "--http", home=isolated_home)
    assert result.returncode == 2 and "gateway.token" in result.stderr
