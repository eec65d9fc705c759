"""Workspaces and store files that cannot be used end a command with one line and the documented exit
code, never a traceback: an impossible path, a file where a folder belongs, an empty session name,
a read-only or full workspace, text that is not UTF-8, a session nested too deep to parse."""

from __future__ import annotations

import shutil

import pytest

from picoora.agent.record import FAILED_MARK
from picoora.store.files import FileStore
from picoora.store.layout import FileLayout
from tests.cli_support import closed_port_url_config, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fs_support import full_dir, read_only_dir

pytestmark = pytest.mark.slow  # many real CLI processes: `pytest -m slow` (.ci/run) runs it


def _one_clear_line(result, *, code: int, words: str) -> None:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert words in result.stderr, result.stderr


def test_a_workspace_that_cannot_be_created_is_a_config_error(isolated_home):
    closed_port_url_config(isolated_home, workspace="/proc/nope")
    result = run_cli("agent", "-m", "hello", home=isolated_home)
    _one_clear_line(result, code=2, words="the workspace /proc/nope cannot be used")
    assert "agents.defaults.workspace" in result.stderr


def test_a_workspace_that_is_a_file_is_a_config_error_and_status_says_so(isolated_home):
    target = isolated_home / "not-a-folder"
    target.write_text("my notes\n")
    closed_port_url_config(isolated_home, workspace=str(target))
    _one_clear_line(run_cli("agent", "-m", "hello", home=isolated_home), code=2, words="cannot be used")
    status = run_cli("status", home=isolated_home)
    assert status.returncode == 1 and "Traceback" not in status.stderr
    assert "is a file, not a folder" in status.stdout
    assert target.read_text() == "my notes\n"  # nothing lost


def test_an_empty_session_name_is_a_usage_error(isolated_home):
    closed_port_url_config(isolated_home)
    _one_clear_line(run_cli("agent", "-s", "", "-m", "hello", home=isolated_home), code=2,
                    words="the session name is empty")


def _workspace_with_a_session(where) -> None:
    store = FileStore(where)
    from picoora.messages import Message

    store.transcripts.append("cli:default", [Message(role="user", content="an earlier question")])
    store.close()


def test_a_read_only_workspace_gives_one_line_on_every_command(isolated_home):
    workspace = isolated_home / "ro-workspace"
    with read_only_dir(workspace, _workspace_with_a_session):
        closed_port_url_config(isolated_home, workspace=str(workspace))
        agent = run_cli("agent", "-m", "hello", home=isolated_home)
        status = run_cli("status", home=isolated_home)
        memory = run_cli("memory", "list", home=isolated_home)
    _one_clear_line(agent, code=2, words="cannot be used")
    assert status.returncode == 1 and "Traceback" not in status.stderr + status.stdout
    assert "Storage:" in status.stdout and "cannot be used" in status.stdout
    assert memory.returncode != 0 and "Traceback" not in memory.stderr and "cannot be used" in memory.stderr


def test_a_full_disk_ends_the_turn_with_one_line_and_keeps_what_was_stored(isolated_home):
    workspace = isolated_home / "full-workspace"
    with FakeOllama(replies=[Reply(content="never shown")]) as fake, \
            full_dir(workspace, _workspace_with_a_session) as preexec:
        write_config(isolated_home, ollama_url=fake.url, workspace=str(workspace))
        result = run_cli("agent", "-m", "hello", home=isolated_home, preexec_fn=preexec)
        status = run_cli("status", home=isolated_home, preexec_fn=preexec)
        store = FileStore(workspace)
        kept = [e.message.content for e in store.transcripts.read("cli:default")]
        store.close()
    _one_clear_line(result, code=1, words="cannot write")
    assert "free some space" in result.stderr
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert kept[0] == "an earlier question"


def test_text_that_is_not_utf8_names_the_file_and_the_turn_goes_on(isolated_home):
    closed_port_url_config(isolated_home)
    workspace = isolated_home / "workspace"
    workspace.mkdir()
    (workspace / "IDENTITY.md").write_bytes(b"\xff\xfe I am\n")
    result = run_cli("agent", "-m", "hello", home=isolated_home)
    assert "Traceback" not in result.stderr
    assert "IDENTITY.md is not valid UTF-8" in result.stderr  # a notice, and the turn still reaches the model:
    assert "Cannot connect to Ollama" in result.stderr  # which is what fails here
    assert (workspace / "IDENTITY.md").read_bytes() == b"\xff\xfe I am\n"


def test_sessions_folder_that_is_a_file_and_a_session_nested_too_deep(isolated_home):
    closed_port_url_config(isolated_home)
    workspace = isolated_home / "workspace"
    FileStore(workspace).close()  # the current layout, so nothing is migrated
    sessions = FileLayout(workspace).sessions
    shutil.rmtree(sessions, ignore_errors=True)
    sessions.parent.mkdir(parents=True, exist_ok=True)
    sessions.write_text("not a folder")
    not_a_folder = run_cli("agent", "-m", "hello", home=isolated_home)
    _one_clear_line(not_a_folder, code=1, words="a file stands where picoora keeps a folder")
    sessions.unlink()
    sessions.mkdir()
    (sessions / "cli_default.json").write_text("[" * 100_000 + "]" * 100_000)
    deep = run_cli("agent", "-m", "hello", home=isolated_home)
    _one_clear_line(deep, code=1, words="nested too deeply")
    store = FileStore(workspace)
    said = [e.message.content for e in store.transcripts.read("cli:default")]
    store.close()
    assert said == ["hello", FAILED_MARK] * 2  # the user's words were kept both times, the turns marked failed
