"""Who is calling: the gateway token is the owner, a person's API token (``picoora token``) that person.

Every route but ``/health`` and ``/ready`` depends on ``caller`` (through ``require_token`` where only
"authenticated" matters; ``/ready`` on ``caller_if_any``: without a token it gives the status alone);
FastAPI runs it once per request however many dependencies name it. The gateway token is compared in
constant time; a person's token is looked up by its hash in the owner's store on every request (one state
key), so a token made or revoked from the CLI counts from the next request on.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from picoora.gateway.errors import ApiError
from picoora.identities import Person  # at run time: FastAPI reads the dependencies' annotations

if TYPE_CHECKING:
    from picoora.gateway.state import Gateway

_bearer = HTTPBearer(auto_error=False, description="gateway.token (or PICO_GATEWAY_TOKEN), or a person's API token")
CHALLENGE = {"WWW-Authenticate": "Bearer"}  # plain Bearer: no OAuth to discover
MISSING = ("missing token: send 'Authorization: Bearer <token>' (gateway.token, or a person's token from "
           "`picoora token create NAME`)")
WRONG = "wrong or revoked token: send 'Authorization: Bearer <token>' with gateway.token or a person's API token"


def token_matches(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


async def person_of_token(gateway: Gateway, token: str) -> Person | None:
    """The person ``token`` speaks for, or None."""
    if token_matches(token, gateway.token):
        return gateway.owner
    assistant = gateway.assistant
    if assistant is None:  # shutting down: no store to ask
        return None
    return await assistant.astore.run(gateway.api_tokens().person_of, token)


async def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Person:
    """The person the request acts as; 401 without a token that names one."""
    if credentials is None:
        raise ApiError(401, "unauthorized", MISSING, CHALLENGE)
    person = await person_of_token(request.app.state.gateway, credentials.credentials)
    if person is None:
        raise ApiError(401, "unauthorized", WRONG, CHALLENGE)
    request.state.person = person
    return person


async def caller_if_any(request: Request,
                        credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> Person | None:
    """None for a request without an Authorization header (``/ready``'s load balancer); else ``caller``: a
    header that names nobody is still 401, never taken for an anonymous request."""
    if "authorization" not in request.headers:
        return None
    return await caller(request, credentials)


async def require_token(_person: Person = Depends(caller)) -> None:
    """For routes that need an authenticated caller, whoever it is."""
