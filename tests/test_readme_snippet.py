"""The README's Python snippet, run as written: it prints the answer, or says there was none (a provider
error is never printed as if it were the answer)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.cli_support import REPO, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

pytestmark = pytest.mark.slow  # the README's snippet in real processes: `pytest -m slow` (.ci/run) runs it


def _snippet() -> str:
    readme = (REPO / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if "build_assistant" in b]
    assert len(blocks) == 1  # the library example (other blocks show clients of the gateway)
    return blocks[0]


def _run(home) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PICOORA_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", _snippet()], env=env, capture_output=True, text=True, timeout=60,
                          cwd=REPO)


MODELS = ("qwen3:latest", "llama3.2:latest")


def test_the_readme_snippet_prints_the_answer(isolated_home):
    with FakeOllama(replies=[Reply(content="You prefer Go."), Reply(content="Hello Alice.")], models=MODELS) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = _run(isolated_home)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "You prefer Go."
    assert any("Hello Alice." in line for line in lines[1:-1])  # the second turn's events
    assert float(lines[-1]) >= 0  # its trace's latency, in ms


def test_the_readme_snippet_does_not_print_an_error_as_the_answer(isolated_home):
    with FakeOllama(replies=[Reply(status=500, error="out of memory"), Reply(content="Hello Alice.")],
                    models=MODELS) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = _run(isolated_home)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("no answer: Ollama at") and "500" in first
