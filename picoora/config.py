"""The configuration model (snake_case, the Go version's shape), paths, loading and saving.

Layout on disk: ``$PICOORA_HOME`` (default ``~/.picoora``) holds ``config.json`` (0600), the
default workspace ``workspace/`` and ``cache/`` (derived data that may be deleted, such as which model
file has been verified).

Loading order: model defaults < the file (deep-merged over the defaults) < ``PICO_*`` environment
variables (applied whether or not the file exists). An environment variable names a field by its
path with ``_`` between the parts, upper case: ``PICO_AGENTS_DEFAULTS_MODEL`` -> agents.defaults.model,
``PICO_PROVIDERS_OPENAI_API_KEY`` -> providers.openai.api_key. List fields take a JSON array or a
comma-separated list. ``PICO_TEST_*`` variables belong to the test-suite; other ``PICO_*`` names that
match no field are ignored, listed by :func:`unknown_env_overrides` and explained, with the closest
valid name, by :func:`env_override_warnings` (the CLI prints those). :func:`env_override` says which
variable set a value, so a report can tell a value from the environment from one from the file.

A provider's key may also come from its own variable (``OPENROUTER_API_KEY``, ``ANTHROPIC_API_KEY``, ...;
see :mod:`picoora.providers`) when its section names no key and still points at its own endpoint.

``${VAR}`` inside a string value (from the file or the environment) is replaced by the variable's
value, so secrets can stay out of the file; an unset variable is an error. Only the braced form is
recognised (a ``$`` anywhere else is literal) and ``$${`` stands for a literal ``${``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from picoora.channel_registry import Channels
from picoora.providers import ALIASES, PRESETS, key_env, own_endpoint, provider_names
from picoora.secrets import SECRET_FIELDS, SECRET_MAPS, dsn_password, redact_tree, scrub

ENV_PREFIX = "PICO_"
GO_ENV_PREFIX = "PICOCLAW_"  # PicoOraClaw's (Go) variables: read, with a notice to rename them
# Go variables whose setting has another name here (Go's max_tokens was the context size).
GO_ENV_RENAMES = {"agents_defaults_max_tokens": ("agents", "defaults", "context_window"),
                  "channels_slack_bot_token": ("channels", "slack", "token"),
                  "channels_web_token": ("gateway", "token")}
DEFAULT_OLLAMA_BASE = "http://localhost:11434"


class _Section(BaseModel):
    # Unknown keys are an error (typos must not be silently ignored, unlike the Go version).
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# Chat models known to take pictures (the 2026 line-ups of OpenAI and Anthropic, and the usual open ones
# served by OpenAI-compatible servers); o1-mini and o3-mini do not.
VISION_MODELS = ["gpt-4o*", "gpt-4.1*", "gpt-4-turbo*", "gpt-5*", "o1", "o1-2*", "o3", "o3-2*", "o3-pro*", "o4-mini*",
                 "claude-3-opus*", "claude-3-sonnet*", "claude-3-haiku*", "claude-3-5-sonnet*", "claude-3-7*",
                 "claude-*4*", "gemini-*", "*-vl*", "*vision*", "llava*", "pixtral*"]


class AgentDefaults(_Section):
    workspace: str = ""  # empty: $PICOORA_HOME/workspace; a relative path is taken from $PICOORA_HOME too
    restrict_to_workspace: bool = True
    provider: str = "ollama"  # ollama, openai, anthropic, or a preset of openai (picoora.providers)
    model: str = "qwen3:latest"
    max_tokens: int = Field(4096, ge=1)  # per answer; sent to the provider
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    context_window: int = Field(16384, ge=1024)  # tokens; drives compaction and Ollama's num_ctx
    max_tool_iterations: int = Field(20, ge=1)
    turn_timeout_seconds: float = Field(300.0, gt=0)  # wall-clock limit per turn
    max_turn_tokens: int = Field(0, ge=0)  # prompt + completion tokens a turn may spend; 0: no budget
    summarize_message_threshold: int = Field(40, ge=4)
    summarize_token_percent: int = Field(75, ge=10, le=95)
    keep_recent_messages: int = Field(8, ge=2)  # kept verbatim after compaction
    memory_context_tokens: int = Field(800, ge=0)  # budget for recalled memories in the prompt
    daily_note_days: int = Field(3, ge=0)
    timezone: str = ""  # IANA name (Europe/Lisbon) for schedules and dates; empty: the machine's
    # Models that take pictures, as shell-style patterns (matched without a router's "vendor/" prefix), for
    # the OpenAI-compatible and Anthropic providers; Ollama is asked instead (/api/show lists "vision").
    vision_models: list[str] = VISION_MODELS

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, name: str) -> str:
        name = ALIASES.get(name.lower(), name.lower())
        if name not in provider_names():
            raise ValueError(f"unknown provider {name!r}: use ollama, openai or anthropic, or a preset of the "
                             f"OpenAI-compatible one: {', '.join(PRESETS)}")
        return name

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        if name:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {name!r}: use an IANA name such as Europe/Lisbon") from None
        return name


class Agents(_Section):
    defaults: AgentDefaults = AgentDefaults()


class ProviderConfig(_Section):
    api_key: str = ""
    api_base: str = ""
    timeout_seconds: float = Field(120.0, gt=0)
    # Seconds for the first sign of an answer; a server that accepts and stays silent is reported then
    # (Ollama loading the model gets up to timeout_seconds).
    first_response_seconds: float = Field(30.0, gt=0)
    max_retries: int = Field(3, ge=0)


def _preset(name: str) -> ProviderConfig:
    return ProviderConfig(api_base=PRESETS[name].api_base)


class Providers(_Section):
    """One section per provider name; a preset's section starts at its endpoint (presets.PRESETS)."""

    ollama: ProviderConfig = ProviderConfig(api_base=DEFAULT_OLLAMA_BASE)
    openai: ProviderConfig = ProviderConfig()
    anthropic: ProviderConfig = ProviderConfig()
    openrouter: ProviderConfig = _preset("openrouter")
    groq: ProviderConfig = _preset("groq")
    deepseek: ProviderConfig = _preset("deepseek")
    gemini: ProviderConfig = _preset("gemini")
    zhipu: ProviderConfig = _preset("zhipu")
    oci: ProviderConfig = _preset("oci")
    vllm: ProviderConfig = _preset("vllm")
    llamacpp: ProviderConfig = _preset("llamacpp")
    lmstudio: ProviderConfig = _preset("lmstudio")

    @model_validator(mode="before")
    @classmethod
    def _empty_base_is_the_providers_own(cls, data: Any) -> Any:
        """An empty ``api_base`` (what the Go config holds for every provider) means the provider's own
        endpoint: left empty, a preset would reach the OpenAI client's default, and its key a foreign host."""
        if not isinstance(data, dict):
            return data
        own = {"ollama": DEFAULT_OLLAMA_BASE, **{name: preset.api_base for name, preset in PRESETS.items()}}
        return {name: {**section, "api_base": own[name]}
                if name in own and isinstance(section, dict) and not section.get("api_base") else section
                for name, section in data.items()}


