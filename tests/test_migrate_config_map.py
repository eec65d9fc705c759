"""The Go config conversion on its own (a pure function): what each Go key becomes, or why it has none."""

from __future__ import annotations

import pytest

from picoora.config import Config
from picoora.migrate.config_map import convert
from tests.go_home import go_default_config


def test_every_leaf_of_the_go_default_config_is_carried_or_listed():
    go = go_default_config()
    result = convert(go)
    Config.model_validate(result.tree)  # what is carried is valid as it is
    listed = {key for key, _ in result.dropped}
    carried = {key for key, _ in result.carried}

    def leaves(tree, prefix=""):
        for name, value in tree.items():
            if isinstance(value, dict):
                yield from leaves(value, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}"

    for leaf in leaves(go):
        accounted = leaf in carried or any(leaf == k or leaf.startswith(k + ".") for k in listed)
        taken_empty = leaf.endswith(("api_key", "api_base", "token", "password", "dsn", "wallet_path", "allow_from"))
        assert accounted or taken_empty, leaf


def test_keys_that_moved_and_keys_that_mean_something_else_now():
    go = go_default_config()
    go["agents"]["defaults"]["provider"] = "claude"
    go["channels"]["web"]["token"] = "web-secret"
    go["tools"]["web"]["brave"] = {"enabled": True, "api_key": "brave-key", "max_results": 5}
    go["oracle"].update(poolMaxOpen=6, onnxModel="MY_MODEL", pool_max_open=10, onnx_model="")
    result = convert(go)
    tree = result.tree
    assert tree["agents"]["defaults"]["provider"] == "anthropic"
    assert tree["agents"]["defaults"]["context_window"] == 8192
    assert tree["gateway"]["token"] == "web-secret"
    assert tree["tools"]["web_search"] == {"provider": "brave", "api_key": "brave-key", "duckduckgo_fallback": True}
    assert tree["oracle"]["pool_max"] == 10 and tree["oracle"]["onnx_model"] == "MY_MODEL"  # camelCase fills gaps
    assert "gateway" in tree and "host" not in tree["gateway"]  # 0.0.0.0 is not carried
    assert not any("OCI GenAI proxy" in note for note in result.notes)  # the proxy note is for provider openai only


def test_a_provider_picoora_lacks_is_listed_not_guessed():
    go = {"agents": {"defaults": {"provider": "github_copilot"}}, "providers": {"moonshot": {"api_key": "k"}}}
    result = convert(go)
    reasons = dict(result.dropped)
    assert "not a provider picoora has" in reasons["agents.defaults.provider"]
    assert "no moonshot preset" in reasons["providers.moonshot"]
    assert "provider" not in result.tree.get("agents", {}).get("defaults", {})


def test_discord_and_slack_are_carried_with_their_tokens_and_people():
    go = go_default_config()
    go["channels"]["discord"] = {"enabled": True, "token": "discord-token", "allow_from": [112233445566778899]}
    go["channels"]["slack"] = {"enabled": True, "bot_token": "bot-x", "app_token": "app-x", "allow_from": ["U01"]}
    result = convert(go)
    config = Config.model_validate(result.tree)
    assert (config.channels.discord.enabled, config.channels.discord.token) == (True, "discord-token")
    assert config.channels.discord.allow_from == ["112233445566778899"]
    slack = config.channels.slack
    assert (slack.enabled, slack.token, slack.app_token, slack.allow_from) == (True, "bot-x", "app-x", ["U01"])
    assert not any(key.startswith(("channels.discord", "channels.slack")) for key, _ in result.dropped)
    assert dict(result.dropped)["channels.feishu"].startswith("picoora has no feishu channel (it has telegram, discord")


def test_every_channel_picoora_has_takes_the_go_section_of_that_name():
    """A channel added to picoora's config is carried from the Go config without touching the converter."""
    from picoora.channel_registry import Channels

    for name in (n for n in Channels.model_fields if n != "web"):
        result = convert({"channels": {name: {"enabled": False, "allow_from": ["42"]}}})
        assert result.tree["channels"][name]["allow_from"] == ["42"], name


def test_a_preset_is_written_with_its_own_base_url():
    from picoora.providers import PRESETS

    go = go_default_config()
    go["providers"]["groq"] = {"api_key": "gsk-key", "api_base": ""}
    go["providers"]["deepseek"] = {"api_key": "ds-key"}
    tree = convert(go).tree
    assert tree["providers"]["groq"] == {"api_key": "gsk-key", "api_base": PRESETS["groq"].api_base}
    assert tree["providers"]["deepseek"]["api_base"] == PRESETS["deepseek"].api_base


@pytest.mark.parametrize("provider, model, keys, expected, why", [
    ("", "anthropic/claude-opus-4-5", {"openrouter": "or-x"}, "openrouter", "the model's prefix (anthropic/)"),
    ("groq", "llama-3.3-70b", {"groq": "", "openrouter": "or-x"}, "openrouter", "Go fell back to OpenRouter"),
    ("", "gpt-4o", {"openai": "sk-oa"}, "openai", "the model's name chose openai"),
])
def test_the_provider_is_the_one_go_really_sent_the_model_to(provider, model, keys, expected, why):
    go = {"agents": {"defaults": {"provider": provider, "model": model}},
          "providers": {name: {"api_key": key} for name, key in keys.items()}}
    result = convert(go)
    assert result.tree["agents"]["defaults"]["provider"] == expected
    [note] = [n for n in result.notes if n.startswith("agents.defaults.provider:")]
    assert f"sent {model!r} to {expected}" in note and why in note


def test_a_provider_go_used_as_named_is_carried_without_a_note():
    go = {"agents": {"defaults": {"provider": "groq", "model": "llama-3.3-70b"}},
          "providers": {"groq": {"api_key": "groq-x"}, "openrouter": {"api_key": "or-x"}}}
    result = convert(go)
    assert result.tree["agents"]["defaults"]["provider"] == "groq"
    assert not [n for n in result.notes if n.startswith("agents.defaults.provider")]


def test_a_go_config_go_would_refuse_says_picoora_uses_its_default():
    result = convert({"agents": {"defaults": {"provider": "", "model": "some-model"}}})
    assert "provider" not in result.tree["agents"]["defaults"]
    assert any("no provider had a key for the model" in note for note in result.notes)
