"""Retries shared by every provider: classify a failure by status code or exception type, back off, try again.

Only 408/409/429/5xx answers, timeouts and dropped connections are retried; 401/403 become
``AuthenticationError`` at once, 413 ``ContextOverflowError``, a refused connection
``ProviderUnavailableError``. A ``Retry-After`` (or ``retry-after-ms``) header sets the pause, capped.
Nothing here reads error messages, except to recognise an HTML page: that is a web server or proxy
answering instead of the API (a wrong ``api_base``), which no retry fixes and whose page is not worth
printing. Sleeping and jitter are injectable so tests never wait.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from time import time
from types import ModuleType
from typing import TypeVar

from picoora.llm.base import (
    AuthenticationError,
    ContextOverflowError,
    LLMError,
    ModelNotFoundError,
    ProviderUnavailableError,
    RetryableError,
)

log = logging.getLogger("picoora.llm")

T = TypeVar("T")
RETRY_STATUSES = frozenset({408, 409, 429})  # plus every 5xx


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 0.5  # seconds before the first retry, doubled each time
    max_delay: float = 8.0
    max_retry_after: float = 60.0  # a server asking for longer is not worth waiting for in a chat turn
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)
    jitter: Callable[[], float] = field(default=random.random, compare=False)  # in [0, 1)

    def delay(self, retry_number: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``retry_number`` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * 2**retry_number)
        return ceiling * (0.5 + self.jitter() / 2)  # "equal jitter": never zero, spreads clients apart


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None when absent or unreadable."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after") or headers.get("Retry-After")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (TypeError, ValueError, IndexError):
        return None


# Two bounded searches, not one ``<title[^>]*>(.*?)</title>``: that pattern retried from every "<title" to the
# end of the body, so 64 KB of "<title>x" took 6 s and 256 KB 100 s (a wrong api_base may be any page).
_TITLE_OPEN = re.compile(r"<title[^<>]{0,200}>", re.IGNORECASE)
_TITLE_CLOSE = re.compile(r"</title", re.IGNORECASE)
TITLE_SCAN_CHARS = 65_536  # a title sits in the head: looked for in the page's start only
DETAIL_CHARS = 300  # of a server's error text, in a message


def web_page_title(body: str) -> str | None:
    """None unless ``body`` is an HTML page; then its title ("" when it has none)."""
    head = body.lstrip()[:512].lower()
    if not head.startswith("<") or not any(tag in head for tag in ("<html", "<!doctype html", "<head", "<body")):
        return None
    opened = _TITLE_OPEN.search(body, 0, TITLE_SCAN_CHARS)
    closed = _TITLE_CLOSE.search(body, opened.end(), TITLE_SCAN_CHARS) if opened else None
    return " ".join(body[opened.end():closed.start()].split())[:80] if opened and closed else ""


def not_an_api(where: str, status: int, title: str, setting: str) -> LLMError:
    """A web page came back where an API answer belongs: the address is wrong, retrying will not help."""
    page = f"a web page ({title!r})" if title else "a web page"
    return LLMError(f"{where} answered {status} with {page}, not an API response: {setting} points at some other "
                    "server (or a proxy in front of it). Check the address and port.", status=status)


def short_detail(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


def error_for_status(status: int, message: str, *, retry_after: float | None = None, auth_hint: str = "") -> LLMError:
    """The picoora error for an HTTP error status (providers refine 404 and 400 themselves).
    ``auth_hint`` (which setting holds the key) is added to 401/403 errors."""
    if status in (401, 403):
        return AuthenticationError(f"{message}. {auth_hint}" if auth_hint else message, status=status)
    if status == 413:
        return ContextOverflowError(message, status=status)
    if status in RETRY_STATUSES or status >= 500:
        return RetryableError(message, status=status, retry_after=retry_after)
    return LLMError(message, status=status)


def transport_error(exc: BaseException, *, where: str, unavailable_hint: str) -> LLMError | None:
    """Classify a network-level failure by exception type (httpx, httpx2 and builtin socket errors).

    ``where`` names the endpoint ("Ollama at http://..."); ``unavailable_hint`` says what to do
    when nothing answers there. None when ``exc`` is not a transport error.
    """
    for module in (sys.modules.get("httpx"), sys.modules.get("httpx2")):
        if module is None:
            continue
        if isinstance(exc, module.TimeoutException):  # includes connect timeouts
            return RetryableError(f"{where} did not answer in time ({type(exc).__name__})")
        if isinstance(exc, module.ConnectError):
            return ProviderUnavailableError(f"Cannot connect to {where}. {unavailable_hint}")
        if isinstance(exc, (module.NetworkError, module.RemoteProtocolError)):
            return RetryableError(f"The connection to {where} broke ({type(exc).__name__})")
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        return RetryableError(f"The connection to {where} broke ({type(exc).__name__})")
    if isinstance(exc, ConnectionError):  # refused, or a client library's own "could not connect"
        return ProviderUnavailableError(f"Cannot connect to {where}. {unavailable_hint}")
    if isinstance(exc, TimeoutError):
        return RetryableError(f"{where} did not answer in time")
    return None


def classify_api_error(
    exc: Exception,
    sdk: ModuleType,
    *,
    where: str,
    model: str,
    detail: str,
    model_hint: str,
    auth_hint: str,
    unavailable_hint: str,
    base_setting: str,
) -> LLMError:
    """Classify what the ``openai`` or ``anthropic`` client raised: both generate the same exception
    family (APIStatusError with the response, APITimeoutError, APIConnectionError wrapping the cause).
    ``detail`` is the server's own explanation, for the message; ``base_setting`` names the address key."""
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        title = web_page_title(exc.response.text)
        if title is not None:
            return not_an_api(where, status, title, base_setting)
        detail = short_detail(detail)
        if status == 404:  # no such model, or no such API at this address: the server's words tell which
            return ModelNotFoundError(
                f"{where} answered 404 ({detail}) for model '{model}': either the model does not exist there, or "
                f"{base_setting} is not the API's address (most OpenAI-compatible servers end in /v1). {model_hint}",
                status=404)
        return error_for_status(
            status,
            f"{where} answered {status}: {detail}",
            retry_after=parse_retry_after(exc.response.headers),
            auth_hint=auth_hint,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return RetryableError(f"{where} did not answer in time")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
        return transport_error(cause, where=where, unavailable_hint=unavailable_hint) or RetryableError(
            f"The connection to {where} failed: {exc}"
        )
    return transport_error(exc, where=where, unavailable_hint=unavailable_hint) or LLMError(
        f"{where} failed: {type(exc).__name__}: {exc}"
    )


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    classify: Callable[[Exception], LLMError],
    policy: RetryPolicy,
    output_started: Callable[[], bool] = lambda: False,
) -> T:
    """Run ``attempt`` until it succeeds, its failure is not retryable, or the retries are spent.

    ``output_started`` tells whether streamed text already reached the user: such an answer is not
    retried, since a second attempt would repeat what was shown.
    """
    retry = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:  # noqa: BLE001 - classified below, never swallowed
            error = exc if isinstance(exc, LLMError) else classify(exc)
            if error.retryable and output_started():
                error = LLMError(f"{error}; the answer broke off midway, so it was not retried", status=error.status)
            elif error.retryable and retry >= policy.max_retries:
                attempts = f"{retry + 1} attempt" + ("s" if retry else "")
                error = RetryableError(f"{error} (gave up after {attempts})", status=error.status,
                                       retry_after=error.retry_after)
            elif error.retryable:
                pause = policy.delay(retry, error.retry_after)
                log.info("retrying in %.1fs (retry %d of %d): %s", pause, retry + 1, policy.max_retries, error)
                await policy.sleep(pause)
                retry += 1
                continue
            if error is exc:
                raise
            raise error from exc
