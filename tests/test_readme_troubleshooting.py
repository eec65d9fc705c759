"""The README's troubleshooting table quotes what ``picoora agent`` really prints: each failure below is
provoked, and the start of its first line must be a row of the table (addresses written as the default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.fakes.ollama_server import FakeOllama

README = Path(__file__).resolve().parent.parent / "README.md"


def troubleshooting() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## Troubleshooting"):text.index("## Tests")]


def said(home, config: dict | str, url: str) -> str:
    """The start of the problem ``agent`` reports (for a config, the line under the file's name)."""
    (home / "config.json").write_text(json.dumps(config) if isinstance(config, dict) else config)
    result = run_cli("agent", "-m", "hi", home=home)
    assert result.returncode != 0
    lines = [line.strip() for line in result.stderr.strip().splitlines()]
    line = lines[1] if lines[0].startswith("Error: Invalid configuration in") else lines[0]
    return line.replace(url, "http://localhost:11434")[:34]


@pytest.mark.parametrize("case", ["closed port", "not pulled", "broken json", "typo"])
def test_each_failure_agent_prints_has_its_row(isolated_home, case):
    with FakeOllama(models=("llama3.2:latest",)) as fake:
        url = "http://127.0.0.1:9" if case == "closed port" else fake.url
        base = {"providers": {"ollama": {"api_base": url}}, "memory": {"embedder": "none"}}
        config = {"closed port": base, "not pulled": {**base, "agents": {"defaults": {"model": "qwen3"}}},
                  "broken json": '{"agents": {\n', "typo": {**base, "agents": {"defaults": {"modle": "x"}}}}[case]
        start = said(isolated_home, config, url)
    assert start in troubleshooting(), f"{case}: the README has no row with {start!r}"
