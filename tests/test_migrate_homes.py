"""``picoora migrate`` round two on Go homes built from the Go formats (tests/go_home.py): Discord and Slack
come over, ``--from`` reads the home it is given (its ``~`` is that home's user folder, not this HOME)."""

from __future__ import annotations

import json

import pytest

from picoora.config import load_config
from tests.cli_support import run_cli
from tests.go_home import OPENROUTER_KEY, TELEGRAM_TOKEN, build_go_home


def migrate(picoora_home, *args, home=None):
    env = {"HOME": str(home)} if home is not None else None
    result = run_cli("migrate", *args, home=picoora_home, extra_env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _edit_config(root, change):
    data = json.loads((root / "config.json").read_text())
    change(data)
    (root / "config.json").write_text(json.dumps(data))


def test_discord_and_slack_come_over_with_their_tokens(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")

    def channels(config):
        config["channels"]["discord"].update(enabled=True, token="discord-bot-token", allow_from=[998877665544])
        config["channels"]["slack"].update(enabled=True, bot_token="xoxb-1", app_token="xapp-1", allow_from=["U1"])
    _edit_config(root, channels)
    out = migrate(isolated_home, "--from", str(root))
    assert "discord-bot-token" not in out and "xoxb-1" not in out
    assert "picoora has no discord channel" not in out and "picoora has no slack channel" not in out
    config = load_config()
    assert (config.channels.discord.enabled, config.channels.discord.token) == (True, "discord-bot-token")
    assert config.channels.discord.allow_from == ["998877665544"]
    assert (config.channels.slack.token, config.channels.slack.app_token) == ("xoxb-1", "xapp-1")


def test_from_reads_the_given_homes_workspace_not_this_users(isolated_home, tmp_path):
    theirs = build_go_home(tmp_path / "ana")  # its config says ~/.picooraclaw/workspace
    mine = build_go_home(tmp_path / "me")  # this HOME's own Go home must stay unread
    (mine / "workspace" / "IDENTITY.md").write_text("# Identity\n\nYou are the wrong one.\n")
    migrate(isolated_home, "--from", str(theirs), home=tmp_path / "me")
    assert "You are Claw" in (isolated_home / "workspace" / "IDENTITY.md").read_text()


def test_a_home_copied_elsewhere_keeps_its_own_workspace(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    copy = tmp_path / "backup" / "go-home"
    copy.parent.mkdir()
    root.rename(copy)
    out = migrate(isolated_home, "--from", str(copy))
    assert "migrated: cli:default (4 messages)" in out
    assert "You are Claw" in (isolated_home / "workspace" / "IDENTITY.md").read_text()


def test_onboard_then_migrate_brings_the_go_config_over_onboards_default(isolated_home, tmp_path):
    user = tmp_path / "ana"
    build_go_home(user)
    run_cli("onboard", "--non-interactive", home=isolated_home, extra_env={"HOME": str(user)})
    written = (isolated_home / "config.json").read_text()
    token = json.loads(written)["gateway"]["token"]
    out = migrate(isolated_home, home=user)
    assert "onboard's unedited config: from the Go config: " in out
    config = load_config()
    assert (config.agents.defaults.provider, config.providers.openrouter.api_key) == ("openrouter", OPENROUTER_KEY)
    assert config.channels.telegram.token == TELEGRAM_TOKEN
    assert config.channels.telegram.allow_from == ["123456789", "@alice"]
    assert config.gateway.token == token  # onboard's choice, which the Go config has no word on
    assert (isolated_home / "config.json.bak").read_text() == written
    again = migrate(isolated_home, "--force", home=user)  # nothing new: no rewrite, no second backup
    assert "every Go setting is there already" in again and not (isolated_home / "config.json.bak.2").exists()


def test_an_edited_picoora_config_is_merged_key_by_key_and_the_report_says_who_won(isolated_home, tmp_path):
    user = tmp_path / "ana"
    build_go_home(user)
    run_cli("onboard", "--non-interactive", home=isolated_home, extra_env={"HOME": str(user)})
    data = json.loads((isolated_home / "config.json").read_text())
    data["agents"]["defaults"]["temperature"] = 1.1
    data["channels"]["telegram"]["allow_from"] = ["999"]
    (isolated_home / "config.json").write_text(json.dumps(data))
    out = migrate(isolated_home, home=user)
    assert "kept: agents.defaults.temperature (edited in picoora; the Go config has another value" in out
    assert "kept: channels.telegram.allow_from (edited in picoora" in out
    assert "channels.telegram.token" in out.split("from the Go config: ")[1].splitlines()[0]
    config = load_config()
    assert config.agents.defaults.temperature == 1.1 and config.channels.telegram.allow_from == ["999"]
    assert config.channels.telegram.token == TELEGRAM_TOKEN
    assert config.providers.openrouter.api_key == OPENROUTER_KEY


def test_onboards_generated_token_takes_go_s_web_token_and_a_mixed_provider_and_model_are_warned_of(
        isolated_home, tmp_path):
    user = tmp_path / "ana"
    root = build_go_home(user)
    _edit_config(root, lambda config: config["channels"]["web"].update(token="go-web-token"))
    run_cli("onboard", "--non-interactive", home=isolated_home, extra_env={"HOME": str(user)})
    data = json.loads((isolated_home / "config.json").read_text())
    data["agents"]["defaults"].update(model="qwen3:8b", temperature=1.1)  # edited: no longer onboard's own file
    (isolated_home / "config.json").write_text(json.dumps(data))
    out = migrate(isolated_home, home=user)
    assert "kept: gateway.token" not in out
    assert "gateway.token" in out.split("from the Go config: ")[1].splitlines()[0]
    assert "agents.defaults.provider 'openrouter' and agents.defaults.model 'qwen3:8b' came from different " \
           "configs and may not go together" in out
    config = load_config()
    assert config.gateway.token == "go-web-token"
    assert (config.agents.defaults.provider, config.agents.defaults.model) == ("openrouter", "qwen3:8b")


def _migrate_here(root, isolated_home):
    from contextlib import closing

    from picoora.migrate import migrate_home
    from picoora.store import open_store

    return migrate_home(root, config_path=isolated_home / "config.json",
                        open_store=lambda config: closing(open_store(config)))


def test_go_templates_leave_picooras_prompts_and_heartbeat_as_they_are(isolated_home, tmp_path, monkeypatch):
    import hashlib

    from picoora.migrate import go_templates
    from picoora.templates import template_files

    root = build_go_home(tmp_path / "ana")
    ws = root / "workspace"
    shipped = "# Soul\n\nI am the Go version's stock soul.\n"  # stands in for the file Go's onboard ships
    digest = hashlib.sha256(go_templates.normalise(shipped).encode()).hexdigest()
    monkeypatch.setitem(go_templates.GO_PROMPT_SHA256, "SOUL.md", frozenset({digest}))
    (ws / "SOUL.md").write_text(shipped.replace("\n", "\r\n") + "\n")  # line ends do not make an edit
    (ws / "HEARTBEAT.md").write_text(
        "# Heartbeat Check List\n\n## Examples\n\n- Check for unread messages\n\n## Instructions\n\n"
        "- Execute ALL tasks listed below.\n\n---\n\nAdd your heartbeat tasks below this line:\n")
    report = "\n".join(_migrate_here(root, isolated_home).lines())
    workspace = isolated_home / "workspace"
    assert (workspace / "SOUL.md").read_bytes() == template_files()["SOUL.md"]
    assert "not migrated: SOUL.md (the Go version's own unedited template" in report
    assert (workspace / "HEARTBEAT.md").read_bytes() == template_files()["HEARTBEAT.md"]
    assert "not migrated: HEARTBEAT.md (only the Go version's examples" in report


def test_tasks_under_gos_heartbeat_marker_come_without_its_examples(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    (root / "workspace" / "HEARTBEAT.md").write_text(
        "# Heartbeat Check List\n\n## Examples\n\n- Check for unread messages\n\n---\n\n"
        "Add your heartbeat tasks below this line:\n- Check the tide table.\n")
    _migrate_here(root, isolated_home)
    text = (isolated_home / "workspace" / "HEARTBEAT.md").read_text()
    assert text.endswith("## Tasks\n\n<!-- One task per line, for example:\n- Look at today's daily note and remind me "
                         "of anything I said I would do today.\n- If TODO.md exists in the workspace, list the items "
                         "still open.\n-->\n\n- Check the tide table.\n")
    assert "unread messages" not in text


def test_linked_skills_and_a_linked_daily_note_are_each_listed_never_reported_migrated(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: evil\ndescription: x\n---\nPRIVATE\n")
    skills = root / "workspace" / "skills"
    (skills / "evil").mkdir()
    (skills / "evil" / "SKILL.md").symlink_to(secret)  # the skill's only file is a link
    (skills / "etc").symlink_to(tmp_path)  # a linked skill folder
    (root / "workspace" / "memory" / "202611" / "20261106.md").symlink_to(secret)
    out = migrate(isolated_home, "--from", str(root))
    assert "not migrated: evil (its SKILL.md could not be read (listed above))" in out
    assert "migrated: evil" not in out.replace("not migrated: evil", "")
    assert "not migrated: etc (a symbolic link; not followed)" in out
    assert "not migrated: 20261106.md (a symbolic link (at some level of its path)" in out
    assert not (isolated_home / "workspace" / "skills" / "evil").exists()
    assert "migrated: tides" in out  # the rest still comes


def test_a_linked_memory_folder_is_not_followed_and_the_rest_still_comes(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    private = tmp_path / "root-only"
    private.mkdir()
    (private / "MEMORY.md").write_text("# Memory\n\n- The vault code is 0000.\n")
    (private / "202611").mkdir()
    (private / "202611" / "20261105.md").write_text("# 2026-11-05\n\nSecret note.\n")
    memory = root / "workspace" / "memory"
    memory.rename(tmp_path / "old-memory")
    memory.symlink_to(private)
    out = migrate(isolated_home, "--from", str(root))
    assert "not migrated: MEMORY.md (a symbolic link (at some level of its path)" in out
    assert "not migrated: 20261105.md (a symbolic link (at some level of its path)" in out
    assert "migrated: cli:default (4 messages)" in out  # the rest still comes
    listed = run_cli("memory", "list", "--json", home=isolated_home)
    assert "vault code" not in listed.stdout and "Secret note" not in listed.stdout


def test_deep_json_and_a_huge_skill_file_are_listed_and_the_run_goes_on(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    ws = root / "workspace"
    deep = "[" * 5000 + "]" * 5000
    (ws / "sessions" / "deep.json").write_text('{"key": "cli:deep", "messages": ' + deep + "}")
    (ws / "sessions" / "deep2.json").write_text('{"key": "cli:deep2", "messages": [' + "[" * 80 + "]" * 80 + "]}")
    with open(ws / "skills" / "tides" / "model.bin", "wb") as big:
        big.truncate(150_000_000)  # sparse: 150 MB without writing them
    out = migrate(isolated_home, "--from", str(root))
    assert "not migrated: deep.json (nested deeper than 64 levels; not read)" in out
    assert "not migrated: deep2.json (nested deeper than 64 levels; not read)" in out
    assert "not migrated: tides/model.bin (larger than 5000000 bytes; not read)" in out
    skill = isolated_home / "workspace" / "skills" / "tides"
    assert (skill / "SKILL.md").is_file() and not (skill / "model.bin").exists()
    assert "migrated: Morning tides" in out  # what comes after the sessions still came


def test_deeply_nested_config_is_listed_not_a_traceback(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    (root / "config.json").write_text('{"agents": ' + "{\"a\": " * 3000 + "1" + "}" * 3000 + "}")
    result = run_cli("migrate", "--from", str(root), home=isolated_home, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "nested deeper than 64 levels" in result.stdout and "Traceback" not in result.stderr
    assert "migrated: cli:default (4 messages)" in result.stdout


# Deeper than the limit (the key is left out), and deeper than the JSON decoder goes (its section is).
@pytest.mark.parametrize("levels, left_out", [(100, "devices.monitor.x"), (5000, "devices")])
def test_one_over_nested_config_key_is_left_out_and_the_rest_is_carried(isolated_home, tmp_path, levels, left_out):
    root = build_go_home(tmp_path / "ana")
    _edit_config(root, lambda config: config.update(devices="DEEP"))
    text = (root / "config.json").read_text()
    deep = '{"x": ' * levels + '"a \\"}]{[ b"' + "}" * levels  # brackets in a string do not count
    (root / "config.json").write_text(text.replace('"DEEP"', '{"enabled": false, "monitor": ' + deep + "}"))
    out = migrate(isolated_home, "--from", str(root))
    assert f"{left_out}: nested deeper than 64 levels: left out, the rest of config.json was read" in out
    config = load_config()
    assert config.providers.openrouter.api_key == OPENROUTER_KEY
    assert config.channels.telegram.token == TELEGRAM_TOKEN


def test_an_auth_json_is_named_in_the_report_and_not_read(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    (root / "auth.json").write_text(json.dumps({"credentials": {"openai": {
        "access_token": "oauth-secret", "auth_method": "oauth", "provider": "openai"}}}))
    out = migrate(isolated_home, "--dry-run", "--from", str(root))
    assert "auth.json (what `auth login` kept: OAuth or a pasted session token) is not read" in out
    assert "oauth-secret" not in out


def test_pair_list_shows_the_migrated_allow_from_ids(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")  # telegram allow_from [123456789, "@alice"]
    _edit_config(root, lambda config: config["channels"]["slack"].update(allow_from=["U01ABCDEF"]))
    migrate(isolated_home, "--from", str(root))
    listed = run_cli("pair", "list", home=isolated_home).stdout
    assert "slack:U01ABCDEF  as the owner from any workspace unless a person claims it" in listed
    assert "With access:" in listed
    assert "telegram:123456789  as the owner unless a person claims it (channels.telegram.allow_from)" in listed
    assert "telegram:@alice  as the owner" in listed


def _snapshot(folder):
    # memories.index is the file store's read cache, which any reading command (memory list) writes.
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and "memories.index" not in p.parts}


def test_a_dry_run_says_what_the_real_run_keeps_and_writes_nothing(isolated_home, tmp_path):
    from picoora.messages import Message
    from picoora.store import open_store

    root = build_go_home(tmp_path / "ana")
    migrate(isolated_home, "--from", str(root))
    store = open_store(load_config())
    try:  # picoora's own conversation under a key the Go home also has, after the first migration
        store.sessions.reset("telegram:123456789")
        store.sessions.append("telegram:123456789", [Message("user", "mine"), Message("assistant", "ok")])
    finally:
        store.close()
    (root / "workspace" / "sessions" / "telegram_123456789.json").write_text(json.dumps({
        "key": "telegram:123456789", "messages": [{"role": "user", "content": "changed in Go"}]}))
    before = _snapshot(isolated_home)
    dry = migrate(isolated_home, "--dry-run", "--from", str(root))
    assert _snapshot(isolated_home) == before
    real = migrate(isolated_home, "--from", str(root))
    for line in ("kept: telegram:123456789 (picoora already has this session (2 messages)",
                 "unchanged: cli:default (already migrated)", "unchanged: 2026-11-01 (already migrated)",
                 "unchanged: MEMORY.md (3 memories already there)",
                 "unchanged: Morning tides (a1b2c3d4e5f60718) (already migrated)"):
        assert line in dry and line in real, line
    assert "would migrate: telegram:123456789" not in dry and "would migrate: 2026-11-01" not in dry


def test_a_changed_memory_md_fact_supersedes_the_old_one(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    memory = root / "workspace" / "memory" / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n- The gate code is 4421.\n")
    migrate(isolated_home, "--from", str(root))
    memory.write_text(memory.read_text().replace("4421", "5532"))
    out = migrate(isolated_home, "--from", str(root))
    assert "migrated: MEMORY.md (1 memories, embedded as they were stored; 1 earlier ones superseded)" in out
    listed = json.loads(run_cli("memory", "list", "--all", "--json", home=isolated_home).stdout)
    by_text = {m["content"]: m for m in listed}
    assert by_text["The gate code is 4421."]["status"] == f"superseded by {by_text['The gate code is 5532.']['id']}"
    found = run_cli("memory", "search", "gate code", "--json", home=isolated_home).stdout
    assert "5532" in found and "4421" not in found
    again = migrate(isolated_home, "--from", str(root))
    assert "unchanged: MEMORY.md (4 memories already there)" in again


def test_an_oracle_host_that_does_not_resolve_leaves_a_config_every_command_can_use(isolated_home, tmp_path):
    # Go's docker-compose names the database "oracle-db"; here ".invalid", which never resolves (RFC 2606).
    root = build_go_home(tmp_path / "ana")
    _edit_config(root, lambda config: config["oracle"].update(enabled=True, host="oracle-db.invalid",
                                                               connect_timeout_seconds=2))
    dry = run_cli("migrate", "--dry-run", "--from", str(root), home=isolated_home, timeout=120)
    result = run_cli("migrate", "--from", str(root), home=isolated_home, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Oracle (oracle-db.invalid:1521/FREEPDB1) did not answer, so the sessions, notes, memories and jobs " \
           "went to file storage" in result.stdout
    assert "Cannot reach Oracle at oracle-db.invalid" in result.stderr
    assert "The dry run did not connect to Oracle (oracle-db.invalid:1521/FREEPDB1)" in dry.stdout
    assert load_config().oracle.enabled
    listed = run_cli("memory", "list", "--json", home=isolated_home)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert "Ana prefers metric units." in {m["content"] for m in json.loads(listed.stdout)}


GO_MEMORY_TEMPLATE = """# Long-term Memory

This file stores important information that should persist across sessions.

## User Information

- Marta owns a boat called Ariadne.

## Preferences

(User preferences learned over time)

## Important Notes

(Things to remember)

## Configuration

- Model preferences
- Channel settings
- Skills enabled
"""


def test_only_what_the_user_wrote_in_go_s_memory_template_becomes_a_memory(isolated_home, tmp_path):
    root = build_go_home(tmp_path / "ana")
    (root / "workspace" / "memory" / "MEMORY.md").write_text(GO_MEMORY_TEMPLATE)
    out = migrate(isolated_home, "--from", str(root))
    assert "6 lines of the Go version's own template (its placeholders and examples) left behind" in out
    listed = run_cli("memory", "list", "--json", home=isolated_home)
    assert [m["content"] for m in json.loads(listed.stdout)] == ["Marta owns a boat called Ariadne."]
