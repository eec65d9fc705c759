"""``picoora version`` (and ``-V/--version``): what is installed and what this config talks to, for a bug report.

Library versions come from the installed distributions' metadata, so no SDK is imported; the config is
read but nothing is contacted (a broken config is shown as such, the versions still print)."""

from __future__ import annotations

from pathlib import Path

import typer

# The distributions that talk to models and storage: the versions a provider or driver bug depends on.
LIBRARIES = ("ollama", "openai", "anthropic", "oracledb", "python-telegram-bot", "mcp", "onnxruntime")


def register(app: typer.Typer) -> None:
    app.command("version")(version)


def version(ctx: typer.Context) -> None:
    """Show picoora's version, Python's, the provider libraries' and the configured backend."""
    from picoora.cli.errors import config_path

    print("\n".join(version_lines(config_path(ctx))))


def version_lines(path: Path | None) -> list[str]:
    import platform

    from picoora import __version__

    lines = [f"picoora {__version__}",
             f"Python {platform.python_version()} ({platform.python_implementation()}, {platform.system()})"]
    lines += [f"  {name} {_installed(name)}" for name in LIBRARIES]
    return lines + _setup_lines(path)


def _installed(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _setup_lines(path: Path | None) -> list[str]:
    from picoora.config import ConfigError, default_config_path, load_config, workspace_path
    from picoora.secrets import redact_dsn

    path = path or default_config_path()
    try:
        config = load_config(path)
    except ConfigError as err:
        return [f"Config {path}: cannot be read ({str(err).splitlines()[-1].strip()})"]
    defaults, oracle = config.agents.defaults, config.oracle
    if oracle.enabled:
        where = redact_dsn(oracle.dsn) if oracle.dsn else f"{oracle.host}:{oracle.port}/{oracle.service}"
        backend = f"oracle ({oracle.mode}, {where}; falls back to files when unreachable)"
    else:
        backend = f"files ({workspace_path(config)})"
    return [f"Config {path}" + ("" if path.exists() else " (not written yet: defaults)"),
            f"Provider {defaults.provider}, model {defaults.model}",
            f"Backend {backend}"]
