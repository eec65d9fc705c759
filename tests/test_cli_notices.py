"""The "cannot call tools" notice: said once per session and model, across separate ``agent -m`` runs,
on stderr apart from the answer."""

from __future__ import annotations

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # several real CLI processes: `pytest -m slow` (.ci/run) runs it

NOTICE = "gemma3:latest cannot call tools; answering without them"


def test_the_tools_notice_is_said_once_across_processes_and_never_in_the_answer(isolated_home):
    replies = [Reply(content=f"Answer {n}.") for n in range(1, 4)]
    with FakeOllama(replies=replies, models=("gemma3", "qwen3"), tool_models=("qwen3",)) as fake:
        write_config(isolated_home, ollama_url=fake.url, model="gemma3:latest")
        runs = [run_cli("agent", "-m", "hi", home=isolated_home) for _ in range(2)]
        other = run_cli("agent", "-s", "other", "-m", "hi", home=isolated_home)
    assert [r.returncode for r in runs] == [0, 0]
    assert runs[0].stdout == "Answer 1.\n" and runs[1].stdout == "Answer 2.\n"  # the answer alone on stdout
    assert NOTICE in runs[0].stderr
    assert NOTICE not in runs[1].stderr, runs[1].stderr
    assert NOTICE in other.stderr  # another session is told too
