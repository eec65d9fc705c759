"""Ctrl+C while ``exec`` runs a long command: one line, no traceback, the child killed, the transcript valid,
and the cancelled message kept (marked) but never sent to the model again with the next one.

Both drive a real ``picoora agent`` process and a real ``sleep``: one-shot mode over pipes, the REPL on a
pseudo-terminal (prompt_toolkit needs one), each interrupted with SIGINT as a terminal's Ctrl+C would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from picoora.agent.record import CANCELLED_MARK
from picoora.agent.repair import repair_history
from picoora.store.files import FileStore
from tests.cli_support import REPO, messages_text, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.pty_support import leave_repl, read_until, spawn_repl

pytestmark = pytest.mark.slow  # signals to real CLI processes: `pytest -m slow` (.ci/run) runs it

SLEEP = "sleep 47.25"  # a duration no other process on the machine uses


def _sleepers() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip() == SLEEP.encode():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _fake_model() -> FakeOllama:
    return FakeOllama(replies=[Reply(tool_calls=[("exec", {"command": SLEEP})]), Reply(content="the next answer")])


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}


def _assert_store_consistent(home: Path) -> None:
    store = FileStore(home / "workspace")
    session = store.sessions.load("cli:default").messages
    assert repair_history(session) == session  # only complete call/result pairs were kept
    assert (session[0].content, session[0].cancelled) == ("run the long command", True)
    transcript = [e.message for e in store.transcripts.read("cli:default")]
    assert transcript[0].role == "user"
    assert (transcript[-1].content, transcript[-1].cancelled) == (CANCELLED_MARK, True)  # the record says so
    store.close()


def _assert_not_sent_again(fake: FakeOllama) -> None:
    """The message after the cancelled one went to the model alone: no cancelled text, call or result."""
    follow_up = fake.requests[-1]
    assert [m["content"] for m in follow_up["messages"] if m["role"] == "user"] == ["what now?"]
    assert "run the long command" not in messages_text(follow_up) and SLEEP not in str(follow_up["messages"])
    assert [m["role"] for m in follow_up["messages"]] == ["system", "user"]


def test_ctrl_c_in_one_shot_mode_prints_one_line_and_kills_the_command(isolated_home):
    with _fake_model() as fake:
        write_config(isolated_home, ollama_url=fake.url)
        proc = subprocess.Popen([sys.executable, "-m", "picoora", "agent", "-m", "run the long command"],
                                cwd=REPO, env=_env(isolated_home), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert _wait_for(_sleepers), "the exec tool never started the command"
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=20)
        finally:
            proc.kill()
        _assert_store_consistent(isolated_home)
        follow_up = run_cli("agent", "-m", "what now?", home=isolated_home)
    assert proc.returncode == 130, (out, err)
    assert "(cancelled)" in err
    assert "Traceback" not in err and "never retrieved" not in err and "KeyboardInterrupt" not in err
    assert _wait_for(lambda: not _sleepers(), 5), "the command outlived the cancelled turn"
    assert follow_up.returncode == 0 and follow_up.stdout.strip() == "the next answer", follow_up.stderr
    _assert_not_sent_again(fake)


def test_ctrl_c_in_the_repl_cancels_the_turn_and_the_repl_goes_on(isolated_home):
    with _fake_model() as fake:
        write_config(isolated_home, ollama_url=fake.url)
        pid, fd = spawn_repl(isolated_home)
        output = b""
        try:
            output = read_until(fd, b"you>")
            os.write(fd, b"run the long command\r")
            assert _wait_for(_sleepers), "the exec tool never started the command"
            os.kill(pid, signal.SIGINT)
            output += read_until(fd, b"(cancelled)")
            output += read_until(fd, b"you>")
            _assert_store_consistent(isolated_home)
            os.write(fd, b"what now?\r")
            output += read_until(fd, b"the next answer")
            output += read_until(fd, b"you>")
        finally:
            rest, code = leave_repl(pid, fd)
    output += rest
    text = output.decode("utf-8", errors="replace")
    assert code == 0, text
    assert "(cancelled)" in text and "the next answer" in text
    assert "Traceback" not in text and "never retrieved" not in text
    assert _wait_for(lambda: not _sleepers(), 5), "the command outlived the cancelled turn"
    _assert_not_sent_again(fake)
