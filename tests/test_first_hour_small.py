"""The first hour's smaller rough edges (issue 24, item 10), each through the real CLI or HTTP."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply


def test_list_dir_does_not_show_the_stores_private_folder(isolated_home):
    replies = [Reply(tool_calls=[("list_dir", {"path": "."})]), Reply(content="listed")]
    with FakeOllama(replies=replies) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        (isolated_home / "workspace").mkdir()
        (isolated_home / "workspace" / "notes.txt").write_text("mine")
        result = run_cli("agent", "-m", "what is in my folder?", home=isolated_home)
        assert result.returncode == 0, result.stderr
        assert (isolated_home / "workspace" / ".picoora").is_dir()  # the store's, there while the tool ran
        listing = next(m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool")
    assert "FILE: notes.txt" in listing
    assert ".picoora" not in listing


def test_an_unset_reference_is_named_the_same_way_twice_not_scrubbed(isolated_home):
    (isolated_home / "config.json").write_text('{"providers": {"openai": {"api_key": "${NOPE_KEY}"}}}')
    result = run_cli("status", home=isolated_home)
    assert result.returncode != 0
    assert ("providers.openai.api_key: refers to ${NOPE_KEY}, which is not set in the environment "
            "(export NOPE_KEY=... or write the value itself)") in result.stderr
    assert "***" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow  # three commands, one of them starting the MCP server
def test_a_broken_mcp_server_and_a_bad_skill_are_each_reported_once(isolated_home):
    bad_skill = isolated_home / "workspace" / "skills" / "bad" / "SKILL.md"
    bad_skill.parent.mkdir(parents=True)
    bad_skill.write_text("---\nname: \n---\nbody\n")
    with FakeOllama(replies=[Reply(content="hello back")]) as fake:
        path = write_config(isolated_home, ollama_url=fake.url)
        data = json.loads(path.read_text())
        data["tools"] = {"mcp_servers": {"broken": {"command": "/nonexistent/server"}}}
        path.write_text(json.dumps(data))
        chat = run_cli("agent", "-m", "hi", home=isolated_home)
    status = run_cli("status", home=isolated_home)
    listed = run_cli("skills", "list", home=isolated_home)
    assert chat.returncode == 0 and "hello back" in chat.stdout, chat.stderr
    chat_output = chat.stdout + chat.stderr
    assert chat_output.count("/nonexistent/server") == 1 and chat_output.count(str(bad_skill)) == 1
    assert (status.stdout + status.stderr).count("/nonexistent/server") == 1
    assert (listed.stdout + listed.stderr).count(str(bad_skill)) == 1 and "✗" in listed.stdout


def test_expired_pairing_codes_are_pruned_when_met(isolated_home):
    from datetime import datetime, timedelta, timezone

    from picoora.identities import PAIR_PREFIX, Pairing, PairingRequest, Sender
    from picoora.store.files import FileStore

    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    store = FileStore(isolated_home / "workspace")
    old = (datetime.now(timezone.utc) - timedelta(days=3)).isoformat()

    def strangers_from_days_ago() -> None:  # each wrote once and never came back
        for code, sender in (("OLDCODE1", "111"), ("OLDCODE2", "222")):
            store.state.set(PAIR_PREFIX + code, json.dumps(PairingRequest(code, "telegram", sender, "", old).__dict__))

    def codes_kept() -> set[str]:
        return {key for key in store.state.all() if key.startswith(PAIR_PREFIX)}

    strangers_from_days_ago()
    fresh, _ = Pairing(store).request(Sender("telegram", "333", "carol"))  # what the gateway does for a stranger
    assert codes_kept() == {PAIR_PREFIX + fresh.code}
    strangers_from_days_ago()
    listed = run_cli("pair", "list", home=isolated_home)
    assert listed.returncode == 0, listed.stderr
    assert "OLDCODE" not in listed.stdout and "@carol (id 333)" in listed.stdout
    assert codes_kept() == {PAIR_PREFIX + fresh.code}
    store.close()
