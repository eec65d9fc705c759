"""The optional parts, through the real CLI in a process where their packages cannot be imported (as in a core
install): terminal chat with memory works with none of them; each part that needs one says which extra to
install, in one line, with no traceback; and pyproject's extras match what the code asks for."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from picoora.extras import EXTRAS
from tests.cli_support import REPO, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 floor
    tomllib = pytest.importorskip("tomli")

EVERY_OPTIONAL_MODULE = sorted({module for _, modules in EXTRAS.values() for module in modules} | {"starlette"})


@pytest.fixture
def without(tmp_path):
    """``run(*args, home=..., blocked=[...])``: ``picoora ARGS`` where importing ``blocked`` fails, as if absent."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent('''\
        import os, sys
        BLOCKED = set(os.environ["PICO_TEST_BLOCKED_MODULES"].split(","))

        class Absent:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name.partition(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None

        sys.meta_path.insert(0, Absent)
        '''))

    def run(*args, home, blocked=EVERY_OPTIONAL_MODULE, extra_env=None, **kwargs):
        env = {**(extra_env or {}), "PYTHONPATH": f"{site}:{REPO}", "PICO_TEST_BLOCKED_MODULES": ",".join(blocked)}
        return run_cli(*args, home=home, extra_env=env, **kwargs)

    return run


@pytest.mark.slow  # real CLI processes
def test_onboard_and_the_agents_help_need_no_extra(without, isolated_home):
    with FakeOllama() as fake:
        onboarded = without("onboard", "--non-interactive", home=isolated_home,
                            extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": fake.url})
    helped = without("agent", "--help", home=isolated_home)
    assert onboarded.returncode == 0 and "Traceback" not in onboarded.stderr, onboarded.stderr
    assert (isolated_home / "config.json").is_file()
    assert helped.returncode == 0 and "--message" in helped.stdout, helped.stderr


@pytest.mark.slow  # real CLI processes
def test_a_job_without_the_gateway_names_its_extra_and_listing_still_works(without, isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    added = without("cron", "add", "every", "1h", "Summarise my notes", home=isolated_home)
    listed = without("cron", "list", home=isolated_home)
    assert added.returncode != 0 and "pip install 'picoora[gateway]'" in added.stderr
    assert "Traceback" not in added.stderr and len(added.stderr.strip().splitlines()) == 1
    assert listed.returncode == 0 and "No scheduled jobs" in listed.stdout, listed.stderr


@pytest.mark.slow  # real CLI processes
def test_terminal_chat_with_memory_needs_no_extra(without, isolated_home):
    with FakeOllama(replies=[Reply(content="Your boat is Ariadne.")]) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="minilm")
        added = without("memory", "add", "My boat is called Ariadne", home=isolated_home)
        found = without("memory", "search", "what is the boat's name", home=isolated_home)
        answer = without("agent", "-m", "What is my boat called?", home=isolated_home)
    assert added.returncode == 0, added.stderr
    assert found.returncode == 0 and "Ariadne" in found.stdout, found.stderr
    assert answer.returncode == 0 and "Your boat is Ariadne." in answer.stdout, answer.stderr
    assert "Ariadne" in json.dumps(fake.requests[-1])  # recalled into the turn


@pytest.mark.slow  # real CLI processes
def test_the_gateway_and_an_enabled_channel_name_their_extras(without, isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    no_web = without("gateway", home=isolated_home)
    data = json.loads(path.read_text())
    data["channels"] = {"telegram": {"enabled": True, "token": "1:x"}}
    path.write_text(json.dumps(data))
    no_telegram = without("gateway", home=isolated_home, blocked=["telegram"])
    assert no_web.returncode == 1 and "pip install 'picoora[gateway]'" in no_web.stderr
    assert "fastapi, uvicorn, apscheduler, websockets" in no_web.stderr and "Traceback" not in no_web.stderr
    assert no_telegram.returncode == 1 and "the Telegram channel needs telegram" in no_telegram.stderr
    assert "pip install 'picoora[telegram]'" in no_telegram.stderr and "Traceback" not in no_telegram.stderr


@pytest.mark.slow  # a real CLI process
def test_discord_and_slack_need_only_the_gateways_extra(without, isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    data = json.loads(path.read_text())
    data["channels"] = {"discord": {"enabled": True, "token": "x"},
                        "slack": {"enabled": True, "token": "fake-bot-token", "app_token": "fake-app-token"}}
    path.write_text(json.dumps(data))
    no_web = without("gateway", home=isolated_home)
    assert no_web.returncode == 1 and "Traceback" not in no_web.stderr
    assert "pip install 'picoora[gateway]'" in no_web.stderr and "discord" not in no_web.stderr


@pytest.mark.slow  # real CLI processes
def test_a_hosted_provider_without_its_sdk_names_its_extra(without, isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9", provider="openai", model="gpt-4o-mini")
    result = without("agent", "-m", "hello", home=isolated_home, blocked=["openai"])
    assert result.returncode == 1 and "the OpenAI-compatible provider needs openai" in result.stderr
    assert "pip install 'picoora[openai]'" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow  # real CLI processes
def test_mcp_serving_and_mcp_servers_name_the_mcp_extra(without, isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    serving = without("mcp", home=isolated_home)
    data = json.loads(path.read_text())
    data["tools"] = {"mcp_servers": {"calc": {"command": sys.executable, "args": ["-c", "pass"]}}}
    path.write_text(json.dumps(data))
    status = without("status", home=isolated_home)
    assert serving.returncode == 1 and "pip install 'picoora[mcp]'" in serving.stderr
    assert "Traceback" not in serving.stderr
    line = next(line for line in status.stdout.splitlines() if line.startswith("MCP server:"))
    assert "calc ✗" in line and "pip install 'picoora[mcp]'" in line and "Traceback" not in status.stderr


@pytest.mark.slow  # real CLI processes
def test_oracle_storage_without_its_driver_falls_back_to_files_and_says_which_extra(without, isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    data = json.loads(path.read_text())
    data["oracle"] = {"enabled": True, "dsn": "localhost:1521/FREEPDB1", "user": "picoora", "password": "pw"}
    path.write_text(json.dumps(data))
    (isolated_home / "workspace").mkdir()
    added = without("memory", "add", "kept on files", home=isolated_home)
    assert added.returncode == 0, added.stderr
    assert "using file storage instead" in added.stderr and "pip install 'picoora[oracle]'" in added.stderr
    assert "Traceback" not in added.stderr


def test_pyproject_extras_match_the_code_and_all_is_every_extra():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras) == set(EXTRAS) | {"all", "test", "bench"}  # test and bench: tools, not product parts
    assert extras["all"] == [f"picoora[{','.join(EXTRAS)}]"]
    assert "picoora[all]" in extras["test"]
    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    optional = ("openai", "anthropic", "fastapi", "uvicorn", "apscheduler", "websockets", "telegram", "oracledb",
                "mcp", "onnxruntime")
    assert not [dep for dep in core for name in optional if dep.startswith((name, f"python-{name}"))]
