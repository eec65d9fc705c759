"""``picoora onboard`` for a provider other than Ollama: which one (``--provider`` or a question), which model,
and one short request to see that the key and the model work.

The question offers Ollama, each OpenAI-compatible service whose key variable is set (OPENROUTER_API_KEY, ...)
and Anthropic; any other preset is one ``--provider NAME`` away. Keys are read from the environment at every
start, so onboard never writes one into the config file.
"""

from __future__ import annotations

import os

import typer

from picoora.cli.errors import EXIT_USAGE, CLIError
from picoora.config import Config
from picoora.providers import ALIASES, PRESETS, key_env, provider_names

DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5"}
CHECK_SECONDS = 60.0  # the key check's whole budget (a hosted model's first answer; a local one loading)


def provider_choices() -> list[tuple[str, str]]:
    """(provider, label) for the question: Ollama, the keyed services whose variable is set, Anthropic."""
    choices = [("ollama", "Ollama, on this machine (no key)")]
    for name in ("openai", *PRESETS):
        variable = key_env(name)
        hosted = PRESETS[name].needs_key if name in PRESETS else True
        if hosted and variable and os.environ.get(variable):
            choices.append((name, f"{_label(name)} (key from {variable})"))
    variable = key_env("anthropic")
    found = "key from" if os.environ.get(variable) else "needs"
    choices.append(("anthropic", f"Anthropic ({found} {variable})"))
    return choices


def choose_provider(config: Config, requested: str | None, ask: bool) -> str:
    """``requested`` (checked), else the answer to the question when ``ask``, else the configured one."""
    if requested:
        name = ALIASES.get(requested.lower(), requested.lower())
        if name not in provider_names():
            raise CLIError(f"unknown provider {requested!r}: use ollama, openai or anthropic, or a preset of the "
                           f"OpenAI-compatible one: {', '.join(PRESETS)}", EXIT_USAGE)
        return name
    if not ask:
        return config.agents.defaults.provider
    choices = provider_choices()
    print("Where should picoora's model run?")
    for number, (_, label) in enumerate(choices, start=1):
        print(f"  {number}. {label}")
    print(f"  (others: picoora onboard --provider NAME, with NAME one of {', '.join(PRESETS)})")
    while True:
        answer = typer.prompt("Provider (number or name)", default="1").strip().lower()
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1][0]
        if ALIASES.get(answer, answer) in provider_names():
            return ALIASES.get(answer, answer)
        print(f"Not a provider: {answer}. Type a number from the list, or a name such as groq")


def choose_model(config: Config, provider: str, requested: str | None, ask: bool) -> str:
    """The model for a provider other than Ollama: ``requested``, the configured one (empty when onboard just
    switched the provider), else a known default (a local server: the first model it serves); asked when ``ask``."""
    if requested:
        return requested
    preset = PRESETS.get(provider)
    default = (config.agents.defaults.model or DEFAULT_MODELS.get(provider, "")
               or (preset.example_model if preset else ""))
    if not default:
        default = _served_model(config, provider) or "default"
    if not ask:
        print(f"Using model {default} ({_label(provider)}).")
        return default
    return typer.prompt(f"Model on {_label(provider)}", default=default).strip() or default


def key_problem(config: Config, provider: str) -> str | None:
    """Why ``provider`` cannot be asked at all (no key for a hosted service), before any request."""
    settings = getattr(config.providers, provider)
    needs_key = PRESETS[provider].needs_key if provider in PRESETS else provider in ("openai", "anthropic")
    if settings.api_key or not needs_key or (provider == "openai" and settings.api_base):
        return None
    variable = key_env(provider)
    if variable and os.environ.get(variable):  # set, but not sent: the base is another host's
        return (f"{variable} is set but not used: providers.{provider}.api_base is {settings.api_base}, not "
                f"{_label(provider)}'s own endpoint, and a key goes only to its own host. Set "
                f"providers.{provider}.api_key for that server (or unset the api_base), then run "
                f"`picoora onboard --provider {provider}` again")
    return (f"no API key for {_label(provider)}: export {variable}=... (or set providers.{provider}.api_key), "
            f"then run `picoora onboard --provider {provider}` again")


def check_answers(config: Config, provider: str, model: str) -> str | None:
    """One short request through the real client: None when the model answered, else what went wrong."""
    import asyncio

    from picoora.llm import create_llm
    from picoora.llm.base import AuthenticationError, LLMError
    from picoora.llm.retry import RetryPolicy
    from picoora.messages import Message

    llm = create_llm(config, provider=provider, model=model, retry=RetryPolicy(max_retries=0))

    async def ask() -> None:
        try:
            await asyncio.wait_for(llm.chat([Message("user", "Reply with the word OK.")]), CHECK_SECONDS)
        finally:
            await llm.close()

    try:
        asyncio.run(ask())
    except AuthenticationError as err:
        return f"{_label(provider)} refused the key ({err})"
    except LLMError as err:
        return f"{_label(provider)} did not answer with {model}: {err}"
    except asyncio.TimeoutError:
        return f"{_label(provider)} sent no answer within {CHECK_SECONDS:g} seconds"
    return None


def _served_model(config: Config, provider: str) -> str | None:
    """The first model a local OpenAI-compatible server lists at /models (None when it does not answer)."""
    import httpx

    settings = getattr(config.providers, provider)
    try:
        response = httpx.get(settings.api_base.rstrip("/") + "/models", timeout=3.0)
        models = response.json().get("data") or []
        return str(models[0]["id"]) if response.status_code == 200 and models else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _label(provider: str) -> str:
    return PRESETS[provider].label if provider in PRESETS else {"openai": "OpenAI", "anthropic": "Anthropic",
                                                               "ollama": "Ollama"}[provider]
