"""``picoora migrate`` on a Go home built from the Go version's documented formats (tests/go_home.py): a dry
run writes nothing, a real run brings config, prompts, skills, sessions, notes, memories and jobs, a second
run adds nothing twice, --force replaces with .bak copies, and hostile or broken input is listed, not fatal."""

from __future__ import annotations

import json
import os
import stat

import pytest

from picoora.config import load_config
from picoora.migrate import MARKER
from picoora.owner_chat import LAST_CHAT
from picoora.templates import template_files
from tests.cli_support import messages_text, run_cli
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.go_home import OPENROUTER_KEY, TELEGRAM_TOKEN, build_go_home


@pytest.fixture
def user_home(tmp_path):
    home = tmp_path / "user"
    home.mkdir()
    build_go_home(home)
    return home


def _migrate(picoora_home, user_home, *args):
    # HOME points at the user's folder, so ~/.picooraclaw is found without --from
    result = run_cli("migrate", *args, home=picoora_home, extra_env={"HOME": str(user_home)}, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert OPENROUTER_KEY not in result.stdout and TELEGRAM_TOKEN not in result.stdout
    return result.stdout


def _store():
    from picoora.store import open_store

    return open_store(load_config())


def test_a_dry_run_lists_everything_and_writes_nothing(isolated_home, user_home):
    before = sorted(p for p in isolated_home.rglob("*"))
    out = _migrate(isolated_home, user_home, "--dry-run")
    assert sorted(p for p in isolated_home.rglob("*")) == before
    assert out.startswith(f"Dry run: nothing is written. Migrating {user_home / '.picooraclaw'}")
    for item in ("would migrate: IDENTITY.md", "would migrate: cli:default (4 messages)",
                 "would migrate: telegram:123456789 (2 messages)", "would migrate: 2026-11-02",
                 "would migrate: MEMORY.md (3 memories)", "would migrate: tides", "would migrate: HEARTBEAT.md",
                 "would migrate: Morning tides (a1b2c3d4e5f60718) (cron 0 7 * * *, agent)",
                 "not migrated: Disk check (e1b2c3d4e5f60718) (it ran a shell command",
                 "not migrated: Old reminder (d1b2c3d4e5f60718) (a one-time job that was due"):
        assert item in out, item
    # every key with no equivalent is listed, with why
    assert "channels.feishu: picoora has no feishu channel" in out
    assert "devices: picoora has no USB device notifications" in out
    assert "gateway.host: picoora listens on 127.0.0.1" in out
    assert "providers.openrouter.proxy:" in out and "channels.telegram.proxy:" in out
    assert "oracle.embedding_provider, oracle.embedding_api_base" in out


def test_a_real_run_brings_config_workspace_and_records(isolated_home, user_home):
    out = _migrate(isolated_home, user_home)
    config_file = isolated_home / "config.json"
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    config = load_config()
    defaults = config.agents.defaults
    assert (defaults.provider, defaults.model, defaults.temperature) == ("openrouter", "anthropic/claude-sonnet-4", 0.4)
    assert defaults.context_window == 8192  # Go's max_tokens was the context size
    assert config.providers.openrouter.api_key == OPENROUTER_KEY
    assert config.channels.telegram.enabled and config.channels.telegram.token == TELEGRAM_TOKEN
    assert config.channels.telegram.allow_from == ["123456789", "@alice"]
    assert config.heartbeat.enabled and config.heartbeat.interval == 5
    assert config.gateway.host == "127.0.0.1" and config.gateway.port == 18790 and config.gateway.token
    assert config.oracle.wallet_path == "/opt/wallet" and config.oracle.user == "picooraclaw"

    workspace = isolated_home / "workspace"
    identity = (workspace / "IDENTITY.md").read_text()  # picoora's own instructions, then the Go user's text
    assert identity.startswith(template_files()["IDENTITY.md"].decode().rstrip())
    assert identity.endswith("\n\n# Identity\n\nYou are Claw, Ana's assistant.\n")
    assert (workspace / "HEARTBEAT.md").read_text().endswith("- Check the tide table every morning.\n")
    assert (workspace / "skills" / "tides" / "scripts" / "fetch.sh").is_file()
    assert "migrated: cli:default (4 messages)" in out

    store = _store()
    try:
        session = store.sessions.load("cli:default")
        assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
        assert session.messages[1].tool_calls[0].name == "write_file"
        assert session.messages[1].tool_calls[0].arguments == {"path": "boat.md", "content": "Ariadne"}
        assert session.summary == "Ana told me about her boat."
        assert (session.created_at.isoformat(), session.updated_at.isoformat()) == (  # Go's own times
            "2026-11-01T09:00:00+00:00", "2026-11-02T10:00:00+00:00")
        assert len(store.transcripts.read("telegram:123456789")) == 2
        notes = {n.day.isoformat(): n.content for n in store.notes.recent(days=400)}
        assert "Regatta on Saturday." in notes["2026-11-02"]
        assert notes["2026-11-02"].count("# 2026-11-02") <= 1  # Go's heading is not doubled by picoora's
        memories = {m.content: m for m in store.memories.list()}
        assert set(memories) == {"Ana prefers metric units.", "Ana likes short answers.",
                                 "Ana's boat is a 9 m sloop called Ariadne, moored in Lisbon."}
        assert memories["Ana prefers metric units."].category == "preferences"
        assert all(m.embedding_model for m in memories.values())  # embedded, so recall by meaning finds them
        assert store.state.get(LAST_CHAT) == "telegram:123456789"
    finally:
        store.close()

    jobs = json.loads(run_cli("cron", "list", "--json", home=isolated_home).stdout)
    by_text = {job["text"]: job for job in jobs}
    assert set(by_text) == {"Check the tides for today", "Time to stretch", "Regatta today!"}
    tides = by_text["Check the tides for today"]
    assert (tides["kind"], tides["spec"], tides["action"], tides["channel"], tides["chat_id"]) == \
        ("cron", "0 7 * * *", "agent", "telegram", "123456789")
    stretch = by_text["Time to stretch"]
    assert (stretch["kind"], stretch["spec"], stretch["action"], stretch["enabled"]) == ("every", "7200s", "reminder",
                                                                                      False)
    assert stretch["channel"] == "telegram"  # no target in Go: the chat used last, brought over first
    assert by_text["Regatta today!"]["kind"] == "at"


def test_running_twice_adds_nothing_twice(isolated_home, user_home):
    _migrate(isolated_home, user_home)
    config_before = (isolated_home / "config.json").read_text()
    again = _migrate(isolated_home, user_home)
    assert f"unchanged: {isolated_home / 'config.json'} (every Go setting is there already)" in again
    assert (isolated_home / "config.json").read_text() == config_before
    for line in ("unchanged: cli:default (already migrated)", "unchanged: 2026-11-01 (already migrated)",
                 "unchanged: MEMORY.md (3 memories already there)", "unchanged: IDENTITY.md", "unchanged: tides",
                 "unchanged: Morning tides (a1b2c3d4e5f60718) (already migrated)"):
        assert line in again, line
    assert "migrated: " not in again.replace("not migrated: ", "")
    store = _store()
    try:
        assert len(store.sessions.load("cli:default").messages) == 4
        assert len(store.transcripts.read("cli:default")) == 4
        assert len(store.memories.list()) == 3
        assert store.notes.recent(days=400)[-1].content.count("Sanded the hull.") == 1
    finally:
        store.close()
    assert len(json.loads(run_cli("cron", "list", "--json", home=isolated_home).stdout)) == 3

    # Go, still in use, appended to a note: the next run brings only the new lines
    note = user_home / ".picooraclaw" / "workspace" / "memory" / "202611" / "20261102.md"
    note.write_text(note.read_text() + "\nWon the regatta.\n")
    third = _migrate(isolated_home, user_home)
    assert "migrated: 2026-11-02 (16 characters, added since)" in third
    store = _store()
    try:
        text = next(n.content for n in store.notes.recent(days=400) if n.day.isoformat() == "2026-11-02")
        assert text.count("Bought new sheets.") == 1 and text.count("Won the regatta.") == 1
    finally:
        store.close()


def test_what_picoora_has_is_kept_unless_forced_and_then_backed_up(isolated_home, user_home):
    _migrate(isolated_home, user_home)
    workspace = isolated_home / "workspace"
    (workspace / "SOUL.md").write_text("# Soul\n\nMy picoora soul.\n")
    config_file = isolated_home / "config.json"
    edited = config_file.read_text().replace('"temperature": 0.4', '"temperature": 0.9')
    config_file.write_text(edited)
    go_soul = user_home / ".picooraclaw" / "workspace" / "SOUL.md"
    go_soul.write_text("# Soul\n\nChanged in Go.\n")

    kept = _migrate(isolated_home, user_home)
    assert "kept: SOUL.md (picoora's was edited; --force adds the Go text after it, keeping a .bak)" in kept
    assert "kept: agents.defaults.temperature (edited in picoora; the Go config has another value" in kept
    assert (workspace / "SOUL.md").read_text() == "# Soul\n\nMy picoora soul.\n"
    assert load_config().agents.defaults.temperature == 0.9

    forced = _migrate(isolated_home, user_home, "--force")
    assert "replaced: SOUL.md (added after yours, which is saved as SOUL.md.bak)" in forced
    assert (workspace / "SOUL.md").read_text() == "# Soul\n\nMy picoora soul.\n\n# Soul\n\nChanged in Go.\n"
    assert (workspace / "SOUL.md.bak").read_text() == "# Soul\n\nMy picoora soul.\n"
    assert (isolated_home / "config.json.bak").read_text() == edited  # nothing lost
    assert stat.S_IMODE((isolated_home / "config.json.bak").stat().st_mode) == 0o600
    assert load_config().agents.defaults.temperature == 0.4
    store = _store()
    try:
        assert len(store.sessions.load("cli:default").messages) == 4  # the ledger still knows the sessions
    finally:
        store.close()


def test_broken_and_hostile_input_is_listed_and_the_rest_still_comes(isolated_home, user_home, tmp_path):
    go = user_home / ".picooraclaw"
    ws = go / "workspace"
    (go / "config.json").write_text('{"agents": {"defaults": {"model": ')  # cut off mid-write
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY")
    os.symlink(secret, ws / "skills" / "tides" / "stolen")
    os.symlink(secret, ws / "USER.md.link")
    (ws / "USER.md").unlink()
    os.symlink(secret, ws / "USER.md")
    (ws / "sessions" / "garbage.json").write_text("[1, 2")
    (ws / "sessions" / "odd.json").write_text(json.dumps({"key": "cli:odd", "messages": [{"content": "no role"}]}))
    (ws / "sessions" / "long.json").write_text(json.dumps({"key": "cli:" + "k" * 1200, "messages": [
        {"role": "user", "content": "hello"}]}))
    (ws / "sessions" / "role.json").write_text(json.dumps({"key": "cli:role", "messages": [
        {"role": "r" * 100, "content": "hello"}]}))
    (ws / "memory" / "202611" / "20261399.md").write_text("not a day")
    (ws / "cron" / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [
        "nonsense", {"id": "f1", "name": "Too often", "schedule": {"kind": "every", "everyMs": 5000},
                     "payload": {"message": "spam"}}]}))

    out = _migrate(isolated_home, user_home)
    assert "not valid JSON" in out and "config.json" in out  # listed, and picoora's defaults written
    assert load_config().agents.defaults.provider == "ollama"
    assert "not migrated: USER.md (a symbolic link (at some level of its path) or not a file; not followed)" in out
    assert "not migrated: tides/stolen (a symbolic link (at some level of its path) or not a file; not followed)" in out
    assert not (isolated_home / "workspace" / "skills" / "tides" / "stolen").exists()
    assert "PRIVATE KEY" not in (isolated_home / "workspace" / "USER.md").read_text()
    assert "not migrated: garbage.json (not valid JSON" in out
    assert "not migrated: odd.json (a message without a role)" in out
    assert "(the store refused it: the session key is 1204 characters long; at most 1000 are stored)" in out
    assert "not migrated: cli:role (the store refused it: the message role is 100 characters long" in out
    assert "not migrated: Too often (f1) (an interval of '5s' is too short" in out
    assert "not migrated: ? (no id) (it has no message)" in out
    assert "migrated: cli:default (4 messages)" in out and "migrated: MEMORY.md" in out


