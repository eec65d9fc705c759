"""The Go config conversion on its own (a pure function): what each Go key becomes, or why it has none."""

from __future__ import annotations

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
