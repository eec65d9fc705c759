"""The optional parts of picoora and the extras that install them (``pip install 'picoora[telegram]'``).

A core install chats in the terminal with memory through Ollama; the hosted providers' SDKs, the gateway,
Telegram, Oracle, MCP and bulk embedding each come with an extra (``all`` brings every one). Code that
needs one asks ``missing`` first, so a missing package is one sentence naming the extra, never an
ImportError from deep inside a command."""

from __future__ import annotations

import importlib

# extra -> (what needs it, the modules it provides); pyproject.toml's optional-dependencies match this.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("the OpenAI-compatible provider", ("openai",)),
    "anthropic": ("the Anthropic provider", ("anthropic",)),
    # APScheduler runs jobs and websockets carries Discord's and Slack's events: both only ever in the gateway.
    "gateway": ("the gateway (HTTP API, web chat, scheduled jobs, Discord, Slack)",
                ("fastapi", "uvicorn", "apscheduler", "websockets")),
    "telegram": ("the Telegram channel", ("telegram",)),
    "oracle": ("Oracle AI Database storage", ("oracledb",)),
    "mcp": ("MCP support (tools.mcp_servers, `picoora mcp`)", ("mcp", "jsonschema")),
    "bulk": ("parallel bulk embedding (memory import and reindex)", ("onnxruntime",)),
    "docs": ("reading PDF and Word documents (picoora docs)", ("pypdf", "docx")),
}


def missing(extra: str) -> str | None:
    """The sentence saying how to install ``extra``, or None when its packages import (the caller imports
    them next anyway, so trying costs nothing; a broken install counts as missing too)."""
    purpose, modules = EXTRAS[extra]
    absent = [module for module in modules if not _imports(module)]
    if not absent:
        return None
    which = "which is" if len(absent) == 1 else "which are"
    return (f"{purpose} needs {', '.join(absent)}, {which} not installed: "
            f"pip install 'picoora[{extra}]' (or 'picoora[all]' for everything)")


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
