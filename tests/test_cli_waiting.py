"""A model that is slow or never answers, through the real CLI: a spinner on a terminal while it thinks,
and one line within the first-response limit when nothing comes (not five silent minutes)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time

import pytest

from tests.cli_support import REPO, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.silent_server import SilentServer
from tests.pty_support import read_until

pytestmark = pytest.mark.slow  # terminals and waits: `pytest -m slow` (.ci/run) runs it


def _with_first_response(home, seconds: float) -> None:
    path = home / "config.json"
    data = json.loads(path.read_text())
    data["providers"]["ollama"]["first_response_seconds"] = seconds
    path.write_text(json.dumps(data))


def test_a_server_that_never_answers_is_reported_within_the_limit(isolated_home):
    with SilentServer() as silent:
        write_config(isolated_home, ollama_url=silent.url)
        _with_first_response(isolated_home, 1.0)
        started = time.monotonic()
        result = run_cli("agent", "-m", "hello", home=isolated_home, timeout=30)
        took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert took < 15, took
    assert "accepted the request but sent nothing for 1 seconds" in result.stderr
    assert "providers.ollama.first_response_seconds" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_the_default_first_response_limit_is_well_under_a_minute():
    from picoora.config import Config

    assert Config().providers.ollama.first_response_seconds <= 30


def test_a_slow_model_shows_a_waiting_indicator_on_a_terminal(isolated_home):
    with FakeOllama([Reply(content="Here you are.")], delay=1.5) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        controller, terminal = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "picoora", "agent", "-m", "hello", "--no-stream"], cwd=REPO,
                                env={**os.environ, "PICOORA_HOME": str(isolated_home), "NO_COLOR": "1"},
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=terminal)
        os.close(terminal)
        try:
            err = read_until(controller, b"\0", 30, ended=lambda: proc.poll() is not None).decode(errors="replace")
            out = proc.communicate(timeout=20)[0].decode()
        finally:
            proc.kill()
            os.close(controller)
    assert proc.returncode == 0
    assert "waiting for qwen3:latest…" in err
    assert err.rfind("\r\x1b[K") > err.rfind("waiting for")  # erased once the model spoke
    assert out == "Here you are.\n"  # the answer itself is untouched


def test_no_indicator_when_stderr_is_not_a_terminal(isolated_home):
    with FakeOllama([Reply(content="Here you are.")], delay=0.5) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert result.returncode == 0 and "waiting" not in result.stderr