class MemoryConfig(_Section):
    # "minilm": the bundled all-MiniLM-L6-v2 (ONNX, CPU, offline); "ollama": an Ollama embedding model;
    # "none": keyword recall only.
    embedder: Literal["minilm", "ollama", "none"] = "minilm"
    ollama_model: str = "all-minilm"
    min_similarity: float = Field(0.0, ge=-1.0, le=1.0)  # 0: use the embedder's calibrated floor
    dedup_similarity: float = Field(0.95, ge=0.5, le=1.0)
    # What people state about themselves is remembered after their turns (picoora/agent/auto_memory.py):
    # "rules" (cheap, measured precision 1.0 on a held-out set), "model" (the default model reads each
    # message: a model call per turn, not measured here) or "off".
    auto: Literal["rules", "model", "off"] = "rules"


class DocsConfig(_Section):
    """The knowledge base (``picoora docs``): how documents are cut into chunks, on both backends (on Oracle
    these are UTL_TO_CHUNKS's ``by``, ``max`` and ``overlap``), and the search's floor."""

    chunk_by: Literal["words", "sentences"] = "sentences"  # sentences: whole sentences packed up to chunk_size
    chunk_size: int = Field(80, ge=20, le=1000)  # words per chunk at most
    chunk_overlap: int = Field(15, ge=0, le=500)  # words repeated from the end of the previous chunk
    min_score: float = Field(0.0, ge=0.0, le=1.0)  # 0: the calibrated floor (picoora.store.doc_ranking)
    max_document_chars: int = Field(5_000_000, ge=1000)  # longer extracted text is refused, not cut

    @model_validator(mode="after")
    def _overlap_smaller(self) -> DocsConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size "
                             f"({self.chunk_size})")
        return self


