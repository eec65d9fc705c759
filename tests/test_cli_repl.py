"""The interactive ``picoora agent``, driven through prompt_toolkit's pipe input in this process."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from picoora.cli.repl import run_repl
from picoora.config import load_config
from tests.cli_support import messages_text, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.pty_support import repl_session


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


def test_the_go_commands_work_in_the_repl(isolated_home, capsys):
    with FakeOllama(models=("qwen3:latest", "llama3.1:8b")) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        _run(isolated_home, ["/show model", "/switch model to llama3.1:8b", "/show channel", "/list channels",
                             "/switch channel to telegram", "/list things", "exit"])
    out, err = capsys.readouterr()
    assert "Model: qwen3:latest (ollama)" in out and "Model: llama3.1:8b (ollama)" in out
    assert "Current channel: cli (this terminal, session cli:default)" in out
    assert "No channels enabled" in out and "This terminal chat stays on cli" in out
    assert "/session [KEY]" in out and "Unknown command" not in err  # /list things: the help


def test_ctrl_c_cancels_the_running_turn_not_the_repl(isolated_home, capsys):
    release = threading.Event()

    def slow_then_quick(body: dict) -> Reply:
        newest = _last_user_text(body)
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
    # The cancelled question is kept (marked) but not sent again, alone or joined to the next message.
    follow_up = next(body for body in fake.requests if "after the interrupt" in messages_text(body))
    assert "slow question" not in messages_text(follow_up)
    assert [m["role"] for m in follow_up["messages"]] == ["system", "user"]


def _line(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{label}:"))


@pytest.mark.slow
def test_a_model_chosen_with_slash_model_is_the_sessions_says_so_and_goes_back_with_model_default(isolated_home):
    """Found by a new user: /model beat the config and PICO_ variables silently, so status showed one model and
    `agent -m` used another. Now every door names the same model, and why."""

    def echo(body: dict) -> Reply:
        return Reply(content=f"[{body['model']}] {_last_user_text(body)}")

    env = {"PICO_AGENTS_DEFAULTS_MODEL": "gemma3:1b"}
    with FakeOllama(models=("qwen3:latest", "llama3.1:8b", "gemma3:1b"), responder=echo) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        first, first_code = repl_session(isolated_home, ["/model llama3.1:8b", "hello"])
        status_chosen = run_cli("status", home=isolated_home, extra_env=env)
        one_shot = run_cli("agent", "-m", "one shot", home=isolated_home, extra_env=env)
        second, second_code = repl_session(isolated_home, ["/model default", "again"], extra_env=env)
        status_after = run_cli("status", home=isolated_home, extra_env=env)
    assert (first_code, second_code) == (0, 0), first + second

    assert "picoora: model qwen3:latest (ollama, the default, from the config file), session cli:default." in first
    assert "Model: llama3.1:8b (ollama), chosen for this session with /model." in first
    assert "The default model is qwen3:latest (ollama, from the config file): /model default goes back to it." in first
    assert "[llama3.1:8b] hello" in first

    # The environment moved the default; the session keeps its choice and status says both.
    assert "llama3.1:8b ✓ pulled" in _line(status_chosen.stdout, "Model")
    assert ("chosen for session cli:default with /model; the default is ollama/gemma3:1b "
            "(set by PICO_AGENTS_DEFAULTS_MODEL over the config file)") in _line(status_chosen.stdout, "Source")
    assert one_shot.stdout.strip() == "[llama3.1:8b] one shot"  # what status said is what answers

    assert "picoora: model llama3.1:8b (ollama, chosen for this session with /model), session cli:default." in second
    assert ("The default model is gemma3:1b (ollama, set by PICO_AGENTS_DEFAULTS_MODEL over the config file): "
            "/model default goes back to it.") in second
    assert "Model: gemma3:1b (ollama), the default, set by PICO_AGENTS_DEFAULTS_MODEL over the config file." in second
    assert "[gemma3:1b] again" in second

    assert "gemma3:1b ✓ pulled" in _line(status_after.stdout, "Model")
    assert _line(status_after.stdout, "Source") == "Source:    set by PICO_AGENTS_DEFAULTS_MODEL over the config file"


def test_results_delivered_to_the_terminal_are_shown_once_when_the_repl_starts(isolated_home, capsys):
    from picoora import inbox
    from picoora.store.files import FileStore

    with FakeOllama() as fake:
        write_config(isolated_home, ollama_url=fake.url)
        store = FileStore(isolated_home / "workspace")
        inbox.keep(store, "cli:default", "⏰ water the plants")
        inbox.keep(store, "cli:default", "Your digest: all quiet.")
        store.close()
        _run(isolated_home, ["exit"])
        first, _ = capsys.readouterr()
        _run(isolated_home, ["exit"])
        second, _ = capsys.readouterr()
    assert "While you were away (2):\n  ⏰ water the plants\n  Your digest: all quiet." in first
    assert "While you were away" not in second
