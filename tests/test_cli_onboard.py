"""``picoora onboard``: config 0600, templates that respect the user's edits, model choice from Ollama."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from picoora.templates import template_files
from tests.cli_support import REPO, run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama


def _onboard(home, *args, url):
    return run_cli("onboard", "--non-interactive", *args, home=home, extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": url})


def test_writes_private_config_and_every_template(isolated_home):
    with FakeOllama(models=("qwen3:latest",)) as fake:
        result = _onboard(isolated_home, url=fake.url)
    assert result.returncode == 0, result.stderr
    config = isolated_home / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["agents"]["defaults"]["model"] == "qwen3:latest"
    workspace = isolated_home / "workspace"
    for relative, content in template_files().items():
        assert (workspace / relative).read_bytes() == content
    assert {"IDENTITY.md", "SOUL.md", "AGENT.md", "USER.md", "HEARTBEAT.md"} <= set(template_files())
    assert (workspace / "memory").is_dir()
    assert "picoora agent" in result.stdout  # next steps


NOT_READY = 1  # set up, but Ollama is not there to answer


@pytest.mark.slow
def test_keeps_an_edited_template_unless_forced(isolated_home):
    url = closed_port_url()
    assert _onboard(isolated_home, url=url).returncode == NOT_READY
    soul = isolated_home / "workspace" / "SOUL.md"
    soul.write_text("# Soul\n\nAlways answer in haiku.\n")

    again = _onboard(isolated_home, url=url)
    assert again.returncode == NOT_READY
    assert soul.read_text() == "# Soul\n\nAlways answer in haiku.\n"
    assert "SOUL.md" in again.stdout and "kept your edits" in again.stdout

    config = isolated_home / "config.json"
    edited_config = config.read_text().replace('"temperature": 0.7', '"temperature": 0.2')
    config.write_text(edited_config)
    forced = _onboard(isolated_home, "--force", url=url)
    assert forced.returncode == NOT_READY
    assert soul.read_bytes() == template_files()["SOUL.md"]
    assert (soul.parent / "SOUL.md.bak").read_text() == "# Soul\n\nAlways answer in haiku.\n"  # nothing lost
    assert '"temperature": 0.7' in config.read_text()  # back to the defaults
    backup = isolated_home / "config.json.bak"
    assert backup.read_text() == edited_config and stat.S_IMODE(backup.stat().st_mode) == 0o600


@pytest.mark.slow
def test_updates_an_untouched_older_template(isolated_home):
    url = closed_port_url()
    assert _onboard(isolated_home, url=url).returncode == NOT_READY
    workspace = isolated_home / "workspace"
    manifest = json.loads((workspace / ".picoora-templates.json").read_text())
    # Simulate a template written by an older release: the file and the recorded hash agree.
    old = b"# Identity\n\nAn older template.\n"
    (workspace / "IDENTITY.md").write_bytes(old)
    import hashlib

    manifest["IDENTITY.md"] = hashlib.sha256(old).hexdigest()
    (workspace / ".picoora-templates.json").write_text(json.dumps(manifest))

    result = _onboard(isolated_home, url=url)
    assert result.returncode == NOT_READY
    assert (workspace / "IDENTITY.md").read_bytes() == template_files()["IDENTITY.md"]
    assert "updated to the new template: IDENTITY.md" in result.stdout


def test_ollama_down_prints_how_to_install_and_start_it(isolated_home):
    result = _onboard(isolated_home, url=closed_port_url())
    assert result.returncode == NOT_READY
    assert "picoora is ready" not in result.stdout
    assert "picoora is set up, but cannot chat yet: Ollama does not answer at" in result.stdout
    assert "curl -fsSL https://ollama.com/install.sh | sh" in result.stdout
    assert "ollama serve" in result.stdout
    assert "ollama pull" in result.stdout
    assert (isolated_home / "config.json").is_file()


@pytest.mark.slow
def test_picks_a_pulled_model_that_can_call_tools(isolated_home):
    with FakeOllama(models=("gemma3:1b", "llama3.1:8b"), tool_models=("llama3.1:8b",)) as fake:
        result = _onboard(isolated_home, url=fake.url)
    assert result.returncode == 0, result.stderr
    assert json.loads((isolated_home / "config.json").read_text())["agents"]["defaults"]["model"] == "llama3.1:8b"


def test_changing_the_model_keeps_the_rest_of_an_existing_config(isolated_home):
    with FakeOllama(models=("llama3.1:8b",)) as fake:
        config = write_config(isolated_home, ollama_url=fake.url, model="qwen3:latest")
        data = json.loads(config.read_text())
        data["providers"]["openai"] = {"api_key": "${MY_OPENAI_KEY}"}
        config.write_text(json.dumps(data))
        result = run_cli("onboard", "--non-interactive", home=isolated_home, extra_env={"MY_OPENAI_KEY": "sk-secret"})
    assert result.returncode == 0, result.stderr
    saved = json.loads(config.read_text())
    assert saved["agents"]["defaults"]["model"] == "llama3.1:8b"
    assert saved["providers"]["openai"]["api_key"] == "${MY_OPENAI_KEY}"  # the reference, never the secret
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_explicit_model_not_pulled_gets_the_pull_command(isolated_home):
    with FakeOllama(models=("qwen3:latest",)) as fake:
        result = _onboard(isolated_home, "--model", "mistral-nemo", url=fake.url)
    assert result.returncode == NOT_READY
    assert "picoora is ready" not in result.stdout
    assert "cannot chat yet: the model mistral-nemo is not pulled: run `ollama pull mistral-nemo`" in result.stdout
    assert json.loads((isolated_home / "config.json").read_text())["agents"]["defaults"]["model"] == "mistral-nemo"


def test_broken_existing_config_is_reported_not_overwritten(isolated_home):
    config = isolated_home / "config.json"
    config.write_text('{"agents": {"defaults": {"max_tool_iterations": 0}}}')
    result = _onboard(isolated_home, url=closed_port_url())
    assert result.returncode == 2
    assert "agents.defaults.max_tool_iterations" in result.stderr
    assert "--force" in result.stderr
    assert json.loads(config.read_text()) == {"agents": {"defaults": {"max_tool_iterations": 0}}}


def test_interactive_choice_on_a_terminal(isolated_home):
    """With a terminal on stdin, onboard lists the models and takes the user's pick by number."""
    with FakeOllama(models=("gemma3:1b", "qwen3:latest", "llama3.1:8b"),
                    tool_models=("qwen3:latest", "llama3.1:8b")) as fake:
        controller, terminal = os.openpty()
        env = {**os.environ, "PICOORA_HOME": str(isolated_home), "PICO_PROVIDERS_OLLAMA_API_BASE": fake.url}
        with os.fdopen(controller, "wb", buffering=0) as keyboard:
            keyboard.write(b"1\n3\n")  # typed ahead (Ollama, then the third model); the prompts read the terminal
            result = subprocess.run([sys.executable, "-m", "picoora", "onboard"], stdin=terminal, capture_output=True,
                                    text=True, env=env, cwd=REPO, timeout=60)
        os.close(terminal)
    assert result.returncode == 0, result.stderr
    assert "1. gemma3:1b  (cannot call tools)" in result.stdout
    assert json.loads((isolated_home / "config.json").read_text())["agents"]["defaults"]["model"] == "llama3.1:8b"


