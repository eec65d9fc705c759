"""``picoora onboard``: write the config and the workspace templates, and pick a local model.

An existing config is kept (only the model is changed when the user picks another one); the
templates never overwrite a file the user edited, unless ``--force``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from picoora.cli.errors import EXIT_CANNOT_WRITE, EXIT_FAILURE, EXIT_USAGE, CLIError, config_path

if TYPE_CHECKING:
    from picoora.config import Config, UserConfig
    from picoora.llm.ollama_admin import ModelInfo

INSTALL_HINT = """\
Ollama does not answer at {base}. picoora runs its model there by default:
  install it:  curl -fsSL https://ollama.com/install.sh | sh   (or see https://ollama.com/download)
  start it:    ollama serve
  get a model: ollama pull qwen3
Then run `picoora onboard` again to pick the model, or `picoora status` to check."""


def register(app: typer.Typer) -> None:
    app.command("onboard")(onboard)


def onboard(
    ctx: typer.Context,
    force: bool = typer.Option(
        False, "--force", help="Overwrite the config (keeping a .bak copy) and every template, even edited ones."
    ),
    non_interactive: bool = typer.Option(False, "--non-interactive", help="Ask nothing; pick the model by itself."),
    provider: str | None = typer.Option(None, "--provider", help="ollama, openai, anthropic or a preset "
                                        "(openrouter, groq, deepseek, gemini, zhipu, oci, vllm, llamacpp, lmstudio)."),
    model: str | None = typer.Option(None, "--model", help="Use this model (skips the question)."),
    owner: str | None = typer.Option(None, "--owner", help="Your name as the owner (config users): "
                                     "`picoora pair approve CODE --as NAME` then lets in another account of yours."),
) -> None:
    """Set up picoora: config file, workspace templates, and a model (Ollama's, or a service's with a key)."""
    from picoora.cli.onboard_provider import choose_provider
    from picoora.config import Config, default_config_path, workspace_path

    path = config_path(ctx) or default_config_path()
    owner_entry = _owner_entry(owner) if owner is not None else None  # a bad name stops before anything is written
    _mention_go_home(path)
    _check_writable(path.parent, "set PICOORA_HOME to a folder you can write (e.g. PICOORA_HOME=$PWD/.picoora), "
                                 "or pass --config PATH")
    keep_file = path.exists() and not force
    config = _effective_config(path, force)
    _check_writable(workspace_path(config), "set agents.defaults.workspace (or PICO_AGENTS_DEFAULTS_WORKSPACE) "
                                            "to a folder you can write")
    interactive = not non_interactive and sys.stdin.isatty()
    configured_provider = config.agents.defaults.provider
    # The question comes on a first set-up; later, --provider switches.
    picked = config.agents.defaults.provider = choose_provider(config, provider, interactive and not path.exists())
    if picked != configured_provider:  # the old model belongs to the old provider
        config.agents.defaults.model = Config().agents.defaults.model if picked == "ollama" else ""
    chosen, problem = _choose_model(config, interactive, model)

    if not keep_file:
        if path.exists():  # --force: the old file may hold keys and passwords; keep a copy (0600, like it)
            backup = path.with_name(path.name + ".bak")
            shutil.copy2(path, backup)
            print(f"Saved the previous config as {backup}")
        # Defaults only: values that came from PICO_* variables or ${VAR} references stay out of the file.
        fresh = Config()
        fresh.agents.defaults.provider = config.agents.defaults.provider
        fresh.agents.defaults.model = chosen or fresh.agents.defaults.model
        fresh.gateway.token = _new_token()
        if owner_entry is not None:
            fresh.users = [owner_entry]
        ollama_from_env = _ollama_base_from_env(config)
        if ollama_from_env:  # where the model was found: the next command, without the variable, looks there too
            fresh.providers.ollama.api_base = ollama_from_env
        _save_new(fresh, path)
        print(f"Wrote {path}" + (f" (providers.ollama.api_base {ollama_from_env}, from the environment)"
                                 if ollama_from_env else ""))
    else:
        if config.agents.defaults.provider != configured_provider:
            _set_in_file(path, ("agents", "defaults", "provider"), config.agents.defaults.provider)
            print(f"Set agents.defaults.provider to {config.agents.defaults.provider} in {path}")
        if chosen and chosen != config.agents.defaults.model:
            _set_in_file(path, ("agents", "defaults", "model"), chosen)
            print(f"Set agents.defaults.model to {chosen} in {path}")
        else:
            print(f"Kept {path}")
        ollama_from_env = _ollama_base_from_env(config)
        if ollama_from_env:
            _set_in_file(path, ("providers", "ollama", "api_base"), ollama_from_env)
            print(f"Set providers.ollama.api_base to {ollama_from_env} (from the environment) in {path}")
        if not config.gateway.token:  # neither the file nor PICO_GATEWAY_TOKEN gives the gateway one
            _set_in_file(path, ("gateway", "token"), _new_token())
            print(f"Wrote a new gateway.token to {path}")
        if owner_entry is not None:
            _name_owner_in_file(path, owner_entry.name)
    if owner_entry is not None:
        print(f"The owner is {owner_entry.name}: `picoora pair approve CODE --as {owner_entry.name}` "
              "lets in another account of yours.")

    _install_templates(workspace_path(config), force)
    _print_next_steps(path, config.agents.defaults.provider, chosen or config.agents.defaults.model, problem)
    if problem:
        raise typer.Exit(EXIT_FAILURE)  # set up, but a chat would fail now: scripts must not read "ready"


def _ollama_base_from_env(config: Config) -> str | None:
    """The Ollama address a PICO_ variable gives, when onboard set up Ollama with it: it goes into the file."""
    from picoora.config import env_override

    if config.agents.defaults.provider != "ollama":
        return None
    return config.providers.ollama.api_base if env_override(config, "providers", "ollama", "api_base") else None


def _mention_go_home(path: Path) -> None:
    from picoora.migrate import go_home_notice

    notice = go_home_notice(path)
    if notice:
        print(f"PicoOraClaw: {notice}")


def _effective_config(path: Path, force: bool) -> Config:
    """The config as picoora will see it (file + PICO_* environment). A broken file is an error,
    unless --force is about to replace it."""
    from picoora.config import Config, ConfigError, load_config

    try:
        return load_config(path)
    except ConfigError as err:
        if force:
            return Config()
        raise CLIError(f"{err}\nFix it, or start over with `picoora onboard --force`.", EXIT_USAGE) from None


def _choose_model(config: Config, interactive: bool, requested: str | None) -> tuple[str | None, str | None]:
    """(the model to use, why it cannot answer yet). The model: ``requested``, else one Ollama has pulled
    that can call tools; None keeps the configured one. The reason is None when a chat can start now."""
    if config.agents.defaults.provider != "ollama":
        return _choose_service_model(config, interactive, requested)
    from picoora.llm.base import LLMError, ProviderUnavailableError
    from picoora.llm.ollama_admin import list_models, native_base

    base = native_base(config.providers.ollama.api_base)
    try:
        models = list_models(base)
    except ProviderUnavailableError:
        print(INSTALL_HINT.format(base=base))
        return requested, f"Ollama does not answer at {base}: start it with `ollama serve`"
    except LLMError as err:  # something answers there, but not as Ollama does
        return requested, str(err)
    names = {m.name for m in models} | {m.name.removesuffix(":latest") for m in models}
    if requested:
        if requested not in names:
            return requested, f"the model {requested} is not pulled: run `ollama pull {requested}`"
        return requested, None
    capable = [m.name for m in models if m.supports_tools]
    configured = config.agents.defaults.model
    if not models:
        return None, f"Ollama answers at {base} but has no models yet: run `ollama pull qwen3`, then onboard again"
    if not capable:
        print("None of the models pulled in Ollama can call tools, which picoora needs for memory and files.")
        if configured in names:
            return None, None  # it answers, without tools; the notice says so
        return None, f"the model {configured} is not pulled: run `ollama pull qwen3`, then onboard again"
    default = configured if configured in capable else capable[0]
    if not interactive:
        print(f"Using model {default} (Ollama at {base}).")
        return default, None
    return _ask_model(models, default)


def _choose_service_model(config: Config, interactive: bool, requested: str | None) -> tuple[str, str | None]:
    """A model on an OpenAI-compatible service or Anthropic, and why it cannot answer yet (checked for real)."""
    from picoora.cli.onboard_provider import check_answers, choose_model, key_problem

    provider = config.agents.defaults.provider
    chosen = choose_model(config, provider, requested, interactive)
    problem = key_problem(config, provider) or check_answers(config, provider, chosen)
    if problem is None:
        print(f"Checked: {provider} answered with {chosen}.")
    return chosen, problem


def _ask_model(models: list[ModelInfo], default: str) -> tuple[str, str | None]:
    """The model picked by number or typed by name; a name not pulled yet is taken, with its pull command."""
    print("Models pulled in Ollama:")
    for number, info in enumerate(models, start=1):
        note = "" if info.supports_tools else "  (cannot call tools)"
        print(f"  {number}. {info.name}{note}")
    by_name = {m.name: m for m in models} | {m.name.removesuffix(":latest"): m for m in models}
    answer = typer.prompt("Model to use (number, or any name Ollama can pull)", default=default).strip()
    if answer.isdigit() and 1 <= int(answer) <= len(models):
        answer = models[int(answer) - 1].name
    picked = by_name.get(answer)
    if picked is None:
        print(f"{answer} is not pulled yet: run `ollama pull {answer}`")
        return answer, f"the model {answer} is not pulled: run `ollama pull {answer}`"
    if not picked.supports_tools:
        print(f"Note: {answer} cannot call tools, so it answers without memory, files or commands.")
    return answer, None


def _owner_entry(name: str) -> UserConfig:
    from pydantic import ValidationError

    from picoora.config import UserConfig

    try:
        return UserConfig(name=name.strip(), owner=True)
    except ValidationError:
        raise CLIError(f"--owner {name!r}: a name is 1-32 letters, digits, '.', '_' or '-' (starting with a letter "
                       "or digit)", EXIT_USAGE) from None


def _name_owner_in_file(path: Path, name: str) -> None:
    """The configured owner renamed, or a new owner entry; the file's other users are kept."""
    users = json.loads(path.read_text(encoding="utf-8-sig")).get("users") or []
    owner = next((user for user in users if isinstance(user, dict) and user.get("owner")), None)
    if owner is None:
        users.append({"name": name, "owner": True, "identities": []})
    else:
        owner["name"] = name
    _set_in_file(path, ("users",), users)


