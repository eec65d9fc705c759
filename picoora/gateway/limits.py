"""Size limits: a request body over ``max_bytes`` gets 413 before (or while) it is read, never buffered
whole; a chat message or memory over ``gateway.max_message_chars`` gets 413 too."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from picoora.gateway.errors import ApiError, error_response


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        refusal = None
        if declared is not None and not declared.isdigit():
            refusal = error_response(400, "bad_request", "bad Content-Length")
        elif declared is not None and int(declared) > self.max_bytes:
            refusal = error_response(413, "too_large", self._too_large())
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:  # a chunked body without Content-Length that keeps coming
                raise HTTPException(413, self._too_large())
            return message

        await self.app(scope, counting_receive, send)

    def _too_large(self) -> str:
        return f"request body larger than {self.max_bytes} bytes (gateway.max_body_bytes)"


def check_message_size(text: str, limit: int) -> None:
    if len(text) > limit:
        raise ApiError(413, "message_too_large", f"message longer than {limit:,} characters: the gateway's owner "
                       "raises gateway.max_message_chars in config.json (or PICO_GATEWAY_MAX_MESSAGE_CHARS) "
                       "and restarts it")
