"""Bearer-token check for every API route but ``/health``; the comparison takes constant time."""

from __future__ import annotations

import hmac

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from picoora.gateway.errors import ApiError

_bearer = HTTPBearer(auto_error=False, description="gateway.token (or PICO_GATEWAY_TOKEN)")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def token_matches(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


async def require_token(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    if credentials is None:
        raise ApiError(401, "unauthorized", "missing token: send 'Authorization: Bearer <gateway.token>'", _CHALLENGE)
    if not token_matches(credentials.credentials, request.app.state.gateway.token):
        raise ApiError(401, "unauthorized", "wrong token", _CHALLENGE)