class OracleConfig(_Section):
    enabled: bool = False
    mode: Literal["freepdb", "dsn", "adb"] = "freepdb"
    host: str = "localhost"
    port: int = 1521
    service: str = "FREEPDB1"
    user: str = "picoora"
    password: str = ""
    dsn: str = ""
    wallet_path: str = ""
    wallet_password: str = ""
    pool_min: int = Field(1, ge=0)
    pool_max: int = Field(4, ge=1)
    connect_timeout_seconds: float = Field(5.0, gt=0)
    onnx_model: str = "ALL_MINILM_L12_V2"
    agent_id: str = "default"
    # A fleet's node: when the database cannot be reached, keep retrying (503 meanwhile) instead of falling
    # back to files, which would split the data between machines. Off: files are the single machine's fallback.
    required: bool = False


class GatewayConfig(_Section):
    host: str = "127.0.0.1"
    port: int = Field(18790, ge=0, le=65535)  # 0: any free port (tests)
    token: str = ""  # required off loopback; on loopback an empty token gets a one-off token per run
    cors_origins: list[str] = []  # browser origins allowed to call the API; empty: no CORS at all
    max_body_bytes: int = Field(1_000_000, ge=1024)  # larger request bodies get 413
    max_message_chars: int = Field(32_000, ge=1)  # a longer chat message gets 413
    shutdown_seconds: float = Field(30.0, ge=0)  # on SIGTERM, how long in-flight turns may finish


# A person's name: it names their store (a folder on files, an agent_id on Oracle), so no "." or ".." or "/".
PERSON_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"


class TranscriptionConfig(_Section):
    """An OpenAI-compatible speech-to-text endpoint (``POST {base_url}/audio/transcriptions``): a local
    whisper server or a hosted one. Empty ``base_url``: voice notes are not transcribed."""

    base_url: str = ""  # e.g. http://localhost:8000/v1 (faster-whisper-server), https://api.openai.com/v1
    api_key: str = ""  # or PICO_TRANSCRIPTION_API_KEY; empty for a local server
    model: str = "whisper-1"
    language: str = ""  # ISO-639-1 hint ("en"); empty: the server detects it
    timeout_seconds: float = Field(120.0, gt=0)


class MediaConfig(_Section):
    """Pictures, voice notes and files sent on the chat channels: the largest taken and the types accepted
    (checked before downloading when the platform says the size, and again while downloading)."""

    max_image_mb: float = Field(20.0, gt=0)
    max_audio_mb: float = Field(25.0, gt=0)
    max_document_mb: float = Field(20.0, gt=0)
    image_types: list[str] = ["image/jpeg", "image/png", "image/webp", "image/gif"]
    audio_types: list[str] = ["audio/ogg", "audio/mpeg", "audio/mp4", "audio/x-m4a", "audio/wav", "audio/x-wav",
                              "audio/webm", "audio/flac", "audio/aac"]
    document_types: list[str] = [
        "application/pdf", "text/plain", "text/markdown", "text/csv", "application/json",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.oasis.opendocument.text", "application/zip", "image/jpeg", "image/png",
    ]


