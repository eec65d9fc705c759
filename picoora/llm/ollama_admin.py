"""Quick questions to a local Ollama for ``onboard`` and ``status``: is it up, which models are pulled,
which of them can call tools. Short timeouts, so a missing Ollama costs about a second, not a hang.

Also the Ollama facts the chat provider shares: base-URL normalisation, how to read a model's
capabilities, and the hints people need when Ollama is down or a model is not pulled.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import ollama

from picoora.config import DEFAULT_OLLAMA_BASE
from picoora.llm.base import LLMError, ModelNotFoundError
from picoora.llm.retry import error_for_status, not_an_api, short_detail, transport_error, web_page_title

ADMIN_TIMEOUT = httpx.Timeout(3.0, connect=1.0)
START_HINT = (
    "Start it with `ollama serve` (install it from https://ollama.com/download if needed), "
    "or set providers.ollama.api_base to where it runs."
)
TOOL_MODEL_EXAMPLES = "qwen3, llama3.1, mistral-nemo"


@dataclass(frozen=True)
class ModelInfo:
    name: str
    supports_tools: bool


def native_base(api_base: str) -> str:
    """The native API root: a configured ``.../v1`` (Ollama's OpenAI-compatible path) is dropped."""
    base = (api_base or DEFAULT_OLLAMA_BASE).rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def client_options(base: str) -> dict[str, bool]:
    """Options for ``ollama`` clients. On a plain-http base with redirects off no TLS can ever happen,
    so the CA bundle is not loaded (that costs ~25 ms per client, on every one-shot CLI turn)."""
    return {"verify": False, "follow_redirects": False} if base.startswith("http://") else {}


def capabilities_of(shown: ollama.ShowResponse) -> frozenset[str] | None:
    """What a model can do, from /api/show. Ollama before ``capabilities`` existed decided tool
    support from the chat template, so that is read the same way. None: cannot tell."""
    if shown.capabilities is not None:
        return frozenset(shown.capabilities)
    if shown.template:
        return frozenset({"completion", "tools"} if ".Tools" in shown.template else {"completion"})
    return None


def not_pulled(model: str, base: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"Model '{model}' is not available in Ollama at {base}. Pull it with: ollama pull {model}", status=404
    )


def classify_ollama_error(exc: Exception, *, base: str, model: str, retry_after: float | None = None) -> LLMError:
    """A picoora error for anything the ``ollama`` client raised, by status code or exception type."""
    where = f"Ollama at {base}"
    if isinstance(exc, ollama.ResponseError):
        title = web_page_title(str(exc.error))
        if title is not None:
            return not_an_api(where, exc.status_code, title, "providers.ollama.api_base")
        if exc.status_code == 404:
            return not_pulled(model, base)
        if exc.status_code < 0:  # an error line inside a stream, after a 200
            return LLMError(f"{where} failed while answering: {short_detail(exc.error)}")
        return error_for_status(
            exc.status_code,
            f"{where} answered {exc.status_code}: {short_detail(exc.error)}",
            retry_after=retry_after,
            auth_hint="Ollama itself needs no key; check what sits in front of it (a proxy, or OLLAMA_API_KEY)",
        )
    return transport_error(exc, where=where, unavailable_hint=START_HINT) or LLMError(
        f"{where} failed: {type(exc).__name__}: {exc}"
    )


def list_models(api_base: str = DEFAULT_OLLAMA_BASE) -> list[ModelInfo]:
    """The pulled models and whether each can call tools. Raises ``ProviderUnavailableError`` when Ollama is down."""
    base = native_base(api_base)
    with _client(base) as client:
        try:
            names = [m.model for m in client.list().models if m.model]
        except Exception as exc:  # noqa: BLE001 - classified
            raise classify_ollama_error(exc, base=base, model="") from exc
        shown = {name: _show(client, base, name) for name in names}
    # a model deleted between the two questions is simply left out
    return [ModelInfo(name, "tools" in (capabilities_of(s) or ())) for name, s in shown.items() if s is not None]


def model_available(api_base: str, model: str) -> bool:
    """Whether ``model`` is pulled. Raises ``ProviderUnavailableError`` when Ollama is down."""
    base = native_base(api_base)
    with _client(base) as client:
        return _show(client, base, model) is not None


def _show(client: ollama.Client, base: str, model: str) -> ollama.ShowResponse | None:
    """/api/show for ``model``; None when Ollama does not have it."""
    try:
        return client.show(model)
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            return None
        raise classify_ollama_error(exc, base=base, model=model) from exc
    except Exception as exc:  # noqa: BLE001 - classified
        raise classify_ollama_error(exc, base=base, model=model) from exc


def _client(api_base: str) -> ollama.Client:
    base = native_base(api_base)
    return ollama.Client(host=base, timeout=ADMIN_TIMEOUT, **client_options(base))
