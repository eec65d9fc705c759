"""No silent config: a chat channel that is enabled but does not exist is a config error naming the ones
that do, whether it was set in the file or by a PICO_ variable."""

from __future__ import annotations

import json

import pytest

from picoora.channel_registry import CHANNELS
from picoora.config import ConfigError, load_config


def test_every_built_channel_has_a_config_section():
    from picoora.channel_registry import Channels

    assert set(CHANNELS) <= set(Channels.model_fields)


def test_an_enabled_channel_that_does_not_exist_is_a_config_error_naming_those_that_do(isolated_home):
    path = isolated_home / "config.json"
    token = "123456:a-telegram-token-that-must-not-show"
    path.write_text(json.dumps({"channels": {"telegram": {"token": token}, "web": {"enabled": True}}}))
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(path) in message and "channels.web is enabled" in message
    assert "telegram, discord, slack" in message
    assert "123456" not in message  # the section is not echoed, so no part of a token in it is


def test_the_same_from_the_environment(isolated_home, monkeypatch):
    monkeypatch.setenv("PICO_CHANNELS_WEB_ENABLED", "true")
    with pytest.raises(ConfigError, match="channels.web is enabled"):
        load_config()


@pytest.mark.parametrize("name", ["telegram", "discord", "slack"])
def test_built_channels_may_be_enabled(isolated_home, name):
    section = {"enabled": True, "token": "t0ken", **({"app_token": "xapp-t0ken"} if name == "slack" else {})}
    (isolated_home / "config.json").write_text(json.dumps({"channels": {name: section}}))
    assert getattr(load_config().channels, name).enabled


@pytest.mark.parametrize("section, missing", [
    ({"telegram": {"enabled": True}}, "channels.telegram is enabled but its token is empty"),
    ({"discord": {"enabled": True, "token": ""}}, "channels.discord is enabled but its token is empty"),
    ({"slack": {"enabled": True, "token": "fake-bot-token"}}, "channels.slack is enabled but its app_token is empty"),
])
def test_an_enabled_channel_without_its_token_is_a_config_error_not_a_traceback_at_start(isolated_home, section,
                                                                                          missing):
    (isolated_home / "config.json").write_text(json.dumps({"channels": section}))
    with pytest.raises(ConfigError, match=missing):
        load_config()
