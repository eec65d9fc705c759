"""One error shape for every response, OpenAI's: ``{"error": {"message", "type", "param", "code"}}``, never
a stack trace, and never a secret: a provider or store error may quote an API key or a DSN, so every message
is scrubbed on the way out. ``param`` names the request field at fault (or is null); ``code`` is a
machine-readable reason (the ``type`` unless something more precise applies). A malformed body is 400."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from picoora.llm.base import LLMError, ProviderUnavailableError
from picoora.secrets import scrub
from picoora.store.base import StoreError

log = logging.getLogger("picoora.gateway")


class ApiError(Exception):
    def __init__(self, status: int, type_: str, message: str, headers: dict[str, str] | None = None, *,
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.type, self.message, self.headers = status, type_, message, headers
        self.param, self.code = param, code


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorResponse(BaseModel):
    error: ErrorBody


def error_response(status: int, type_: str, message: str, headers: dict[str, str] | None = None, *,
                   param: str | None = None, code: str | None = None) -> JSONResponse:
    body = {"message": message, "type": type_, "param": param, "code": code or type_}
    return JSONResponse({"error": body}, status_code=status, headers=headers)


# Documented on every route, so the OpenAPI document (and the fuzzer reading it) knows the error shapes.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in (
        (400, "Malformed body or parameters, or a bad request"),
        (401, "Missing or wrong token"),
        (403, "Not allowed to this person (only the owner may)"),
        (404, "Not found"),
        (413, "Body or message too large"),
        (503, "Shutting down or not ready"),
    )
}

# Where an OAuth client (the MCP Inspector) looks after a 401: discovery, then dynamic client registration.
# picoora has no OAuth; the 404 there says what to send instead, since that is the last thing such a client shows.
OAUTH_DISCOVERY = ("/.well-known/oauth-", "/.well-known/openid-configuration")
OAUTH_PATHS = frozenset({"/register", "/authorize", "/token"})
NO_OAUTH = ("picoora has no OAuth: send 'Authorization: Bearer <token>' (gateway.token, or a person's token from "
            "`picoora token create NAME`); in the MCP Inspector, open Authentication and paste it as the Bearer Token")

_STATUS_TYPES = {400: "bad_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
                 413: "too_large", 415: "unsupported_media_type"}


def install_error_handlers(app: FastAPI, secrets: Iterable[str] = ()) -> None:
    """The handlers of every error; ``secrets`` (the config's, the token) are scrubbed from each message."""
    known = tuple(secrets)

    def out(status: int, type_: str, message: str, headers: dict[str, str] | None = None, *,
            param: str | None = None, code: str | None = None) -> JSONResponse:
        return error_response(status, type_, scrub(message, known), headers, param=param, code=code)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return out(exc.status, exc.type, exc.message, exc.headers, param=exc.param, code=exc.code)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        path = request.url.path
        if exc.status_code == 404 and message == "Not Found" and path.startswith("/v1/"):
            message = f"no endpoint {request.method} {path}; the endpoints are: {_endpoints(request.app)}"
        elif exc.status_code == 404 and message == "Not Found" and _is_oauth(path):
            message = NO_OAUTH
        return out(exc.status_code, _STATUS_TYPES.get(exc.status_code, "http_error"), message,
                   getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return out(400, "invalid_request", _validation_text(exc), param=_first_param(exc), code="invalid_value")

    @app.exception_handler(StoreError)
    async def _store_down(request: Request, exc: StoreError) -> JSONResponse:
        return out(503, "store_unavailable", str(exc))

    @app.exception_handler(LLMError)
    async def _model_problem(request: Request, exc: LLMError) -> JSONResponse:
        if isinstance(exc, ProviderUnavailableError):
            return out(503, "model_unavailable", str(exc))
        return out(400, "model_unusable", str(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(500, "internal_error", "the gateway failed on this request; its log says why")


def _is_oauth(path: str) -> bool:
    return path.rstrip("/") in OAUTH_PATHS or path.startswith(OAUTH_DISCOVERY)


def _endpoints(app: FastAPI) -> str:
    """The routes under /v1 as "METHOD path", from the OpenAPI document (built once, then kept by FastAPI)."""
    paths = app.openapi().get("paths", {})
    return ", ".join(f"{method.upper()} {path}" for path, operations in sorted(paths.items())
                     if path.startswith("/v1/") for method in operations)


def _first_param(exc: RequestValidationError) -> str | None:
    for error in exc.errors()[:1]:
        where = [str(part) for part in error.get("loc", ()) if part not in ("body", "query", "path", "header")]
        return ".".join(where) or None
    return None


def _validation_text(exc: RequestValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "malformed request"