class UserConfig(_Section):
    """A person and the identities that are theirs ("telegram:123456", "telegram:@alice")."""

    name: str = Field(min_length=1, max_length=32, pattern=PERSON_NAME_PATTERN)
    owner: bool = False  # the owner's memories are the CLI's; everyone else has their own
    identities: list[str] = []


class HeartbeatConfig(_Section):
    enabled: bool = False
    interval: int = Field(30, ge=0)  # minutes; 0 disables, otherwise at least 5

    @field_validator("interval")
    @classmethod
    def _at_least_five(cls, minutes: int) -> int:
        if 0 < minutes < 5:
            raise ValueError("the heartbeat interval is 0 (off) or at least 5 minutes")
        return minutes


class CronConfig(_Section):
    enabled: bool = True
    missed_grace_minutes: int = Field(60, ge=0)  # a job missed while the gateway was down runs once if this recent


class ExecToolConfig(_Section):
    enabled: bool = True
    timeout_seconds: float = Field(60.0, gt=0)
    max_output_chars: int = Field(10000, ge=100)
    network: bool = False  # the sandbox gets the host's network only when this is on
    # Where no OS sandbox (bubblewrap) can run, exec is off unless this is on: commands then run
    # directly as the user, behind the text guard only.
    allow_unsandboxed: bool = False
    # Under a root gateway commands run as this unprivileged user (a name or a uid), never as root,
    # unless allow_root_commands is on (see picoora.tools.exec_user).
    run_as: str = Field("nobody", min_length=1)
    allow_root_commands: bool = False
    # Per call: processes at once, address space per process, size of one file, disk written in all.
    max_processes: int = Field(256, ge=8)
    max_memory_mb: int = Field(1024, ge=64)
    max_file_mb: int = Field(100, ge=1)
    max_disk_mb: int = Field(512, ge=1)


class WebFetchConfig(_Section):
    enabled: bool = True
    timeout_seconds: float = Field(30.0, gt=0)
    max_bytes: int = Field(2_000_000, ge=1000)  # decoded bytes, across every content-encoding layer
    max_chars: int = Field(50_000, ge=100)
    allow_hosts: list[str] = []  # hosts exempt from the private-address guard


class FilesToolConfig(_Section):
    max_read_chars: int = Field(40_000, ge=100)  # text one read_file call returns
    max_file_bytes: int = Field(20_000_000, ge=1000)  # larger files are refused by read_file/edit_file
    max_list_entries: int = Field(1000, ge=1)


class WebSearchConfig(_Section):
    """``web_search``: one provider by config, DuckDuckGo's HTML page as the keyless fallback."""

    enabled: bool = True
    provider: Literal["duckduckgo", "brave", "tavily", "searxng"] = "duckduckgo"
    api_key: str = ""  # Brave or Tavily
    url: str = ""  # the SearXNG instance; for the others, another endpoint than the public one
    duckduckgo_fallback: bool = True  # try the keyless DuckDuckGo page when the provider fails
    timeout_seconds: float = Field(15.0, gt=0)


class McpServerConfig(_Section):
    """One MCP server whose tools the model may call: a command (stdio) or a streamable HTTP ``url``."""

    enabled: bool = True
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}  # added to a minimal environment (PATH, HOME, ...): the parent's is not passed
    network: bool = False  # a stdio server runs in exec's sandbox: the host's network only when this is on
    url: str = ""
    headers: dict[str, str] = {}
    allow_tools: list[str] = []  # empty: every tool the server lists
    startup_timeout_seconds: float = Field(10.0, gt=0)
    timeout_seconds: float = Field(60.0, gt=0)  # per tool call
    max_output_chars: int = Field(10000, ge=100)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either command (a stdio server) or url (streamable HTTP), not both or neither")
        return self


class SkillsConfig(_Section):
    enabled: bool = True
    builtin: bool = True  # the skills that ship with picoora (a workspace or user skill of the same name wins)


