"""``picoora status``: a report of the set-up, each line checked for real (with short timeouts).

The provider and model checked are those the default session (``cli:default``, what ``picoora agent``
talks to) will answer with: its own choice (``/model``) when it made one, else the config's default; the
``Source`` line says which, and where the default comes from (the config file or a ``PICO_`` variable).

The gateway's lines (port, token, channels, jobs, heartbeat, sessions' model choices) are
``status_services``'s.

Exit status: 0 when every check passed, 1 when one found a problem (its line is marked ✗), 2 for a
config it cannot read. ``--json`` prints the same checks for scripts, each with typed facts (numbers,
booleans, names) in place of the sentence; the sentences of the failed checks are in ``problems``.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer

from picoora.cli.errors import config_path, load_config, shown
from picoora.cli.status_report import BAD, OK, Line, count

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.session_models import SessionModel
    from picoora.store.base import VectorStatus

NOT_FOUND = f"{BAD} not found: run `picoora onboard`"
PROBE_TIMEOUT = 1.5  # seconds; a TCP connect to a local or LAN model server


def register(app: typer.Typer) -> None:
    app.command("status")(status)


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
    storage, session_model, services = _storage_lines(config, workspace)
    lines = [
        Line("Config", f"{path} {OK}" if path.is_file() else f"{path} {NOT_FOUND}", path.is_file(),
             {"path": str(path), "exists": path.is_file()}),
        _workspace_line(workspace),
        *_provider_lines(config, session_model.provider, session_model.model),
        Line("Source", session_model.why(), facts={"source": session_model.source,
                                                   "env": list(session_model.env_vars)}),
        *storage,
        _exec_line(config),
        *_mcp_lines(config, workspace),
        *services,
        _channels_line(config),
        *_go_home_lines(path),
    ]
    healthy = all(line.ok for line in lines)
    if as_json:
        print(json.dumps({"version": __version__, "ok": healthy, "model": session_model.to_dict(),
                          "checks": [line.to_json() for line in lines],
                          "problems": [shown(f"{line.label}: {line.text}") for line in lines if not line.ok]},
                         indent=2, ensure_ascii=False))
    else:
        width = max(len(line.label) for line in lines) + 2
        print(f"picoora {__version__}")
        for line in lines:
            print(shown(f"{line.label + ':':<{width}}{line.text}"))
    raise typer.Exit(0 if healthy else 1)


def _workspace_line(workspace: Path) -> Line:
    facts = {"path": str(workspace), "exists": workspace.is_dir()}
    if workspace.is_dir():
        return Line("Workspace", f"{workspace} {OK}", facts=facts)
    if workspace.exists():
        return Line("Workspace", f"{workspace} {BAD} is a file, not a folder: move it away or set "
                                 "agents.defaults.workspace", False, facts)
    return Line("Workspace", f"{workspace} {NOT_FOUND}", False, facts)


def _provider_lines(config: Config, provider: str, model: str) -> list[Line]:
    if provider == "ollama":
        return _ollama_lines(config, model)
    from picoora.providers import PRESETS, key_env

    settings = getattr(config.providers, provider)
    preset = PRESETS.get(provider)
    reachable = None  # not probed: a hosted provider's public endpoint
    if settings.api_base and (preset is None or preset.local or settings.api_key):
        reachable = _port_open(settings.api_base)
        where = f"{settings.api_base} " + (f"{OK} answers" if reachable else f"{BAD} not reachable")
        key = "API key set" if settings.api_key else "no API key (fine for a local server)"
        ok = reachable
    elif preset is not None:  # a hosted preset without its key: say which variable gives it
        where = settings.api_base
        key = f"{BAD} no API key: export {preset.key_env}=... or set providers.{provider}.api_key"
        ok = False
    else:
        where = "its default endpoint (not probed)"
        variable = key_env(provider)
        key = "API key set" if settings.api_key else (f"{BAD} no API key: set providers.{provider}.api_key"
                                                      + (f" or export {variable}=..." if variable else ""))
        ok = bool(settings.api_key)
    facts = {"provider": provider, "api_base": settings.api_base or None, "reachable": reachable,
             "api_key_set": bool(settings.api_key)}
    return [Line("Provider", f"{provider} at {where}; {key}", ok, facts),
            Line("Model", model, facts={"model": model, "pulled": None, "tools": None})]


def _ollama_lines(config: Config, model: str) -> list[Line]:
    from picoora.llm.base import LLMError, ProviderUnavailableError
    from picoora.llm.ollama_admin import START_HINT, list_models, native_base

    base = native_base(config.providers.ollama.api_base)
    provider: dict[str, Any] = {"provider": "ollama", "api_base": base, "api_key_set": False}
    unknown = {"model": model, "pulled": None, "tools": None}
    try:
        models = {m.name: m for m in list_models(base)}
    except LLMError as err:
        down = isinstance(err, ProviderUnavailableError)
        provider["reachable"] = not down
        if not down:  # something answers there, but not as Ollama does
            return [Line("Provider", f"ollama at {base} {BAD} {err}", False, provider),
                    Line("Model", f"{model} (cannot check)", False, unknown)]
        return [
            Line("Provider", f"ollama at {base} {BAD} not reachable. {START_HINT}", False, provider),
            Line("Model", f"{model} (cannot check while Ollama is down)", False, unknown),
        ]
    info = models.get(model) or models.get(f"{model}:latest")
    facts = {"model": model, "pulled": info is not None, "tools": info.supports_tools if info else None}
    if info is None:
        model_line = Line("Model", f"{model} {BAD} not pulled: run `ollama pull {model}`", False, facts)
    elif info.supports_tools:
        model_line = Line("Model", f"{model} {OK} pulled, can call tools", facts=facts)
    else:  # it answers, so status stays healthy; the line says what is missing
        model_line = Line("Model", f"{model} {OK} pulled, {BAD} cannot call tools "
                                   "(answers without memory or files; try qwen3)", facts=facts)
    provider.update(reachable=True, models_pulled=len(models))
    return [Line("Provider", f"ollama at {base} {OK} answers ({count(len(models), 'model')} pulled)", facts=provider),
            model_line]


def _storage_lines(config: Config, workspace: Path) -> tuple[list[Line], SessionModel, list[Line]]:
    """The storage lines, the default session's model (its stored choice is in the store), and the
    gateway's lines (its jobs, beats and sessions' choices are in the store too)."""
    from picoora.assistant import DEFAULT_SESSION
    from picoora.cli.status_services import service_lines
    from picoora.session_models import describe, state_key
    from picoora.store import open_store
    from picoora.store.base import StoreError

    if not workspace.is_dir() and not config.oracle.enabled:  # opening would create it; a report changes nothing
        lines = [Line("Storage", "nothing stored yet", facts={"backend": None}), _configured_embedder(config)]
        return lines, describe(config, DEFAULT_SESSION, None), service_lines(config, None)
    fallbacks: list[str] = []
    try:
        store = open_store(config, on_fallback=fallbacks.append)
    except StoreError as err:
        return ([Line("Storage", f"{BAD} {err}", False, {"backend": None})], describe(config, DEFAULT_SESSION, None),
                service_lines(config, None))
    stored = None
    try:
        stored = store.state.get(state_key(DEFAULT_SESSION))
        stats = store.stats()
        docs = store.documents.counts()
        lines = [
            Line("Storage", f"{stats.backend} in {stats.location}" + "".join(f" ({BAD} {line})" for line in fallbacks),
                 not fallbacks, {"backend": stats.backend, "location": stats.location, "fell_back": bool(fallbacks)}),
            Line(
                "Stored",
                f"{count(stats.memories, 'memory', 'memories')}, {count(stats.daily_notes, 'daily note')}, "
                f"{count(stats.sessions, 'session')}, "
                f"{count(stats.transcript_entries, 'transcript entry', 'transcript entries')}, "
                f"{count(stats.prompts, 'prompt file')}, {count(docs.documents, 'document')} "
                f"({docs.shared} shared, {count(docs.chunks, 'chunk')})",
                facts={"memories": stats.memories, "daily_notes": stats.daily_notes, "sessions": stats.sessions,
                       "transcript_entries": stats.transcript_entries, "prompts": stats.prompts,
                       "documents": docs.documents, "shared_documents": docs.shared, "document_chunks": docs.chunks},
            ),
            _vector_line(store.memories.vector_status()),
        ]
        services = service_lines(config, store)
    except StoreError as err:
        lines, services = [Line("Storage", f"{BAD} {err}", False, {"backend": None})], service_lines(config, None)
    finally:
        store.close()
    return lines, describe(config, DEFAULT_SESSION, stored), services


def _mcp_lines(config: Config, workspace: Path) -> list[Line]:
    """Each configured MCP server, started once to count its tools (bounded by its startup timeout)."""
    if not config.tools.mcp_servers:
        return []
    import asyncio

    from picoora.config import picoora_home
    from picoora.tools.mcp_client import probe, quiet_failures_told_elsewhere

    quiet_failures_told_elsewhere()  # each failure is one of the lines below
    reports = asyncio.run(probe(config.tools.mcp_servers, workspace, picoora_home() / "logs",
                                config.tools.exec))
    return [Line("MCP server",
                 f"{r.name} ({r.text})" if r.text == "disabled" else f"{r.name} {OK if r.ok else BAD} {r.text}",
                 r.ok or r.text == "disabled", {"server": r.name, "enabled": r.text != "disabled", "started": r.ok})
            for r in reports]


def _go_home_lines(path: Path) -> list[Line]:
    """A PicoOraClaw home on this machine: a hint, never a failure."""
    from picoora.migrate import go_home_notice

    notice = go_home_notice(path)
    return [Line("PicoOraClaw", notice)] if notice else []


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
    return Line("Channels", text, not bad, {"states": dict(states)})


def _vector_line(status: VectorStatus) -> Line:
    """The store's embedder and whether the stored vectors match it (the store knows; status does not ask how)."""
    facts = {"embedder": status.embedder or None, "where": status.where or None, "loaded": status.note is None,
             "missing_vectors": status.missing}
    if not status.embedder:
        return Line("Embedder",
                    "none: recall matches keywords only (set memory.embedder to \"minilm\" to search by meaning)",
                    facts=facts)
    text = f"{status.embedder} ({status.where})"
    if status.note:
        text += f" {BAD} {status.note}"
    if status.missing:
        text += (f"; {count(status.missing, 'memory lacks', 'memories lack')} a vector from it: "
                 "run `picoora memory reindex`")
    return Line("Embedder", text, not status.note and not status.missing, facts)


def _configured_embedder(config: Config) -> Line:
    from picoora.store.embedder import create_embedder

    embedder = create_embedder(config.memory, config.providers.ollama.api_base)
    name = embedder.model_id if embedder is not None else None
    return Line("Embedder", name or "none: recall matches keywords only",
                facts={"embedder": name, "where": None, "loaded": None, "missing_vectors": 0})


def _exec_line(config: Config) -> Line:
    from picoora.tools.os_sandbox import exec_mode

    mode = exec_mode(config.tools.exec)
    return Line("Exec", mode.description, facts={"mode": mode.name})


def _port_open(url: str) -> bool:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=PROBE_TIMEOUT):
            return True
    except OSError:
        return False
