"""The command line as a whole: help, version, usage errors, config errors."""

from __future__ import annotations

import json

from picoora import __version__
from tests.cli_support import run_cli


def test_help_lists_every_command(isolated_home):
    result = run_cli("--help", home=isolated_home)
    assert result.returncode == 0
    for command in ("onboard", "agent", "status", "memory"):
        assert command in result.stdout
    assert "--config" in result.stdout


def test_version(isolated_home):
    result = run_cli("--version", home=isolated_home)
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == f"picoora {__version__}"  # the rest: tests/test_cli_version.py


def test_unknown_command_and_bad_flag_are_usage_errors(isolated_home):
    unknown = run_cli("frobnicate", home=isolated_home)
    assert unknown.returncode == 2
    assert "No such command 'frobnicate'" in unknown.stderr
    bad_flag = run_cli("agent", "--no-such-flag", home=isolated_home)
    assert bad_flag.returncode == 2
    assert "--no-such-flag" in bad_flag.stderr


def test_invalid_config_value_exits_2_naming_the_key(isolated_home):
    (isolated_home / "config.json").write_text(json.dumps({"agents": {"defaults": {"temperature": "hot"}}}))
    for command in (["status"], ["agent", "-m", "hi"], ["memory", "list"]):
        result = run_cli(*command, home=isolated_home)
        assert result.returncode == 2, command
        assert "agents.defaults.temperature" in result.stderr
        assert "Traceback" not in result.stderr


def test_malformed_config_given_with_global_flag(isolated_home, tmp_path):
    broken = tmp_path / "elsewhere.json"
    broken.write_text('{"agents": ')
    result = run_cli("--config", str(broken), "status", home=isolated_home)
    assert result.returncode == 2
    assert str(broken) in result.stderr
    assert "not valid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_command_line_starts_without_heavy_imports():
    import subprocess
    import sys

    probe = ("import sys, picoora.cli.app; "
             "print(sorted(m for m in ('asyncio', 'anthropic', 'openai', 'ollama', 'numpy', 'oracledb', 'httpx') "
             "if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"  # `picoora --help` pays for none of them