class ApprovalsConfig(_Section):
    """Tool calls that wait for the owner's yes (buttons in the chat) when the turn came from a chat channel.
    The terminal, the HTTP API, jobs and the heartbeat are not asked (their ``channels`` are not listed)."""

    channels: list[str] = ["telegram", "discord", "slack"]
    tools: list[str] = ["exec", "write_file", "edit_file", "append_file", "cron", "message", "spawn"]
    timeout_seconds: float = Field(120.0, gt=0, le=3600)  # no answer by then: not run


class ToolsConfig(_Section):
    exec: ExecToolConfig = ExecToolConfig()
    web_fetch: WebFetchConfig = WebFetchConfig()
    web_search: WebSearchConfig = WebSearchConfig()
    mcp_servers: dict[str, McpServerConfig] = {}
    files: FilesToolConfig = FilesToolConfig()
    approvals: ApprovalsConfig = ApprovalsConfig()
    max_parallel_calls_per_turn: int = Field(4, ge=1)  # tool calls of one turn running at once
    max_parallel_calls: int = Field(16, ge=1)  # tool calls of the whole process running at once


class Config(_Section):
    agents: Agents = Agents()
    providers: Providers = Providers()
    memory: MemoryConfig = MemoryConfig()
    docs: DocsConfig = DocsConfig()
    oracle: OracleConfig = OracleConfig()
    gateway: GatewayConfig = GatewayConfig()
    channels: Channels = Channels()
    media: MediaConfig = MediaConfig()
    transcription: TranscriptionConfig = TranscriptionConfig()
    heartbeat: HeartbeatConfig = HeartbeatConfig()
    cron: CronConfig = CronConfig()
    users: list[UserConfig] = []
    tools: ToolsConfig = ToolsConfig()
    skills: SkillsConfig = SkillsConfig()


def picoora_home() -> Path:
    return Path(os.environ.get("PICOORA_HOME") or Path.home() / ".picoora").expanduser()


def default_config_path() -> Path:
    return picoora_home() / "config.json"


def workspace_path(config: Config) -> Path:
    """The workspace folder, absolute: a relative setting is under ``$PICOORA_HOME``, never under the current
    directory (where memories would seem to vanish when picoora runs from another folder)."""
    raw = config.agents.defaults.workspace
    path = Path(raw).expanduser() if raw else Path("workspace")
    return path if path.is_absolute() else picoora_home().absolute() / path


# ---------------------------------------------------------------------------------------------
# Loading: defaults < file < PICO_* environment, then ${VAR} expansion, then validation.

_TEST_PREFIX = "PICO_TEST_"  # the test-suite's own knobs (live DSNs, ...), never config
# "$${" is an escaped literal "${"; "${NAME}" is a reference; any other "$" is literal text.
_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

Key = tuple[str | int, ...]


class ConfigError(Exception):
    """A config file or PICO_* variable that cannot be used. ``str(err)`` is the whole message for people."""


def load_config(path: Path | None = None) -> Config:
    """The effective config: defaults < the file at ``path`` (default: :func:`default_config_path`) < env."""
    path = Path(path).expanduser() if path is not None else default_config_path()
    tree = _deep_merge(Config().model_dump(), _read_file(path))
    env_keys = _env_overrides(os.environ)[0]
    for key, name in env_keys.items():
        _set_in(tree, key, _env_value(name, os.environ[name], key))
    _keys_from_provider_variables(tree)

    def source(key: Key) -> str:
        for env_key, name in env_keys.items():
            if key[: len(env_key)] == env_key:
                return f"environment variable {name}"
        return str(path)

    unset: list[tuple[Key, str]] = []
    tree = _expand(tree, (), unset)
    secrets = _tree_secrets(tree)
    if unset:  # an unset reference is the file's text, not a secret: the message names it, unscrubbed
        for reference in {f"${{{var}}}" for _, var in unset}:
            secrets = [secret.replace(reference, "") for secret in secrets]
        raise _report(secrets, [(source(key), key, f"refers to ${{{var}}}, which is not set in the environment "
                                             f"(export {var}=... or write the value itself)")
                       for key, var in unset])
    try:
        return Config.model_validate(tree)
    except ValidationError as err:
        error = _report(secrets, [(source(e["loc"]), e["loc"], _problem(e)) for e in err.errors()])
        if _looks_like_go(e["loc"] for e in err.errors() if e["type"] == "extra_forbidden"):
            error = ConfigError(f"{error}\nThis is a PicoOraClaw (Go) config: `picoora migrate --from DIR` (DIR "
                                "holding it as config.json) converts every key and says what has no equivalent.")
        raise error from None


