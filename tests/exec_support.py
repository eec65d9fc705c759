"""Helpers for the exec tests: commands run by a scripted model through the real CLI, as root or as a user."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.cli_support import REPO, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

SECRET = "fake-provider-secret-0123456789"
NOBODY = 65534


def _exec_results(fake: FakeOllama) -> dict[str, str]:
    """Tool results the model was shown in the last request, by the command that made each."""
    messages = fake.requests[-1]["messages"]
    commands = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            commands[len(commands)] = call["function"]["arguments"]["command"]
    results = [m["content"] for m in messages if m.get("role") == "tool"]
    return {commands[i]: result for i, result in enumerate(results)}


def run_attacks(home: Path, commands: list[str], *, as_user: Callable[[], None] | None = None,
                **config_extra: Any) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """Each command as one exec call of one model message, through ``picoora agent -m``; ``as_user``
    (from :func:`user_home`) runs the CLI as that user."""
    replies = [Reply(tool_calls=[("exec", {"command": c}) for c in commands]), Reply(content="Done.")]
    with FakeOllama(replies=replies) as fake:
        path = write_config(home, ollama_url=fake.url)
        data = json.loads(path.read_text())
        data["providers"]["openai"] = {"api_key": SECRET}
        data["tools"] = {"max_parallel_calls_per_turn": 8, **config_extra}
        path.write_text(json.dumps(data))
        if as_user is not None:
            os.chown(path, NOBODY, NOBODY)
        extra = {"PICO_PROVIDERS_ANTHROPIC_API_KEY": SECRET + "-env", "HOME": str(home)}
        done = run_cli("agent", "-m", "go", home=home, extra_env=extra, preexec_fn=as_user, timeout=120)
        assert done.returncode == 0, done.stderr
        return _exec_results(fake), done


def _become_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


@contextmanager
def user_home() -> Iterator[tuple[Path, Callable[[], None]]]:
    """A picoora home that uid 65534 owns (outside pytest's root-only folders) and the preexec that
    becomes that user; only root can switch users."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("running as another user needs root (this test run is already a user's)")
    try:
        subprocess.run([sys.executable, "-c", "import picoora"], preexec_fn=_become_nobody, check=True,
                       capture_output=True, cwd=REPO, timeout=60)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"uid {NOBODY} cannot run this test interpreter ({sys.executable}: {exc})")
    folder = Path(tempfile.mkdtemp(prefix="picoora-user-"))
    try:
        folder.chmod(0o755)
        home = folder / "home"
        home.mkdir()
        os.chown(home, NOBODY, NOBODY)
        yield home, _become_nobody
    finally:
        shutil.rmtree(folder, ignore_errors=True)