def _save_new(config: Config, path: Path) -> None:
    from picoora.config import ConfigError, save_config

    try:
        save_config(config, path)
    except ConfigError as err:
        raise CLIError(str(err)) from None


def _check_writable(folder: Path, fix: str) -> None:
    """Stop before asking anything (or reaching Ollama) when ``folder`` cannot be written: a file is made and
    removed in it, or in the nearest folder above it that exists (nothing is created)."""
    import tempfile

    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise CLIError(f"cannot write {folder} ({err.strerror or err}): {fix}.", EXIT_CANNOT_WRITE) from None


def _new_token() -> str:
    """The gateway's bearer token (``picoora gateway`` refuses to listen off loopback without one)."""
    import secrets

    return secrets.token_urlsafe(32)


def _set_in_file(path: Path, keys: tuple[str, ...], value: object) -> None:
    """Change only this one value in the file, so ${VAR} references and env-only values stay out of it."""
    from picoora.atomic import atomic_write_bytes

    data = json.loads(path.read_text(encoding="utf-8-sig"))  # already validated by load_config
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value
    try:
        atomic_write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode=0o600)
    except OSError as err:
        raise CLIError(f"cannot write {path}: {err.strerror or err}") from None


def _install_templates(workspace: Path, force: bool) -> None:
    from picoora.templates import install_workspace

    try:
        results = install_workspace(workspace, force=force)
    except OSError as err:
        raise CLIError(f"cannot write the workspace {workspace}: {err.strerror or err}") from None
    by_outcome: dict[str, list[str]] = {}
    for result in results:
        by_outcome.setdefault(result.outcome, []).append(result.path)
    print(f"Workspace {workspace}:")
    labels = {
        "created": "created",
        "updated": "updated to the new template",
        "overwritten": "overwritten (--force; your versions saved as NAME.bak)",
        "unchanged": "up to date",
        "kept": "kept your edits (--force replaces them)",
    }
    for outcome, label in labels.items():
        if outcome in by_outcome:
            print(f"  {label}: {', '.join(by_outcome[outcome])}")


def _print_next_steps(path: Path, provider: str, model: str, problem: str | None) -> None:
    from picoora.cli.invocation import picoora_command
    from picoora.providers import key_env

    command = picoora_command()  # `.venv/bin/picoora` after the quick start, which activates nothing
    if problem:
        print(f"\npicoora is set up, but cannot chat yet: {problem}.\n"
              f"Then check with `{command} status`. Model: {model} ({provider}). Settings: {path}")
        return
    variable = key_env(provider)
    if variable and os.environ.get(variable):
        print(f"The key comes from {variable} at every start: keep it exported (in ~/.profile, or the service's "
              "environment), or write it in the config.")
    print(
        "\npicoora is ready. Next steps:\n"
        f"  1. Tell it about yourself: edit USER.md in the workspace.\n"
        f"  2. Chat: {command} agent -m \"Hello!\"   (or just `{command} agent` for a conversation)\n"
        f"  3. Check the set-up any time: {command} status\n"
        f"Model: {model} ({provider}). Settings: {path}"
    )