# Sections only the Go config has: a file holding one of them was copied from PicoOraClaw, not written here.
_GO_ONLY = {("devices",), ("tools", "web"), ("tools", "cron"), ("providers", "nvidia"), ("providers", "moonshot"),
            ("providers", "github_copilot"), *(("channels", name) for name in
                                               ("whatsapp", "feishu", "maixcam", "qq", "dingtalk", "line", "onebot"))}


def _looks_like_go(unknown_keys: Iterator[Key]) -> bool:
    return any(tuple(key[:length]) in _GO_ONLY for key in unknown_keys for length in (1, 2))


def _keys_from_provider_variables(tree: dict[str, Any]) -> None:
    """An empty ``providers.<name>.api_key`` takes the provider's own variable (OPENROUTER_API_KEY, ...),
    but only while the section still points at that provider's endpoint: a key is never sent to another host."""
    providers = tree.get("providers")
    if not isinstance(providers, dict):
        return
    for name, section in providers.items():
        variable = key_env(name)
        if not (variable and os.environ.get(variable) and isinstance(section, dict)) or section.get("api_key"):
            continue
        if own_endpoint(name, str(section.get("api_base") or "")):
            section["api_key"] = os.environ[variable]


def unknown_env_overrides() -> list[str]:
    """``PICO_*`` variables set now that match no config field (ignored by :func:`load_config`)."""
    return _env_overrides(os.environ)[1]


def env_override(config: Config, *key: str) -> str | None:
    """The ``PICO_*`` variable that gives ``config`` its value at ``key`` (``"agents", "defaults", "model"``),
    or None when the value is the file's or the built-in default. The variable must be set now, as
    :func:`load_config` applies them, and hold this very value, so a config built in code is never
    credited to a variable that happens to be set."""
    name = _env_overrides(os.environ)[0].get(key)
    if name is None:
        return None
    value: Any = config
    for part in key:
        value = getattr(value, part)
    model = _model_at(key[:-1])
    if model is None:
        return None
    from pydantic import TypeAdapter

    annotation = model.model_fields[key[-1]].annotation
    if annotation is None:
        return None

    try:
        raw = _expand(_env_value(name, os.environ[name], key), key, [])
        set_to = TypeAdapter(annotation).validate_python(raw)
    except (ConfigError, ValidationError):
        return None
    return name if set_to == value else None


def env_override_warnings() -> list[str]:
    """One line per ``PICO_*`` variable that matches no setting, naming the closest one that does."""
    import difflib

    valid = [ENV_PREFIX + "_".join(key).upper() for key in _leaf_keys(Config)]
    lines = []
    for name in unknown_env_overrides():
        close = difflib.get_close_matches(name, valid, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}?" if close else "names look like PICO_AGENTS_DEFAULTS_MODEL"
        lines.append(f"Warning: the environment variable {name} matches no setting and is ignored ({hint})")
    return lines


