"""Input too large for the model's window is handled before it is sent, never cut silently by the server:
a message that cannot fit is refused in one line (kept in the transcript, not carried by later turns),
and a history that outgrew the window is summarised first."""

from __future__ import annotations

import pytest

from picoora.store.files import FileStore
from tests.cli_support import messages_text, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # large inputs through real CLI processes: `pytest -m slow` (.ci/run) runs it


def test_a_one_megabyte_message_is_refused_before_sending_and_not_carried_on(isolated_home):
    huge = "log line with some words in it\n" * 34_000  # about 1 MB
    with FakeOllama(replies=[Reply(content="Short answer.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        refused = run_cli("agent", home=isolated_home, stdin=huge, timeout=120)  # piped, as a file would be
        sent_after_refusal = len(fake.requests)
        next_turn = run_cli("agent", "-m", "And now a short question?", home=isolated_home)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "Your message is too long for the model" in refused.stderr
    assert "agents.defaults.context_window 16,384" in refused.stderr
    assert sent_after_refusal == 0  # nothing reached the model
    assert next_turn.returncode == 0 and next_turn.stdout == "Short answer.\n"
    request = messages_text(fake.requests[-1])
    assert len(request) < 60_000 and "log line" not in request  # the refused message is not carried on
    store = FileStore(isolated_home / "workspace")
    kept = [e.message.content for e in store.transcripts.read("cli:default")]
    store.close()
    assert kept[0] == huge.strip()  # nothing lost: the transcript has it


def test_a_history_that_outgrew_the_window_is_summarised_before_sending(isolated_home):
    def respond(body: dict) -> Reply:
        if "summar" in body["messages"][0]["content"].lower():
            return Reply(content="Earlier: the user pasted several long logs.")
        return Reply(content="Answered.")

    with FakeOllama(responder=respond) as fake:
        write_config(isolated_home, ollama_url=fake.url, context_window=4096, keep_recent_messages=2)
        for n in range(4):
            assert run_cli("agent", "-m", f"log {n}: " + "word " * 1000, home=isolated_home).returncode == 0
    budget_chars = (4096 - 1024) * 4
    chats = [b for b in fake.requests if "summar" not in b["messages"][0]["content"].lower()]
    assert all(len(messages_text(b)) < budget_chars for b in chats)  # no request over the window was sent
