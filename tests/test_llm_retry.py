"""Retry policy and error classification shared by the providers (no network here)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest

from picoora.llm.base import (
    AuthenticationError,
    ContextOverflowError,
    LLMError,
    ProviderUnavailableError,
    RetryableError,
)
from picoora.llm.retry import RetryPolicy, call_with_retries, error_for_status, parse_retry_after, transport_error
from tests.llm_support import Sleeps


def policy(max_retries: int = 3, **kwargs) -> tuple[RetryPolicy, Sleeps]:
    sleeps = Sleeps()
    return RetryPolicy(max_retries=max_retries, sleep=sleeps, jitter=lambda: 1.0, **kwargs), sleeps


def test_retry_after_is_read_as_seconds_milliseconds_or_an_http_date():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= parse_retry_after({"retry-after": later}) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None


def test_backoff_doubles_with_jitter_and_retry_after_wins_but_is_capped():
    fixed = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=lambda: 1.0)
    assert [fixed.delay(n, None) for n in range(4)] == [0.5, 1.0, 2.0, 3.0]
    low = RetryPolicy(base_delay=1.0, jitter=lambda: 0.0)
    assert low.delay(0, None) == 0.5  # equal jitter: never below half the step
    assert fixed.delay(0, 4.0) == 4.0
    assert RetryPolicy(max_retry_after=10).delay(0, 3600) == 10


@pytest.mark.parametrize(
    "status, kind",
    [
        (401, AuthenticationError),
        (403, AuthenticationError),
        (413, ContextOverflowError),
        (429, RetryableError),
        (408, RetryableError),
        (500, RetryableError),
        (503, RetryableError),
        (529, RetryableError),
        (400, LLMError),
        (422, LLMError),
    ],
)
def test_status_codes_map_to_error_kinds(status, kind):
    error = error_for_status(status, "boom", retry_after=2.0)
    assert type(error) is kind and error.status == status
    assert error.retryable == (kind is RetryableError)


def test_auth_errors_say_where_the_key_goes():
    error = error_for_status(401, "rejected", auth_hint="Set providers.x.api_key")
    assert str(error) == "rejected. Set providers.x.api_key"


def test_transport_errors_are_classified_by_exception_type():
    where = dict(where="X at http://h", unavailable_hint="Start X.")
    refused = transport_error(httpx.ConnectError("nope"), **where)
    assert isinstance(refused, ProviderUnavailableError) and "Start X." in str(refused)
    assert isinstance(transport_error(httpx.ConnectTimeout("slow"), **where), RetryableError)
    assert isinstance(transport_error(httpx.ReadTimeout("slow"), **where), RetryableError)
    assert isinstance(transport_error(httpx.RemoteProtocolError("cut"), **where), RetryableError)
    assert isinstance(transport_error(httpx.ReadError("reset"), **where), RetryableError)
    assert isinstance(transport_error(ConnectionResetError(), **where), RetryableError)
    assert isinstance(transport_error(ConnectionRefusedError(), **where), ProviderUnavailableError)
    assert transport_error(ValueError("not network"), **where) is None


def _script(*outcomes):
    """An attempt function that raises or returns the given outcomes in order; counts calls."""
    calls = []

    async def attempt():
        outcome = outcomes[len(calls)]
        calls.append(outcome)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return attempt, calls


def _classify(exc: Exception) -> LLMError:
    return error_for_status(getattr(exc, "status", 0), str(exc), retry_after=getattr(exc, "retry_after", None))


class StatusError(Exception):
    def __init__(self, status: int, retry_after: float | None = None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


def test_retryable_failures_are_retried_with_the_servers_pause_then_succeed():
    retry, sleeps = policy()
    attempt, calls = _script(StatusError(429, retry_after=2.0), StatusError(503), "answer")
    assert asyncio.run(call_with_retries(attempt, classify=_classify, policy=retry)) == "answer"
    assert len(calls) == 3 and sleeps == [2.0, 1.0]


def test_non_retryable_failures_raise_at_once_with_the_original_as_cause():
    retry, sleeps = policy()
    attempt, calls = _script(StatusError(401), "never")
    with pytest.raises(AuthenticationError) as caught:
        asyncio.run(call_with_retries(attempt, classify=_classify, policy=retry))
    assert len(calls) == 1 and sleeps == []
    assert isinstance(caught.value.__cause__, StatusError)


def test_giving_up_after_max_retries_says_how_many_attempts():
    retry, sleeps = policy(max_retries=2)
    attempt, calls = _script(StatusError(500), StatusError(500), StatusError(500), "never")
    with pytest.raises(RetryableError, match="gave up after 3 attempts"):
        asyncio.run(call_with_retries(attempt, classify=_classify, policy=retry))
    assert len(calls) == 3 and len(sleeps) == 2


def test_a_stream_that_broke_after_output_reached_the_user_is_not_retried():
    retry, sleeps = policy()
    attempt, calls = _script(StatusError(502), "never")
    with pytest.raises(LLMError, match="broke off midway") as caught:
        asyncio.run(call_with_retries(attempt, classify=_classify, policy=retry, output_started=lambda: True))
    assert not caught.value.retryable and len(calls) == 1 and sleeps == []


def test_errors_already_classified_by_the_provider_pass_through_unchanged():
    retry, _ = policy()
    original = ProviderUnavailableError("Ollama is down")
    attempt, _ = _script(original)
    with pytest.raises(ProviderUnavailableError) as caught:
        asyncio.run(call_with_retries(attempt, classify=_classify, policy=retry))
    assert caught.value is original