@pytest.mark.slow
def test_force_keeps_every_edited_template_as_a_backup_and_never_replaces_one(isolated_home):
    with FakeOllama(models=("qwen3:latest",)) as fake:
        assert _onboard(isolated_home, url=fake.url).returncode == 0
        user = isolated_home / "workspace" / "USER.md"
        user.write_text("# User\n\nName: Ada. Likes Go.\n")
        assert _onboard(isolated_home, "--force", url=fake.url).returncode == 0
        user.write_text("# User\n\nName: Ada. Now likes Rust.\n")
        second = _onboard(isolated_home, "--force", url=fake.url)
    assert second.returncode == 0 and "saved as NAME.bak" in second.stdout
    assert user.read_bytes() == template_files()["USER.md"]
    assert (user.parent / "USER.md.bak").read_text() == "# User\n\nName: Ada. Likes Go.\n"
    assert (user.parent / "USER.md.bak.2").read_text() == "# User\n\nName: Ada. Now likes Rust.\n"


BESIDE = os.path.join(os.path.dirname(sys.executable), "picoora")  # this test run's install's command


@pytest.mark.slow  # several real CLI runs
@pytest.mark.skipif(not os.access(BESIDE, os.X_OK), reason="no picoora script beside this Python (not installed)")
def test_next_steps_name_the_command_the_way_this_install_runs(isolated_home, tmp_path):
    with FakeOllama(models=("qwen3:latest",)) as fake:
        env = {"PICO_PROVIDERS_OLLAMA_API_BASE": fake.url}
        not_on_path = run_cli("onboard", "--non-interactive", home=isolated_home,
                              extra_env={**env, "PATH": "/usr/bin:/bin"})
        on_path = run_cli("onboard", "--non-interactive", home=isolated_home,
                          extra_env={**env, "PATH": f"{os.path.dirname(BESIDE)}:/usr/bin:/bin"})
        quick_start = tmp_path / "checkout"  # `.venv/bin/picoora onboard`, as the quick start says, not activated
        (quick_start / ".venv" / "bin").mkdir(parents=True)
        (quick_start / ".venv" / "bin" / "picoora").symlink_to(BESIDE)
        typed = subprocess.run([".venv/bin/picoora", "onboard", "--non-interactive"], cwd=quick_start,
                               capture_output=True, text=True, timeout=60,
                               env={**os.environ, **env, "PICOORA_HOME": str(isolated_home), "PATH": "/usr/bin:/bin",
                                    "PYTHONPATH": str(REPO)})
    relative = os.path.relpath(BESIDE, REPO)  # run_cli works in the checkout: a .venv there is shown as typed
    beside = relative if not relative.startswith("..") else BESIDE
    assert f'{beside} agent -m "Hello!"' in not_on_path.stdout, not_on_path.stderr
    assert '  2. Chat: picoora agent -m "Hello!"' in on_path.stdout
    assert "Check the set-up any time: .venv/bin/picoora status" in typed.stdout, typed.stderr