def test_status_and_onboard_notice_a_go_home_until_it_is_migrated(isolated_home, user_home):
    env = {"HOME": str(user_home)}
    status = run_cli("status", home=isolated_home, extra_env=env)
    assert f"PicoOraClaw: {user_home / '.picooraclaw'} found: bring its config" in status.stdout
    assert "picoora migrate" in status.stdout
    onboard = run_cli("onboard", "--non-interactive", home=isolated_home, extra_env=env)
    assert "picoora migrate" in onboard.stdout
    (isolated_home / "config.json").unlink()

    _migrate(isolated_home, user_home)
    assert (isolated_home / MARKER).is_file()
    after = run_cli("status", home=isolated_home, extra_env=env)
    assert f"{user_home / '.picooraclaw'} migrated " in after.stdout and "found: bring" not in after.stdout


def test_after_one_command_the_assistant_chats_with_the_go_memories_and_history(isolated_home, user_home):
    _migrate(isolated_home, user_home)
    with FakeOpenAI(replies=[Reply(content="Ariadne, your sloop.")]) as fake:
        result = run_cli("agent", "-m", "What is my boat called?", home=isolated_home,
                         extra_env={"PICO_PROVIDERS_OPENROUTER_API_BASE": f"{fake.url}/v1",
                                    "PICO_PROVIDERS_OPENROUTER_MAX_RETRIES": "0"}, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "Ariadne, your sloop."
        shown = messages_text(fake.requests[0])
        assert "You are Claw, Ana's assistant." in shown  # the Go prompts
        assert "Ana's boat is a 9 m sloop called Ariadne" in shown  # a Go memory, recalled
        assert "My boat is called Ariadne." in shown  # the Go session's history
        assert fake.request_headers[0]["authorization"] == f"Bearer {OPENROUTER_KEY}"


def test_no_go_home_and_a_bad_from_are_usage_errors(isolated_home, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run_cli("migrate", home=isolated_home, extra_env={"HOME": str(empty)})
    assert none.returncode == 2 and "no PicoOraClaw home found" in none.stderr
    missing = run_cli("migrate", "--from", str(tmp_path / "nope"), home=isolated_home)
    assert missing.returncode == 2 and "is not a folder" in missing.stderr


def test_a_value_picoora_refuses_is_listed_and_the_rest_is_carried(isolated_home, tmp_path):
    user = tmp_path / "someone"
    root = user / ".picoclaw"  # a picoclaw home (the Go version's parent project) is found too
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({
        "agents": {"defaults": {"model": "qwen2.5:14b", "provider": "ollama", "temperature": 3.5,
                                "summarize_message_threshold": 2}},
        "heartbeat": {"enabled": True, "interval": 0},
        "providers": {"ollama": {"api_base": "http://gpu-box:11434/v1"}},
        "future_section": {"x": 1}}))
    out = _migrate(isolated_home, user)
    assert f"Migrating {root} into" in out
    assert "agents.defaults.temperature: picoora refuses its value: Input should be less than or equal to 2" in out
    assert "agents.defaults.summarize_message_threshold: picoora refuses its value" in out
    assert "future_section.x: not a key the Go version reads either" in out
    config = load_config()
    assert config.agents.defaults.model == "qwen2.5:14b" and config.agents.defaults.temperature == 0.7
    assert config.providers.ollama.api_base == "http://gpu-box:11434/v1"
    assert config.heartbeat.interval == 30  # Go's 0 meant the default, 30 minutes


def test_a_session_picoora_already_has_is_kept_until_forced_and_its_transcript_stays(isolated_home, user_home):
    from picoora.messages import Message

    run_cli("onboard", "--non-interactive", home=isolated_home)  # picoora was set up and used first
    store = _store()
    try:
        mine = [Message("user", "Hello from picoora"), Message("assistant", "Hi!")]
        store.transcripts.append("cli:default", mine)
        store.sessions.append("cli:default", mine)
    finally:
        store.close()

    kept = _migrate(isolated_home, user_home)
    assert "kept: cli:default (picoora already has this session (2 messages)" in kept
    forced = _migrate(isolated_home, user_home, "--force")
    assert "migrated: cli:default (4 messages)" in forced
    store = _store()
    try:
        assert store.sessions.load("cli:default").messages[0].content == "My boat is called Ariadne."
        transcript = [e.message.content for e in store.transcripts.read("cli:default")]
        assert transcript[:2] == ["Hello from picoora", "Hi!"] and len(transcript) == 6  # nothing lost
    finally:
        store.close()
