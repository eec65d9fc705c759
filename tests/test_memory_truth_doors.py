"""Supersession, provenance and expiry through every door (CLI, HTTP, MCP, oracle-inspect), on files and on
Oracle (the recording fake): a new value replaces the old in what is recalled, the old stays listed under
``--all`` with its link, every memory says where it came from, and an ended one is listed but not recalled."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
import typer
from typer.testing import CliRunner

from picoora.cli import memory_cmd, oracle_cmds
from picoora.cli.errors import CLIError
from picoora.config import load_config
from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.gateway_kit import TOKEN, RunningGateway
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.mcp_support import session
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeOracle

OWNER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(params=["files", "oracle"])
def config_path(request, isolated_home, monkeypatch):
    path = write_config(isolated_home, ollama_url=closed_port_url())
    data = json.loads(path.read_text())
    data["gateway"] = {"token": TOKEN}
    if request.param == "oracle":
        fake = FakeOracle()
        set_up_schema(fake, oracle_config())
        monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
        data["oracle"] = oracle_config().oracle.model_dump(mode="json")
        data["memory"]["min_similarity"] = 0.1  # the fake's hash embedder's floor
    path.write_text(json.dumps(data))
    return path


def picoora(*args: str) -> tuple[int, str]:
    """``memory`` and ``oracle-inspect`` in-process under a root that sets ``ctx.obj`` as the real one does."""
    cli = typer.Typer(rich_markup_mode=None, pretty_exceptions_enable=False)

    @cli.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = {"config_path": None}

    memory_cmd.register(cli)
    oracle_cmds.register(cli)
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "250"})
    if isinstance(result.exception, CLIError):
        return result.exception.exit_code, result.stdout + f"Error: {result.exception}\n"
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout  # notes on stderr (keyword-only search) stay out of the JSON


def _listed(*flags: str) -> list[dict]:
    code, out = picoora("memory", "list", "--json", *flags)
    assert code == 0, out
    return json.loads(out)


def test_the_cli_supersedes_lists_current_shows_all_and_ends(config_path):
    assert picoora("memory", "add", "The door code is 4421")[0] == 0
    old = _listed()[0]
    code, out = picoora("memory", "add", "The door code is now 9981")
    assert code == 0 and f"It supersedes {old['id']}: The door code is 4421" in out
    current = _listed()
    assert [m["content"] for m in current] == ["The door code is now 9981"]
    assert current[0]["provenance"] == {"how": "by hand", "person": "owner", "session": "cli", "turn_id": ""}
    everything = {m["content"]: m for m in _listed("--all")}
    assert everything["The door code is 4421"]["status"] == f"superseded by {current[0]['id']}"
    code, table = picoora("memory", "list", "--all")
    assert "superseded by" in table and "by hand by owner in cli" in table

    code, out = picoora("memory", "add", "The cleaner comes on Thursdays", "--until", "2000-01-01")
    assert code == 0 and "until 2000-01-01 23:59" in out
    assert "The cleaner comes on Thursdays" not in [m["content"] for m in _listed()]
    assert {m["content"]: m["status"] for m in _listed("--all")}["The cleaner comes on Thursdays"] == "expired"
    code, found = picoora("memory", "search", "door code", "--json")
    assert [m["content"] for m in json.loads(found)] == ["The door code is now 9981"]

    code, out = picoora("memory", "add", "Guests stay over", "--until", "when the cows come home")
    assert code == 2 and "a date (2026-12-24)" in out
    assert "Guests stay over" not in [m["content"] for m in _listed("--all")]  # a bad end stores nothing


def test_oracle_inspect_shows_source_and_status(config_path):
    picoora("memory", "add", "The garage code is 1234")
    picoora("memory", "add", "The garage code changed to 5678")
    backend = [] if "oracle" in config_path.read_text() else ["--files"]
    code, out = picoora("oracle-inspect", *backend, "memories")
    assert code == 0, out
    assert "  Source: by hand by owner in cli  Status: current" in out
    assert "Status: superseded by " in out
    _, data = picoora("oracle-inspect", *backend, "memories", "--json")
    assert {m["status"] for m in json.loads(data)} == {"current", f"superseded by {json.loads(data)[0]['id']}"}


@pytest.mark.slow  # a gateway per backend: ~3 s
def test_http_and_mcp_say_what_was_replaced_and_where_each_memory_came_from(config_path):
    with RunningGateway(load_config(config_path)) as gw, httpx.Client(base_url=gw.url, headers=OWNER) as http:
        old = http.post("/v1/memory", json={"content": "My manager is Laura"}).json()["memory"]
        assert old["provenance"] == {"how": "by hand", "person": "owner", "session": "http", "turn_id": ""}
        added = http.post("/v1/memory", json={"content": "My manager is now Peter", "until": "2999-12-31"}).json()
        assert [m["id"] for m in added["replaced"]] == [old["id"]]
        assert added["replaced"][0]["superseded_by"] == added["memory"]["id"]
        assert added["memory"]["expires_at"].startswith("2999-12-31")
        assert [m["content"] for m in http.get("/v1/memory").json()["memories"]] == ["My manager is now Peter"]
        assert len(http.get("/v1/memory", params={"all": "true"}).json()["memories"]) == 2
        found = http.get("/v1/memory", params={"q": "manager"}).json()["matches"]
        assert [m["memory"]["content"] for m in found] == ["My manager is now Peter"]
        bad = http.post("/v1/memory", json={"content": "x is y", "until": "someday"})
        assert bad.status_code == 400 and "until" in bad.text

        url = gw.url + "/mcp"
        _, [(failed, told), (_, listed)] = asyncio.run(session(url, [
            ("remember", {"text": "My manager is Anna"}), ("list_memories", {})], OWNER))
        assert not failed and f"It replaces {added['memory']['id']}, no longer current" in told
        peter = added["memory"]["id"]
        assert "source: told by owner in mcp) My manager is Anna" in listed  # current: no status
        assert f"superseded by {peter}) My manager is Laura" in listed
        assert re.search(r"source: by hand by owner in http, superseded by \w+\) My manager is now Peter", listed)


def _answer_from_the_prompt(body: dict) -> Reply:
    """A model that never calls remember and answers the door code from what the system prompt recalled."""
    system = body["messages"][0]["content"]
    recalled = system.split("Recalled memories", 1)[1] if "Recalled memories" in system else ""
    codes = re.findall(r"door code is (?:now )?(\d+)", recalled)
    return Reply(content=f"The door code is {codes[0]}." if codes else "Noted.")


@pytest.mark.slow  # three real `picoora agent` processes with MiniLM
def test_told_something_new_the_assistant_answers_with_the_new_and_says_where_it_came_from(isolated_home):
    with FakeOllama(responder=_answer_from_the_prompt) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="minilm")
        for text in ("My door code is 4421.", "The door code is now 9981."):
            told = run_cli("agent", "-m", text, home=isolated_home)
            assert told.returncode == 0, told.stderr
        asked = run_cli("agent", "-m", "What is the door code?", home=isolated_home)
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout.strip() == "The door code is 9981."
        assert "4421" not in fake.requests[-1]["messages"][0]["content"]  # the old value is never pushed
    listed = json.loads(run_cli("memory", "list", "--all", "--json", home=isolated_home).stdout)
    by_text = {m["content"]: m for m in listed}
    old, new = by_text["My door code is 4421."], by_text["The door code is now 9981."]
    assert old["status"] == f"superseded by {new['id']}" and new["status"] == "current"
    assert new["provenance"]["how"] == "inferred" and new["provenance"]["session"] == "cli:default"
