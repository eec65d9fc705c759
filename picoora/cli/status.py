"""``picoora status``: a report of the set-up, each line checked for real (with short timeouts).

The provider and model checked are those the default session (``cli:default``, what ``picoora agent``
talks to) will answer with: its own choice (``/model``) when it made one, else the config's default; the
``Source`` line says which, and where the default comes from (the config file or a ``PICO_`` variable).

Exit status: 0 when every check passed, 1 when one found a problem (its line is marked ✗), 2 for a
config it cannot read. ``--json`` prints the same checks for scripts.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import typer

from picoora.cli.errors import config_path, load_config, shown

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.session_models import SessionModel
    from picoora.store.base import VectorStatus

OK, BAD = "✓", "✗"
NOT_FOUND = f"{BAD} not found: run `picoora onboard`"
PROBE_TIMEOUT = 1.5  # seconds; a TCP connect to a local or LAN model server


def register(app: typer.Typer) -> None:
    app.command("status")(status)


@dataclass
class Line:
    label: str
    text: str
    ok: bool = True  # False: this check found a problem (the text says what to do)


def status(
    ctx: typer.Context,
    as_json: bool = typer.Option(False, "--json", help="Print the checks as JSON."),
) -> None:
    """Show the config, workspace, model provider and model, storage and what it holds.

    Exit status: 0 when every check passed, 1 when one found a problem, 2 for a bad config."""
    import json

    from picoora import __version__
    from picoora.config import default_config_path, workspace_path

    config = load_config(ctx)
    path = config_path(ctx) or default_config_path()
    workspace = workspace_path(config)
    storage, session_model = _storage_lines(config, workspace)
    lines = [
        Line("Config", f"{path} {OK}") if path.is_file() else Line("Config", f"{path} {NOT_FOUND}", False),
        _workspace_line(workspace),
        *_provider_lines(config, session_model.provider, session_model.model),
        Line("Source", session_model.why()),
        *storage,
        Line("Exec", _exec_text(config)),
        *_mcp_lines(config, workspace),
        _channels_line(config),
    ]
    healthy = all(line.ok for line in lines)
    if as_json:
        checks = [{"check": line.label.lower(), "ok": line.ok, "text": shown(line.text)} for line in lines]
        print(json.dumps({"version": __version__, "ok": healthy, "model": session_model.to_dict(), "checks": checks},
                         indent=2, ensure_ascii=False))
    else:
        width = max(len(line.label) for line in lines) + 2
        print(f"picoora {__version__}")
        for line in lines:
            print(shown(f"{line.label + ':':<{width}}{line.text}"))
    raise typer.Exit(0 if healthy else 1)


def _workspace_line(workspace: Path) -> Line:
    if workspace.is_dir():
        return Line("Workspace", f"{workspace} {OK}")
    if workspace.exists():
        return Line("Workspace", f"{workspace} {BAD} is a file, not a folder: move it away or set "
                                 "agents.defaults.workspace", False)
    return Line("Workspace", f"{workspace} {NOT_FOUND}", False)


def _provider_lines(config: Config, provider: str, model: str) -> list[Line]:
    if provider == "ollama":
        return _ollama_lines(config, model)
    settings = getattr(config.providers, provider)
    if settings.api_base:
        reachable = _port_open(settings.api_base)
        where = f"{settings.api_base} " + (f"{OK} answers" if reachable else f"{BAD} not reachable")
        key = "API key set" if settings.api_key else "no API key (fine for a local server)"
        ok = reachable
    else:
        where = "its default endpoint (not probed)"
        key = "API key set" if settings.api_key else f"{BAD} no API key: set providers.{provider}.api_key"
        ok = bool(settings.api_key)
    return [Line("Provider", f"{provider} at {where}; {key}", ok), Line("Model", model)]


def _ollama_lines(config: Config, model: str) -> list[Line]:
    from picoora.llm.base import LLMError, ProviderUnavailableError
    from picoora.llm.ollama_admin import START_HINT, list_models, native_base

    base = native_base(config.providers.ollama.api_base)
    try:
        models = {m.name: m for m in list_models(base)}
    except LLMError as err:
        if not isinstance(err, ProviderUnavailableError):  # something answers there, but not as Ollama does
            return [Line("Provider", f"ollama at {base} {BAD} {err}", False),
                    Line("Model", f"{model} (cannot check)", False)]
        return [
            Line("Provider", f"ollama at {base} {BAD} not reachable. {START_HINT}", False),
            Line("Model", f"{model} (cannot check while Ollama is down)", False),
        ]
    info = models.get(model) or models.get(f"{model}:latest")
    if info is None:
        model_line = Line("Model", f"{model} {BAD} not pulled: run `ollama pull {model}`", False)
    elif info.supports_tools:
        model_line = Line("Model", f"{model} {OK} pulled, can call tools")
    else:  # it answers, so status stays healthy; the line says what is missing
        model_line = Line("Model", f"{model} {OK} pulled, {BAD} cannot call tools "
                                   "(answers without memory or files; try qwen3)")
    pulled = _count(len(models), "model")
    return [Line("Provider", f"ollama at {base} {OK} answers ({pulled} pulled)"), model_line]


def _storage_lines(config: Config, workspace: Path) -> tuple[list[Line], SessionModel]:
    """The storage lines, and the default session's model (its stored choice is in the store)."""
    from picoora.assistant import DEFAULT_SESSION
    from picoora.session_models import describe, state_key
    from picoora.store import open_store
    from picoora.store.base import StoreError

    if not workspace.is_dir() and not config.oracle.enabled:  # opening would create it; a report changes nothing
        lines = [Line("Storage", "nothing stored yet"), Line("Embedder", _configured_embedder(config))]
        return lines, describe(config, DEFAULT_SESSION, None)
    fallbacks: list[str] = []
    try:
        store = open_store(config, on_fallback=fallbacks.append)
    except StoreError as err:
        return [Line("Storage", f"{BAD} {err}", False)], describe(config, DEFAULT_SESSION, None)
    stored = None
    try:
        stored = store.get_state(state_key(DEFAULT_SESSION))
        stats = store.stats()
        lines = [
            Line("Storage", f"{stats.backend} in {stats.location}" + "".join(f" ({BAD} {line})" for line in fallbacks),
                 not fallbacks),
            Line(
                "Stored",
                f"{_count(stats.memories, 'memory', 'memories')}, {_count(stats.daily_notes, 'daily note')}, "
                f"{_count(stats.sessions, 'session')}, "
                f"{_count(stats.transcript_entries, 'transcript entry', 'transcript entries')}, "
                f"{_count(stats.prompts, 'prompt file')}",
            ),
            _vector_line(store.vector_status()),
        ]
    except StoreError as err:
        lines = [Line("Storage", f"{BAD} {err}", False)]
    finally:
        store.close()
    return lines, describe(config, DEFAULT_SESSION, stored)