def _leaf_keys(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, field in model.model_fields.items():
        section = _section_type(field.annotation)
        if section is None:
            yield (*prefix, name)
        else:
            yield from _leaf_keys(section, (*prefix, name))


def _read_file(path: Path) -> dict[str, Any]:
    import json

    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: tolerate the BOM some editors add
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise ConfigError(f"Invalid configuration in {path}:\n  cannot read the file: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"Invalid configuration in {path}:\n  not valid JSON at line {err.lineno}, "
                          f"column {err.colno}: {err.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"Invalid configuration in {path}:\n  the file must hold one JSON object "
                          f'({{"agents": ...}}) (got {_shown(data)})')
    return data


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _set_in(tree: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    node = tree
    for part in key[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):  # the file gave a non-object here; validation reports that
            return
    node[key[-1]] = value


def _section_type(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _model_at(key: Key) -> type[BaseModel] | None:
    model: type[BaseModel] = Config
    for part in key:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        section = _section_type(field.annotation) if field else None
        if section is None:
            return None
        model = section
    return model


def _env_key(model: type[BaseModel], rest: str) -> tuple[str, ...] | None:
    """The field path spelled by ``rest`` (``oracle_wallet_password``). Field names hold underscores
    themselves, so try every field whose name starts ``rest``, longest first, and recurse."""
    for name in sorted(model.model_fields, key=len, reverse=True):
        section = _section_type(model.model_fields[name].annotation)
        if section is None:
            if rest == name:
                return (name,)
        elif rest.startswith(name + "_"):
            found = _env_key(section, rest[len(name) + 1:])
            if found is not None:
                return (name, *found)
    return None


def _env_overrides(environ: Mapping[str, str]) -> tuple[dict[tuple[str, ...], str], list[str]]:
    """({field path: variable name} for PICO_* variables naming a field, [the other PICO_* names]). The
    PicoOraClaw (Go) names (``PICOCLAW_AGENTS_DEFAULTS_MODEL``) count too, below a PICO_ one for the same field."""
    known: dict[tuple[str, ...], str] = {}
    unknown: list[str] = []
    for name in sorted(environ, key=lambda n: n.startswith(ENV_PREFIX)):  # PICO_ last: it wins
        if name.startswith(_TEST_PREFIX) or not name.startswith((ENV_PREFIX, GO_ENV_PREFIX)):
            continue
        rest = name.split("_", 1)[1].lower()
        key = GO_ENV_RENAMES.get(rest) if name.startswith(GO_ENV_PREFIX) else None
        key = key or _env_key(Config, rest)
        if key is None:
            unknown.append(name)
        else:
            known[key] = name
    return known, sorted(unknown)


def go_env_notices() -> list[str]:
    """One line per PicoOraClaw (Go) variable read, with the name it has in picoora."""
    return [f"Note: {name} (PicoOraClaw's name) is read as {ENV_PREFIX}{'_'.join(key).upper()}; rename it"
            for key, name in _env_overrides(os.environ)[0].items() if name.startswith(GO_ENV_PREFIX)]


def _env_value(name: str, raw: str, key: tuple[str, ...]) -> Any:
    """The variable's text, or a list for list fields (JSON array or comma-separated); pydantic coerces the rest."""
    model = _model_at(key[:-1])
    if model is None or get_origin(model.model_fields[key[-1]].annotation) is not list:
        return raw
    text = raw.strip()
    if not text.startswith("["):
        return [item.strip() for item in text.split(",") if item.strip()]
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"Invalid configuration in environment variable {name}:\n  {_dotted(key)}: "
                          f"not a valid JSON array ({err.msg} at column {err.colno}); "
                          f'write ["a", "b"] or a comma-separated list a,b') from None


def _expand(value: Any, key: Key, unset: list[tuple[Key, str]]) -> Any:
    """``value`` with ``${VAR}`` references in its strings replaced; unset variables go to ``unset``."""
    if isinstance(value, dict):
        return {k: _expand(v, (*key, k), unset) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, (*key, i), unset) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        var = match.group(1)
        if var is None:
            return "${"
        if var not in os.environ:
            unset.append((key, var))
            return match.group(0)
        return os.environ[var]

    return _REFERENCE.sub(replace, value)


# ---------------------------------------------------------------------------------------------
# Error messages for people: "<source>: <key path>: <what is wrong>", grouped by source.

_PROBLEMS = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text (a string in quotes)",
    "list_type": "must be a list",
    "model_type": "must be an object with keys",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "literal_error": "must be one of {expected}",
}


def _problem(error: Any) -> str:
    """Pydantic's error, rephrased; the offending value is shown unless the key holds a secret or the value is
    a whole section (cut to 60 characters it says little, and a secret inside it would show in part)."""
    loc = error["loc"]
    if error["type"] == "extra_forbidden":
        return "unknown key" + _suggestion(loc)
    if error["type"] == "value_error":  # our validators' own words, without pydantic's "Value error, "
        return str(error["ctx"]["error"])
    template = _PROBLEMS.get(error["type"])
    text = template.format(**error.get("ctx", {})) if template else error["msg"][:1].lower() + error["msg"][1:]
    if not any(part in SECRET_FIELDS for part in loc) and not isinstance(error["input"], dict):
        text += f" (got {_shown(error['input'])})"
    return text


def _suggestion(key: Key) -> str:
    import difflib

    model = _model_at(key[:-1])
    if model is None:
        return ""
    fields = list(model.model_fields)
    typed = str(key[-1]).lower().replace("-", "_")
    # camelCase keys from the Go scripts (walletPath) squash to the same letters as wallet_path
    match = {f.replace("_", ""): f for f in fields}.get(typed.replace("_", ""))
    if match is None:
        close = difflib.get_close_matches(typed, fields, n=1, cutoff=0.6)
        match = close[0] if close else None
    if match is not None:
        return f" (did you mean '{match}'?)"
    return f" (known keys here: {', '.join(fields)})"


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(key: Key) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in key).lstrip(".")


