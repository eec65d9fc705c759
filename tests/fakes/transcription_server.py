"""A fake OpenAI-compatible speech-to-text endpoint (``POST /v1/audio/transcriptions``, multipart) on
127.0.0.1: it answers ``{"text": ...}`` with the scripted transcript, or a scripted error status, or
stays silent for ``delay`` seconds (a server that times out). ``uploads`` records each request's fields
and file as it arrived."""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP

from tests.fakes._http import Exchange, FakeServer


@dataclass
class Upload:
    fields: dict[str, str]
    filename: str
    mime: str
    data: bytes
    authorization: str


def multipart_fields(content_type: str, raw: bytes) -> dict[str, tuple[str, str, bytes]]:
    """name -> (filename, content type, bytes) of a multipart/form-data body."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    parts = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        parts[str(name)] = (part.get_filename() or "", part.get_content_type(), part.get_payload(decode=True) or b"")
    return parts


class FakeTranscription(FakeServer):
    def __init__(self, transcript: str = "", status: int = 200, delay: float = 0.0, port: int = 0):
        super().__init__(port=port)
        self.transcript, self.status, self.silence = transcript, status, delay
        self.uploads: list[Upload] = []

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def route(self, exchange: Exchange) -> None:
        if (exchange.method, exchange.path) != ("POST", "/v1/audio/transcriptions"):
            exchange.send_json(404, {"error": {"message": "no such route"}})
            return
        parts = multipart_fields(exchange.headers.get("content-type", ""), exchange.body)
        filename, mime, data = parts.pop("file", ("", "", b""))
        self.uploads.append(Upload({k: v[2].decode() for k, v in parts.items()}, filename, mime, data,
                                   exchange.headers.get("authorization", "")))
        if self.silence:
            time.sleep(self.silence)
        if self.status != 200:
            exchange.send_json(self.status, {"error": {"message": f"fake failure {self.status}"}})
            return
        exchange.send_json(200, {"text": self.transcript})