def _mcp_lines(config: Config, workspace: Path) -> list[Line]:
    """Each configured MCP server, started once to count its tools (bounded by its startup timeout)."""
    if not config.tools.mcp_servers:
        return []
    import asyncio

    from picoora.config import picoora_home
    from picoora.tools.mcp_client import probe

    reports = asyncio.run(probe(config.tools.mcp_servers, workspace, picoora_home() / "logs"))
    return [Line("MCP server",
                 f"{r.name} ({r.text})" if r.text == "disabled" else f"{r.name} {OK if r.ok else BAD} {r.text}",
                 r.ok or r.text == "disabled")
            for r in reports]


def _channels_line(config: Config) -> Line:
    """Every chat channel with its state: off, or what its platform said to the token just now."""
    import asyncio

    from picoora.gateway.channels.base import CONNECTED
    from picoora.gateway.channels.probe import OFF, probe_all

    states = asyncio.run(probe_all(config))
    text = ", ".join(f"{name} {state}" if state in (OFF, CONNECTED) else f"{name} {BAD} {state}"
                     for name, state in states.items())
    bad = [name for name, state in states.items() if state not in (OFF, CONNECTED)]
    if bad:
        text += f" (check channels.{bad[0]} in the config, and the README's channel section)"
    return Line("Channels", text, not bad)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _vector_line(status: VectorStatus) -> Line:
    """The store's embedder and whether the stored vectors match it (the store knows; status does not ask how)."""
    if not status.embedder:
        return Line("Embedder",
                    "none: recall matches keywords only (set memory.embedder to \"minilm\" to search by meaning)")
    text = f"{status.embedder} ({status.where})"
    if status.note:
        text += f" {BAD} {status.note}"
    if status.missing:
        text += (f"; {_count(status.missing, 'memory lacks', 'memories lack')} a vector from it: "
                 "run `picoora memory reindex`")
    return Line("Embedder", text, not status.note and not status.missing)


def _configured_embedder(config: Config) -> str:
    from picoora.store.embedder import create_embedder

    embedder = create_embedder(config.memory, config.providers.ollama.api_base)
    return embedder.model_id if embedder is not None else "none: recall matches keywords only"


def _exec_text(config: Config) -> str:
    from picoora.tools.os_sandbox import exec_mode

    return exec_mode(config.tools.exec).description


def _port_open(url: str) -> bool:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=PROBE_TIMEOUT):
            return True
    except OSError:
        return False
