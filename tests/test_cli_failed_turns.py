"""After failed turns the next request is still valid: what the user said in the unanswered turns is
sent, in order, without two user messages in a row."""

from __future__ import annotations

from itertools import pairwise

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # several real CLI processes: `pytest -m slow` (.ci/run) runs it


def test_after_failed_turns_the_next_request_has_no_user_message_runs(isolated_home):
    replies = [Reply(status=500, error="out of memory"), Reply(status=500, error="out of memory"),
               Reply(content="Now I can answer.")]
    with FakeOllama(replies=replies) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        first = run_cli("agent", "-m", "My boat is called Ondine.", home=isolated_home)
        second = run_cli("agent", "-m", "It is blue.", home=isolated_home)
        third = run_cli("agent", "-m", "What do you know about my boat?", home=isolated_home)
    assert (first.returncode, second.returncode, third.returncode) == (1, 1, 0), third.stderr
    assert third.stdout == "Now I can answer.\n"
    sent = fake.requests[-1]["messages"]
    roles = [m["role"] for m in sent]
    assert all(not (a == b == "user") for a, b in pairwise(roles)), roles
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users == ["My boat is called Ondine.\n\nIt is blue.\n\nWhat do you know about my boat?"]