CANNOT_WRITE = 73  # its own code: not NOT_READY (Ollama missing), and with the fix


def test_a_home_that_cannot_be_written_stops_first_with_the_fix(isolated_home, tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    result = run_cli("onboard", "--non-interactive", home=in_the_way / ".picoora")
    assert result.returncode == CANNOT_WRITE, result.stderr
    assert f"cannot write {in_the_way / '.picoora'} (Not a directory)" in result.stderr
    assert "set PICOORA_HOME to a folder you can write" in result.stderr
    assert "Ollama" not in result.stdout + result.stderr  # stopped before asking anything


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders (the Not-a-directory case runs)")
def test_a_read_only_home_stops_with_the_fix(isolated_home, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = run_cli("onboard", "--non-interactive", home=locked / ".picoora")
    finally:
        locked.chmod(0o755)
    assert result.returncode == CANNOT_WRITE and "(Permission denied)" in result.stderr
    assert "set PICOORA_HOME to a folder you can write" in result.stderr


def test_the_ollama_address_onboard_used_is_saved(isolated_home):
    with FakeOllama(models=("qwen3:latest",)) as fake:
        assert _onboard(isolated_home, url=fake.url).returncode == 0
        saved = json.loads((isolated_home / "config.json").read_text())["providers"]["ollama"]["api_base"]
        assert saved == fake.url
        answer = run_cli("agent", "-m", "hi", home=isolated_home)  # no variable now
    assert answer.returncode == 0, answer.stderr