def _report(secrets: list[str], problems: list[tuple[str, Key, str]]) -> ConfigError:
    """The message for people; a secret shown as the offending value of a misplaced key is scrubbed."""
    by_source: dict[str, list[str]] = {}
    for source, key, text in problems:
        by_source.setdefault(source, []).append(f"  {_dotted(key)}: {text}")
    return ConfigError(scrub("\n".join(f"Invalid configuration in {source}:\n" + "\n".join(lines)
                                       for source, lines in by_source.items()), secrets))


# ---------------------------------------------------------------------------------------------
# Saving and secrets.

def save_config(config: Config, path: Path | None = None) -> Path:
    """Write ``config`` as JSON (indent 2) to ``path`` (default: :func:`default_config_path`), 0600 from
    creation, replaced atomically and fsynced. Values are written as given; a literal ``${`` is
    escaped as ``$${`` so loading the file gives the same config back. Returns the path written."""
    import json

    from picoora.atomic import atomic_write_text

    path = Path(path).expanduser() if path is not None else default_config_path()
    text = json.dumps(_escape_references(config.model_dump(mode="json")), indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write_text(path, text, mode=0o600)  # the temp file is born 0600: never world-readable
    except OSError as err:
        raise ConfigError(f"Cannot write the configuration to {path}: {err.strerror or err}") from None
    return path


def _escape_references(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _escape_references(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape_references(v) for v in value]
    return value.replace("${", "$${") if isinstance(value, str) else value


def _tree_secrets(tree: Any) -> list[str]:
    """Secret values in a config-shaped tree: secret-named fields and passwords inside DSN strings."""
    found: set[str] = set()

    def walk(node: Any, key: str | int | None) -> None:
        if isinstance(node, dict) and key in SECRET_MAPS:  # an MCP server's env or headers: every value
            found.update(v for v in node.values() if isinstance(v, str) and v)
        elif isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, None)
        elif isinstance(node, str) and node:
            if key in SECRET_FIELDS:
                found.add(node)
            elif (password := dsn_password(node)) is not None:
                found.add(password)

    walk(tree, None)
    return sorted(found, key=lambda s: (-len(s), s))


def secret_values(config: Config) -> list[str]:
    """Every distinct non-empty secret in ``config`` (from the file, ``${VAR}`` or a ``PICO_*``
    override alike), longest first."""
    return _tree_secrets(config.model_dump())


def redacted(config: Config) -> dict[str, Any]:
    """``config`` as a JSON-ready dict with every non-empty secret and DSN password replaced by ``***``."""
    return redact_tree(config.model_dump(mode="json"))
