"""A one-shot message that failed is not sent again inside the next turn: the user was told it failed, and
the next request carries only what they said since (the transcript keeps the failed messages)."""

from __future__ import annotations

import pytest

from picoora.store.files import FileStore
from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # several real CLI processes: `pytest -m slow` (.ci/run) runs it


def test_failed_one_shots_are_not_sent_again_with_the_next_message(isolated_home):
    replies = [Reply(status=500, error="out of memory"), Reply(status=500, error="out of memory"),
               Reply(content="Now I can answer.")]
    with FakeOllama(replies=replies) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        first = run_cli("agent", "-m", "My boat is called Ondine.", home=isolated_home)
        second = run_cli("agent", "-m", "It is blue.", home=isolated_home)
        third = run_cli("agent", "-m", "What do you know about my boat?", home=isolated_home)
    assert (first.returncode, second.returncode, third.returncode) == (1, 1, 0), third.stderr
    assert "out of memory" in first.stderr and "out of memory" in second.stderr
    assert third.stdout == "Now I can answer.\n"
    users = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert users == ["What do you know about my boat?"]
    store = FileStore(isolated_home / "workspace")
    said = [e.message.content for e in store.transcripts.read("cli:default") if e.message.role == "user"]
    assert said == ["My boat is called Ondine.", "It is blue.", "What do you know about my boat?"]
