"""The Go ``config.json`` turned into picoora's: every leaf key is either carried (to the picoora key named)
or dropped with the reason, so the report can list each key that has no equivalent.

Pure functions over dicts: nothing is read or written here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from picoora.channel_registry import Channels as ChannelsModel
from picoora.migrate.go_provider import go_provider
from picoora.providers import ALIASES, PRESETS, provider_names

Key = tuple[str, ...]
Take = Callable[[Key], Any]  # reads a Go key and marks it handled

# Go key prefix -> why picoora has no equivalent (the longest matching prefix wins).
NO_EQUIVALENT: dict[Key, str] = {
    ("agents", "defaults", "workspace"): "picoora keeps its own workspace; the Go workspace's files are copied into it",
    ("agents", "defaults", "routing"): "model routing was never wired in the Go version",
    ("gateway", "host"): "picoora listens on 127.0.0.1 unless told otherwise: set gateway.host (with gateway.token) "
                         "to serve the network",
    ("channels", "telegram", "proxy"): "picoora's Telegram channel has no proxy setting (HTTPS_PROXY applies)",
    ("channels", "web"): "picoora's gateway always serves the web chat, at gateway.host and gateway.port",
    ("devices",): "picoora has no USB device notifications",
    ("tools", "web", "brave", "max_results"): "web_search takes the number of results per call",
    ("tools", "web", "duckduckgo", "max_results"): "web_search takes the number of results per call",
    ("tools", "web", "perplexity"): "picoora has no Perplexity search (brave, tavily, searxng or duckduckgo)",
    ("tools", "cron", "exec_timeout_minutes"): "picoora's jobs are agent turns or reminders, limited by "
                                               "agents.defaults.turn_timeout_seconds, not shell commands",
    ("oracle", "pool_max_idle"): "picoora's pool has pool_min and pool_max only",
    ("oracle", "poolMaxIdle"): "picoora's pool has pool_min and pool_max only",
}
for _embedding in ("embedding_provider", "embedding_api_base", "embedding_api_key", "embedding_model"):
    NO_EQUIVALENT[("oracle", _embedding)] = ("picoora embeds in the database with oracle.onnx_model (or locally): "
                                             "no embedding API")
# picoora's chat channels, from its config model ("web" there is accepted for old configs, not a channel).
CHANNELS = tuple(name for name in ChannelsModel.model_fields if name != "web")
_HAS = ", ".join(CHANNELS)
for _channel in ("whatsapp", "feishu", "maixcam", "qq", "dingtalk", "line", "onebot"):
    NO_EQUIVALENT[("channels", _channel)] = f"picoora has no {_channel} channel (it has {_HAS} and the web chat)"
CHANNEL_RENAMES = {"bot_token": "token"}  # Slack's bot token is picoora's channels.slack.token
for _field in ("proxy", "auth_method", "connect_mode"):
    NO_EQUIVALENT[("providers", "*", _field)] = (f"providers.*.{_field}: picoora uses API keys only, without a proxy "
                                                 "setting or OAuth")
for _go_only in ("nvidia", "moonshot", "github_copilot"):
    NO_EQUIVALENT[("providers", _go_only)] = (f"no {_go_only} preset: use provider openai with its api_base "
                                              "and api_key")

# The Go scripts wrote these camelCase oracle keys; the Go code ignored them, picoora takes what they meant.
CAMEL_ORACLE = {"walletPath": "wallet_path", "poolMaxOpen": "pool_max_open", "poolMaxIdle": "pool_max_idle",
                "onnxModel": "onnx_model", "agentId": "agent_id"}
SAME_ORACLE = ("enabled", "mode", "host", "port", "service", "user", "password", "dsn", "wallet_path",
               "onnx_model", "agent_id")
MODEL: Key = ("agents", "defaults", "model")
SAME_DEFAULTS = ("restrict_to_workspace", "model", "temperature", "max_tool_iterations",
                 "summarize_message_threshold", "summarize_token_percent")


@dataclass
class Conversion:
    tree: dict[str, Any] = field(default_factory=dict)  # picoora config keys (not yet validated)
    carried: list[tuple[str, str]] = field(default_factory=list)  # (Go key, picoora key)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (Go key, why it has no equivalent)
    notes: list[str] = field(default_factory=list)  # a carried key whose meaning changed

    def carry(self, go_key: Key, ours: Key, value: Any) -> None:
        node = self.tree
        for part in ours[:-1]:
            node = node.setdefault(part, {})
        node[ours[-1]] = value
        self.carried.append((dotted(go_key), dotted(ours)))

    def drop(self, go_key: Key, why: str) -> None:
        self.dropped.append((dotted(go_key), why))


def convert(go: dict[str, Any]) -> Conversion:
    out = Conversion()
    handled: set[Key] = set()

    def take(key: Key) -> Any:
        handled.add(key)
        return get_key(go, key)

    _agents(go, out, take)
    _providers(go, out, take)
    _channels(go, out, take)
    _rest(go, out, take)
    for key, _value in leaves(go):
        if key not in handled:
            shown, why = _why(key)
            if (dotted(shown), why) not in out.dropped:  # a whole section is listed once (channels.feishu)
                out.drop(shown, why)
    return out


def _agents(go: dict[str, Any], out: Conversion, take: Take) -> None:
    for name in SAME_DEFAULTS:
        value = take(("agents", "defaults", name))
        if value is not None:
            out.carry(("agents", "defaults", name), ("agents", "defaults", name), value)
    provider = take(("agents", "defaults", "provider"))
    resolved = go_provider(go)
    if resolved is not None and resolved.why:  # Go did not use the provider named (or none was)
        name = ALIASES.get(resolved.section, resolved.section)
        sent = f"agents.defaults.provider: the Go version sent {get_key(go, MODEL)!r} to {name} ({resolved.why})"
        if name in provider_names():
            out.carry(("agents", "defaults", "provider"), ("agents", "defaults", "provider"), name)
            out.notes.append(f"{sent}, so picoora's provider is {name}")
        else:
            out.drop(("agents", "defaults", "provider"), f"{sent}; picoora has no {name} preset and uses its "
                                                         "default (ollama)")
    elif isinstance(provider, str) and provider:
        name = ALIASES.get(provider.lower(), provider.lower())
        if name in provider_names():
            out.carry(("agents", "defaults", "provider"), ("agents", "defaults", "provider"), name)
        else:
            out.drop(("agents", "defaults", "provider"), f"{provider!r} is not a provider picoora has; "
                                                         "it uses its default (ollama)")
    elif resolved is None and get_key(go, MODEL):
        out.notes.append("agents.defaults.provider was empty and no provider had a key for the model (the Go "
                         "version refused to start): picoora uses its default (ollama)")
    window = take(("agents", "defaults", "max_tokens"))
    if isinstance(window, int) and window >= 1024:
        # Go used max_tokens only as the context size; picoora's max_tokens is the answer's length.
        out.carry(("agents", "defaults", "max_tokens"), ("agents", "defaults", "context_window"), window)
        out.notes.append("agents.defaults.max_tokens was the context size in the Go version: it is now "
                         "agents.defaults.context_window (max_tokens caps one answer)")


def _providers(go: dict[str, Any], out: Conversion, take: Take) -> None:
    providers = go.get("providers")
    if not isinstance(providers, dict):
        return
    for name, section in providers.items():
        ours = ALIASES.get(name, name)
        if ours not in provider_names() or not isinstance(section, dict):
            continue
        for part in ("api_key", "api_base"):
            value = take(("providers", name, part))
            if part == "api_base" and not value and ours in PRESETS and section.get("api_key"):
                value = PRESETS[ours].api_base  # written out: the key's host is plain to see in the file
            if isinstance(value, str) and value:
                out.carry(("providers", name, part), ("providers", ours, part), value)
        chosen = get_key(go, ("agents", "defaults", "provider"))
        if ours == "openai" == chosen and ":9999" in str(section.get("api_base") or ""):
            out.notes.append("providers.openai points at the Go version's OCI GenAI proxy (port 9999): it works while "
                             "that proxy runs; `provider: oci` reaches OCI Generative AI directly with an API key")


def _channels(go: dict[str, Any], out: Conversion, take: Take) -> None:
    """Every chat channel picoora has takes the Go section of the same name, key by key (CHANNELS comes from
    picoora's config model, so a channel added there is carried); the others are listed by ``_why``."""
    channels = go.get("channels")
    for name, section in (channels.items() if isinstance(channels, dict) else ()):
        if name not in CHANNELS or not isinstance(section, dict):
            continue
        ours = ChannelsModel.model_fields[name].annotation
        fields = set(ours.model_fields) - {"api_base"} if ours is not None else set()
        for go_field in map(str, section):
            field_name = CHANNEL_RENAMES.get(go_field) or go_field
            if field_name not in fields:
                continue
            value = take(("channels", name, go_field))
            if field_name == "allow_from":
                value = _ids(value)
                if section.get("enabled") and not value:
                    out.notes.append(f"channels.{name}.allow_from is empty: the Go version let everyone in, "
                                     "picoora lets nobody in until you add ids or approve people with `picoora pair`")
            elif field_name == "enabled":
                value = bool(value)
            elif not value:
                continue  # an empty token is picoora's default already
            out.carry(("channels", name, go_field), ("channels", name, field_name), value)
    web_token = take(("channels", "web", "token"))
    if web_token:
        out.carry(("channels", "web", "token"), ("gateway", "token"), web_token)


def _ids(value: Any) -> list[str]:
    # Go wrote numeric ids as numbers; picoora's list holds text ("123456", "@alice").
    if not isinstance(value, list):
        return []
    return [f"{v:.0f}" if isinstance(v, float) else str(v) for v in value]


def _rest(go: dict[str, Any], out: Conversion, take: Take) -> None:
    port = take(("gateway", "port"))
    if port is not None:
        out.carry(("gateway", "port"), ("gateway", "port"), port)
    heartbeat_on, minutes = take(("heartbeat", "enabled")), take(("heartbeat", "interval"))
    if heartbeat_on is not None:
        out.carry(("heartbeat", "enabled"), ("heartbeat", "enabled"), bool(heartbeat_on))
    if isinstance(minutes, int):
        # Go: 0 meant 30 and 1-4 were raised to 5; picoora refuses 1-4 and reads 0 as off.
        out.carry(("heartbeat", "interval"), ("heartbeat", "interval"), 30 if minutes <= 0 else max(minutes, 5))
    brave_on, brave_key = take(("tools", "web", "brave", "enabled")), take(("tools", "web", "brave", "api_key"))
    if brave_on and brave_key:
        out.carry(("tools", "web", "brave", "enabled"), ("tools", "web_search", "provider"), "brave")
        out.carry(("tools", "web", "brave", "api_key"), ("tools", "web_search", "api_key"), brave_key)
    elif brave_on is not None or brave_key is not None:
        out.drop(("tools", "web", "brave"), "Brave search was off or had no key; picoora keeps DuckDuckGo")
    duck = take(("tools", "web", "duckduckgo", "enabled"))
    if duck is not None:
        out.carry(("tools", "web", "duckduckgo", "enabled"), ("tools", "web_search", "duckduckgo_fallback"), bool(duck))
    _oracle(go, out, take)


def _oracle(go: dict[str, Any], out: Conversion, take: Take) -> None:
    section = go.get("oracle")
    if not isinstance(section, dict):
        return
    for camel, snake in CAMEL_ORACLE.items():
        if section.get(camel) not in (None, "") and section.get(snake) in (None, ""):
            section = {**section, snake: section[camel]}
    for camel, snake in CAMEL_ORACLE.items():
        if snake != "pool_max_idle":  # that one has no equivalent and is listed as such
            take(("oracle", camel))
    for name in SAME_ORACLE:
        take(("oracle", name))
        value = section.get(name)
        if value is not None and value != "":
            out.carry(("oracle", name), ("oracle", name), value)
    pool = take(("oracle", "pool_max_open")) or section.get("pool_max_open")
    if isinstance(pool, int) and pool >= 1:
        out.carry(("oracle", "pool_max_open"), ("oracle", "pool_max"), pool)
    if section.get("mode") == "adb" and section.get("wallet_path"):
        out.notes.append("oracle.wallet_path: picoora also needs oracle.wallet_password for an encrypted wallet")


def _why(key: Key) -> tuple[Key, str]:
    """(the key or the section to list, why it has no equivalent): the longest NO_EQUIVALENT prefix wins."""
    for length in range(len(key), 0, -1):
        if key[:length] in NO_EQUIVALENT:
            return (key if length > 2 else key[:length]), NO_EQUIVALENT[key[:length]]
        wildcard = (*key[:1], "*", *key[2:length])
        if length > 2 and wildcard in NO_EQUIVALENT:
            return key, NO_EQUIVALENT[wildcard]
    return key, "not a key the Go version reads either (it ignored it)"


def get_key(tree: Any, key: Key) -> Any:
    for part in key:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(part)
    return tree


def leaves(tree: dict[str, Any], prefix: Key = ()) -> list[tuple[Key, Any]]:
    found: list[tuple[Key, Any]] = []
    for name, value in tree.items():
        if isinstance(value, dict):
            found += leaves(value, (*prefix, str(name)))  # an empty section ({}) holds nothing to carry
        else:
            found.append(((*prefix, str(name)), value))
    return found


def dotted(key: Key) -> str:
    return ".".join(key)
