"""The configuration model (snake_case, the Go version's shape), paths, and loading.

Layout on disk: ``$PICOORA_HOME`` (default ``~/.picoora``) holds ``config.json`` (0600) and the
default workspace ``workspace/``. Loading order: defaults < file < ``PICO_*`` environment variables
(applied whether or not the file exists) ; ``${VAR}`` references inside string values are expanded
from the environment so secrets can stay out of the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ENV_PREFIX = "PICO_"
DEFAULT_OLLAMA_BASE = "http://localhost:11434"


class _Section(BaseModel):
    # Unknown keys are an error (typos must not be silently ignored, unlike the Go version).
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class AgentDefaults(_Section):
    workspace: str = ""  # empty: $PICOORA_HOME/workspace
    restrict_to_workspace: bool = True
    provider: Literal["ollama", "openai", "anthropic"] = "ollama"
    model: str = "qwen3:latest"
    max_tokens: int = Field(4096, ge=1)  # per answer; sent to the provider
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    context_window: int = Field(32768, ge=1024)  # tokens; drives compaction
    max_tool_iterations: int = Field(20, ge=1)
    turn_timeout_seconds: float = Field(300.0, gt=0)  # wall-clock limit per turn
    summarize_message_threshold: int = Field(40, ge=4)
    summarize_token_percent: int = Field(75, ge=10, le=95)
    keep_recent_messages: int = Field(8, ge=2)  # kept verbatim after compaction
    memory_context_tokens: int = Field(800, ge=0)  # budget for recalled memories in the prompt
    daily_note_days: int = Field(3, ge=0)


class Agents(_Section):
    defaults: AgentDefaults = AgentDefaults()


class ProviderConfig(_Section):
    api_key: str = ""
    api_base: str = ""
    timeout_seconds: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0)


class Providers(_Section):
    ollama: ProviderConfig = ProviderConfig(api_base=DEFAULT_OLLAMA_BASE)
    openai: ProviderConfig = ProviderConfig()
    anthropic: ProviderConfig = ProviderConfig()


class MemoryConfig(_Section):
    # "minilm": the bundled all-MiniLM-L6-v2 (ONNX, CPU, offline); "ollama": an Ollama embedding model;
    # "none": keyword recall only.
    embedder: Literal["minilm", "ollama", "none"] = "minilm"
    ollama_model: str = "all-minilm"
    min_similarity: float = Field(0.0, ge=-1.0, le=1.0)  # 0: use the embedder's calibrated floor
    dedup_similarity: float = Field(0.95, ge=0.5, le=1.0)


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


class GatewayConfig(_Section):
    host: str = "127.0.0.1"
    port: int = 18790
    token: str = ""  # required when host is not loopback


class ChannelConfig(_Section):
    enabled: bool = False
    token: str = ""
    allow_from: list[str] = []  # empty admits nobody; ["*"] admits everyone


class Channels(_Section):
    telegram: ChannelConfig = ChannelConfig()
    discord: ChannelConfig = ChannelConfig()
    slack: ChannelConfig = ChannelConfig()
    web: ChannelConfig = ChannelConfig()


class HeartbeatConfig(_Section):
    enabled: bool = False
    interval: int = Field(30, ge=0)  # minutes; 0 disables


class ExecToolConfig(_Section):
    enabled: bool = True
    timeout_seconds: float = Field(60.0, gt=0)
    max_output_chars: int = Field(10000, ge=100)


class WebFetchConfig(_Section):
    enabled: bool = True
    timeout_seconds: float = Field(30.0, gt=0)
    max_bytes: int = Field(2_000_000, ge=1000)
    max_chars: int = Field(50_000, ge=100)
    allow_hosts: list[str] = []  # hosts exempt from the private-address guard


class ToolsConfig(_Section):
    exec: ExecToolConfig = ExecToolConfig()
    web_fetch: WebFetchConfig = WebFetchConfig()


class Config(_Section):
    agents: Agents = Agents()
    providers: Providers = Providers()
    memory: MemoryConfig = MemoryConfig()
    oracle: OracleConfig = OracleConfig()
    gateway: GatewayConfig = GatewayConfig()
    channels: Channels = Channels()
    heartbeat: HeartbeatConfig = HeartbeatConfig()
    tools: ToolsConfig = ToolsConfig()


def picoora_home() -> Path:
    return Path(os.environ.get("PICOORA_HOME") or Path.home() / ".picoora").expanduser()


def default_config_path() -> Path:
    return picoora_home() / "config.json"


def workspace_path(config: Config) -> Path:
    raw = config.agents.defaults.workspace
    return Path(raw).expanduser() if raw else picoora_home() / "workspace"
