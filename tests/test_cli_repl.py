"""The interactive ``picoora agent``, driven through prompt_toolkit's pipe input in this process."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from picoora.cli.repl import run_repl
from picoora.config import load_config
from tests.cli_support import messages_text, write_config
from tests.fakes.ollama_server import FakeOllama, Reply


def _run(home, lines: list[str]) -> None:
    config = load_config(home / "config.json")
    with create_pipe_input() as pipe:
        pipe.send_text("".join(line + "\n" for line in lines))
        asyncio.run(run_repl(config, "cli:default", stream=False, pt_input=pipe, pt_output=DummyOutput()))


def _last_user_text(body: dict) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def test_slash_commands_switch_session_and_model(isolated_home, capsys):
    def echo(body: dict) -> Reply:
        return Reply(content=f"[{body['model']}] {_last_user_text(body)}")

    with FakeOllama(models=("qwen3:latest", "llama3.1:8b"), responder=echo) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        _run(
            isolated_home,
            ["hello", "/session", "/session work", "in work", "/model", "/model not-pulled", "/model llama3.1:8b",
             "again", "/session cli:default", "/new", "after reset", "/help", "/bogus", "exit"],
        )
    out, err = capsys.readouterr()
    assert "[qwen3:latest] hello" in out
    assert "Session: cli:default" in out and "Session: work" in out
    assert "[qwen3:latest] in work" in out
    assert "Model: qwen3:latest (ollama)" in out and "Model: llama3.1:8b (ollama)" in out
    assert "[llama3.1:8b] again" in out
    assert "/session [KEY]" in out  # the help
    assert "Unknown command /bogus" in err
    assert "ollama pull not-pulled" in err  # refused up front, the model stays
    assert "Model: not-pulled" not in out

    by_text = {_last_user_text(body): messages_text(body) for body in fake.requests}
    assert "hello" not in by_text["in work"]  # another session, another history
    assert "in work" in by_text["again"]  # the model switch kept the session
    assert "hello" not in by_text["after reset"]  # /new cleared cli:default


def test_ctrl_c_cancels_the_running_turn_not_the_repl(isolated_home, capsys):
    release = threading.Event()

    def slow_then_quick(body: dict) -> Reply:
        # the cancelled question stays in the session, sent joined with the next one: answer the newest
        newest = _last_user_text(body).rsplit("\n\n", 1)[-1]
        if newest == "slow question":
            release.wait(30)
        return Reply(content=f"answer to {newest}")

    with FakeOllama(responder=slow_then_quick) as fake:
        write_config(isolated_home, ollama_url=fake.url)

        def interrupt_when_the_model_is_busy() -> None:
            deadline = time.monotonic() + 30
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt_when_the_model_is_busy, daemon=True).start()
        try:
            _run(isolated_home, ["slow question", "after the interrupt", "quit"])
        finally:
            release.set()
    out, err = capsys.readouterr()
    assert "(cancelled)" in err
    assert "answer to slow question" not in out
    assert "answer to after the interrupt" in out
