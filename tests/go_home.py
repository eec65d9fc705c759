"""A PicoOraClaw (Go) home built from the formats the Go version documents and writes
(shared/reference/picooraclaw-go.md §2.2 config, §2.5 layout, §4 sessions and notes, §9.1 the cron store)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

TELEGRAM_TOKEN = "123456:go-telegram-secret-token"
OPENROUTER_KEY = "sk-or-go-secret-key"
HOUR_MS = 3_600_000


def go_default_config() -> dict[str, Any]:
    """What the Go ``onboard`` writes (config.DefaultConfig, field order kept)."""
    none: list[Any] = []
    return {
        "agents": {"defaults": {
            "workspace": "~/.picooraclaw/workspace", "restrict_to_workspace": True, "provider": "openai",
            "model": "xai.grok-4", "max_tokens": 8192, "temperature": 0.7, "max_tool_iterations": 20,
            "summarize_message_threshold": 20, "summarize_token_percent": 75}},
        "channels": {
            "whatsapp": {"enabled": False, "bridge_url": "ws://localhost:3001", "allow_from": none},
            "telegram": {"enabled": False, "token": "", "proxy": "", "allow_from": none},
            "feishu": {"enabled": False, "app_id": "", "app_secret": "", "encrypt_key": "", "verification_token": "",
                       "allow_from": none},
            "discord": {"enabled": False, "token": "", "allow_from": none},
            "maixcam": {"enabled": False, "host": "0.0.0.0", "port": 18790, "allow_from": none},
            "qq": {"enabled": False, "app_id": "", "app_secret": "", "allow_from": none},
            "dingtalk": {"enabled": False, "client_id": "", "client_secret": "", "allow_from": none},
            "slack": {"enabled": False, "bot_token": "", "app_token": "", "allow_from": none},
            "line": {"enabled": False, "channel_secret": "", "channel_access_token": "", "webhook_host": "0.0.0.0",
                     "webhook_port": 18791, "webhook_path": "/webhook/line", "allow_from": none},
            "onebot": {"enabled": False, "ws_url": "ws://127.0.0.1:3001", "access_token": "", "reconnect_interval": 5,
                       "group_trigger_prefix": none, "allow_from": none},
            "web": {"enabled": False, "host": "0.0.0.0", "port": 8090, "token": ""},
        },
        "providers": {
            "anthropic": {}, "openai": {"api_key": "oci-genai", "api_base": "http://localhost:9999/v1"},
            "openrouter": {}, "groq": {}, "vllm": {}, "gemini": {}, "nvidia": {}, "ollama": {}, "moonshot": {},
            "deepseek": {}, "github_copilot": {},
        },
        "gateway": {"host": "0.0.0.0", "port": 18790},
        "tools": {
            "web": {"brave": {"enabled": False, "api_key": "", "max_results": 5},
                    "duckduckgo": {"enabled": True, "max_results": 5},
                    "perplexity": {"enabled": False, "api_key": "", "max_results": 5}},
            "cron": {"exec_timeout_minutes": 5},
        },
        "heartbeat": {"enabled": True, "interval": 30},
        "devices": {"enabled": False, "monitor_usb": True},
        "oracle": {
            "enabled": False, "mode": "freepdb", "host": "localhost", "port": 1521, "service": "FREEPDB1",
            "user": "picooraclaw", "password": "", "dsn": "", "wallet_path": "", "pool_max_open": 10,
            "pool_max_idle": 2, "onnx_model": "ALL_MINILM_L12_V2", "agent_id": "default",
            "embedding_provider": "api", "embedding_api_base": "", "embedding_api_key": "",
            "embedding_model": "embedding-3"},
    }


GO_PROVIDERS = ("anthropic", "openai", "openrouter", "groq", "vllm", "gemini", "nvidia", "ollama", "moonshot",
                "deepseek", "github_copilot")  # ProvidersConfig in the Go project's pkg/config/config.go


def go_full_config() -> dict[str, Any]:
    """Every key of the Go config struct (pkg/config/config.go), each with a value that is set: the default
    config plus the optional ``routing`` section, every ProviderConfig field and a value for each empty one."""
    config = go_default_config()
    config["agents"]["defaults"]["routing"] = {"enabled": True, "light_model": "small", "threshold": 0.5}
    config["providers"] = {name: {"api_key": f"{name}-key", "api_base": f"https://{name}.example/v1",
                                  "proxy": "http://proxy:3128", "auth_method": "token", "connect_mode": "grpc"}
                           for name in GO_PROVIDERS}
    config["agents"]["defaults"]["provider"] = "groq"

    def fill(node: dict[str, Any]) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                fill(value)
            elif value in ("", []):
                node[key] = ["42"] if isinstance(value, list) else f"{key}-value"
    fill(config)
    config["channels"]["telegram"]["enabled"] = config["channels"]["discord"]["enabled"] = True
    config["tools"]["web"]["brave"]["enabled"] = True
    return config


def session_file(key: str, messages: list[dict[str, Any]], summary: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"key": key, "messages": messages, "created": "2026-11-01T09:00:00Z",
                            "updated": "2026-11-02T10:00:00Z"}
    if summary:
        data["summary"] = summary
    return data


def cron_job(job_id: str, name: str, schedule: dict[str, Any], payload: dict[str, Any], *,
             enabled: bool = True) -> dict[str, Any]:
    return {"id": job_id, "name": name, "enabled": enabled, "schedule": {"tz": "", **schedule},
            "payload": {"kind": "agent_turn", **payload},
            "state": {"nextRunAtMs": 0, "lastRunAtMs": 0, "lastStatus": "ok", "lastError": ""},
            "createdAtMs": 1_764_000_000_000, "updatedAtMs": 1_764_000_000_000,
            "deleteAfterRun": schedule.get("kind") == "at"}


def build_go_home(user_home: Path) -> Path:
    """``user_home/.picooraclaw`` as a Go user who chatted, took notes and set jobs would leave it."""
    root = user_home / ".picooraclaw"
    ws = root / "workspace"
    config = go_default_config()
    config["agents"]["defaults"].update(provider="openrouter", model="anthropic/claude-sonnet-4", temperature=0.4)
    config["providers"]["openrouter"] = {"api_key": OPENROUTER_KEY, "api_base": "", "proxy": "http://proxy:3128"}
    config["channels"]["telegram"].update(enabled=True, token=TELEGRAM_TOKEN, allow_from=[123456789, "@alice"])
    config["heartbeat"]["interval"] = 3  # Go raised 1-4 to 5
    config["oracle"]["walletPath"] = "/opt/wallet"  # the camelCase key the Go scripts wrote
    config["devices"]["enabled"] = True
    _write_json(root / "config.json", config)

    ws.mkdir(parents=True)
    (ws / "AGENT.md").write_text("# Agent\n\nYou are picooraclaw.\n")
    (ws / "IDENTITY.md").write_text("# Identity\n\nYou are Claw, Ana's assistant.\n")
    (ws / "SOUL.md").write_text("# Soul\n\nDry humour, short answers.\n")
    (ws / "USER.md").write_text("# User\n\nAna, a sailor in Lisbon.\n")
    (ws / "HEARTBEAT.md").write_text("# Heartbeat\n\n- Check the tide table every morning.\n")
    (ws / "heartbeat.log").write_text("[2026-11-02 09:00:00] [INFO] HEARTBEAT_OK\n")
    skill = ws / "skills" / "tides"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tides\ndescription: Read the Lisbon tide table\n---\n\nUse curl.\n")
    (skill / "scripts" / "fetch.sh").write_text("#!/bin/sh\ncurl -s https://tides.example/lisbon\n")

    write_call = {"name": "write_file", "arguments": '{"path": "boat.md", "content": "Ariadne"}'}
    _write_json(ws / "sessions" / "cli_default.json", session_file("cli:default", [
        {"role": "user", "content": "My boat is called Ariadne."},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
                                                             "function": write_call}]},
        {"role": "tool", "content": "written", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "Noted: Ariadne."},
    ], summary="Ana told me about her boat."))
    _write_json(ws / "sessions" / "telegram_123456789.json", session_file("telegram:123456789", [
        {"role": "user", "content": "Remind me about the regatta"},
        {"role": "assistant", "content": "I will."},
    ]))

    memory = ws / "memory"
    (memory / "202611").mkdir(parents=True)
    (memory / "MEMORY.md").write_text(
        "# Long-term Memory\n\n## Preferences\n\n- Ana prefers metric units.\n- Ana likes short answers.\n\n"
        "## Facts\n\nAna's boat is a 9 m sloop called Ariadne,\nmoored in Lisbon.\n")
    (memory / "202611" / "20261101.md").write_text("# 2026-11-01\n\nSanded the hull.\n")
    (memory / "202611" / "20261102.md").write_text("# 2026-11-02\n\nBought new sheets.\nRegatta on Saturday.\n")

    now_ms = int(time.time() * 1000)
    _write_json(ws / "cron" / "jobs.json", {"version": 1, "jobs": [
        cron_job("a1b2c3d4e5f60718", "Morning tides", {"kind": "cron", "expr": "0 7 * * *"},
                 {"message": "Check the tides for today", "deliver": False, "channel": "telegram", "to": "123456789"}),
        cron_job("b1b2c3d4e5f60718", "Stretch", {"kind": "every", "everyMs": 2 * HOUR_MS},
                 {"message": "Time to stretch", "deliver": True}, enabled=False),
        cron_job("c1b2c3d4e5f60718", "Regatta", {"kind": "at", "atMs": now_ms + 48 * HOUR_MS},
                 {"message": "Regatta today!", "deliver": True, "channel": "telegram", "to": "123456789"}),
        cron_job("d1b2c3d4e5f60718", "Old reminder", {"kind": "at", "atMs": now_ms - 48 * HOUR_MS},
                 {"message": "Past", "deliver": True}),
        cron_job("e1b2c3d4e5f60718", "Disk check", {"kind": "every", "everyMs": HOUR_MS},
                 {"message": "disk", "command": "df -h"}),
    ]})
    _write_json(ws / "state" / "state.json", {"last_channel": "telegram:123456789", "last_chat_id": "123456789",
                                              "timestamp": "2026-11-02T10:00:00Z"})
    return root


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
