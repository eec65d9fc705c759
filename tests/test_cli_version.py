"""``picoora version`` / ``-V`` / ``--version``: picoora's, Python's and the provider libraries' versions and
the configured backend, from a real subprocess; a broken config does not hide the versions."""

from __future__ import annotations

import json
import platform
from importlib import metadata

import pytest

from picoora import __version__
from tests.cli_support import run_cli


@pytest.mark.parametrize("args", [("version",), ("-V",), ("-v",), ("--version",)])  # -v: the Go spelling
def test_every_spelling_shows_versions_and_the_backend(isolated_home, args):
    result = run_cli(*args, home=isolated_home)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"picoora {__version__}"
    assert lines[1].startswith(f"Python {platform.python_version()} ")
    for library in ("ollama", "openai", "anthropic", "oracledb"):
        assert f"  {library} {metadata.version(library)}" in lines
    assert f"Backend files ({isolated_home / 'workspace'})" in lines
    assert "Provider ollama, model qwen3:latest" in lines


def test_an_oracle_backend_is_named_without_its_password(isolated_home):
    (isolated_home / "config.json").write_text(json.dumps({
        "agents": {"defaults": {"provider": "groq", "model": "llama-3.3-70b-versatile"}},
        "oracle": {"enabled": True, "mode": "dsn", "dsn": "picoora/s3cret-pw@db.example:1521/FREEPDB1"}}))
    result = run_cli("version", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert "Provider groq, model llama-3.3-70b-versatile" in result.stdout
    assert "Backend oracle (dsn, " in result.stdout and "db.example:1521/FREEPDB1" in result.stdout
    assert "s3cret-pw" not in result.stdout


def test_a_broken_config_still_shows_the_versions(isolated_home):
    (isolated_home / "config.json").write_text('{"agents": {"defaults": {"temperature": "hot"}}}')
    result = run_cli("version", home=isolated_home)
    assert result.returncode == 0
    assert result.stdout.startswith(f"picoora {__version__}\n")
    assert "cannot be read (agents.defaults.temperature: must be a number" in result.stdout


def test_version_honours_config_given_before_or_after(isolated_home, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"agents": {"defaults": {"model": "phi4-mini"}}}))
    for args in (("-c", str(other), "-V"), ("-V", "-c", str(other)), ("--config", str(other), "version")):
        result = run_cli(*args, home=isolated_home)
        assert "Provider ollama, model phi4-mini" in result.stdout, args
