"""Issue 21: one exec call (invalid UTF-8 in ``IDENTITY.md``, an 800 KB ``SOUL.md``, a bad byte in today's
note) broke every turn for everyone, and the model could not repair it because the turn failed before the
model was called. Now each is read as far as it can be, with a notice the model sees, and the prompt files
together keep to their share of the window."""

from __future__ import annotations

import json
from datetime import date

from picoora.agent.prompt_files import PROMPT_FILES_SHARE, fit_prompts
from picoora.agent.tokens import CHARS_PER_TOKEN
from picoora.store.base import Prompt
from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

WINDOW = 16384  # the default context window, in tokens


def _break_the_workspace(workspace):
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "IDENTITY.md").write_bytes(b"I am Pico.\n\xff\xfe broken \xc3(\n")
    (workspace / "SOUL.md").write_text("Be kind. " * 90_000)  # ~800 KB
    today = date.today()
    note = workspace / "memory" / today.strftime("%Y%m") / f"{today:%Y%m%d}.md"
    note.parent.mkdir(parents=True)
    note.write_bytes(b"# today\n\nbought \xff milk\n")
    return note


def test_broken_prompt_files_and_notes_never_stop_a_turn_and_the_model_is_told(isolated_home):
    replies = [Reply(tool_calls=[("write_daily_note", {"content": "fixed the journal"})]), Reply(content="Done.")]
    with FakeOllama(replies=replies) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        note = _break_the_workspace(isolated_home / "workspace")
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 0 and "Done." in result.stdout, result.stderr
    system = fake.requests[0]["messages"][0]["content"]
    assert "I am Pico." in system and "IDENTITY.md is not valid UTF-8" in system
    assert "SOUL.md is longer than" in system and "Be kind." in system
    assert "bought \ufffd milk" in system and "not valid UTF-8" in system
    prompt_files = system[system.index("## IDENTITY.md"):system.index("## Recent daily notes")]
    assert len(prompt_files) <= WINDOW * PROMPT_FILES_SHARE * CHARS_PER_TOKEN + 1000
    # Appending to the note kept the byte someone left in it: nothing of the file was lost.
    assert note.read_bytes() == b"# today\n\nbought \xff milk\n\nfixed the journal"
    assert "broken" in json.dumps(fake.requests[1]["messages"][0])  # the second call saw the files too


def test_short_prompt_files_are_never_cut_to_make_room_for_a_long_one():
    prompts = [Prompt("IDENTITY.md", "short"), Prompt("SOUL.md", "x" * 1_000_000), Prompt("USER.md", "y" * 100)]
    fitted = fit_prompts(prompts, context_window=4096)
    assert [p.name for p in fitted] == ["IDENTITY.md", "SOUL.md", "USER.md"]
    assert fitted[0].content == "short" and fitted[2].content == "y" * 100
    budget = int(4096 * PROMPT_FILES_SHARE) * CHARS_PER_TOKEN
    assert fitted[1].content.startswith("x" * (budget - 105)) and "only its first" in fitted[1].content
    assert sum(len(p.content) for p in fitted) <= budget + 200
