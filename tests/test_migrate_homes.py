"""``picoora migrate`` round two on Go homes built from the Go formats (tests/go_home.py): Discord and Slack
come over, ``--from`` reads the home it is given (its ``~`` is that home's user folder, not this HOME)."""

from __future__ import annotations

import json

from picoora.config import load_config
from tests.cli_support import run_cli
from tests.go_home import build_go_home


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
