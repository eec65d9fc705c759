"""Speech to text through an OpenAI-compatible ``POST {base_url}/audio/transcriptions``: what OpenAI, Groq and
the local whisper servers (faster-whisper-server / speaches, whisper.cpp's server, LocalAI) all offer.

One multipart request (``file``, ``model``, ``response_format=json``); the answer's ``text`` is the
transcript. The SDKs are not used: the ``openai`` client would do it too, but the request is this one
POST, and httpx gives its errors and timeouts plainly for a reply the user reads.
"""

from __future__ import annotations

from typing import Any

import httpx

from picoora.config import TranscriptionConfig
from picoora.tls import tls_context

NOT_CONFIGURED = ("I got a voice message, but speech-to-text is not set up, so I cannot hear it. Set "
                  "transcription.base_url (an OpenAI-compatible /audio/transcriptions endpoint: a local "
                  "whisper server such as http://localhost:8000/v1, or https://api.openai.com/v1 with "
                  "transcription.api_key), or write instead.")
MAX_TRANSCRIPT_CHARS = 20_000  # a transcript longer than this is not a voice note's: cut, not refused


class TranscriptionError(Exception):
    """The endpoint could not be reached or did not give a transcript; the message is for the user."""


class Transcriber:
    def __init__(self, config: TranscriptionConfig):
        self.config = config
        self.url = f"{config.base_url.rstrip('/')}/audio/transcriptions"

    async def transcribe(self, audio: bytes, filename: str, mime: str) -> str:
        """The words spoken in ``audio``; ``TranscriptionError`` saying why when there are none."""
        config = self.config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        data: dict[str, Any] = {"model": config.model, "response_format": "json"}
        if config.language:
            data["language"] = config.language
        try:
            async with httpx.AsyncClient(timeout=config.timeout_seconds, verify=await tls_context()) as client:
                response = await client.post(self.url, headers=headers, data=data,
                                             files={"file": (filename, audio, mime)})
        except httpx.TimeoutException:
            raise TranscriptionError(f"the speech-to-text server at {config.base_url} did not answer within "
                                     f"{config.timeout_seconds:g} s (transcription.timeout_seconds)") from None
        except httpx.HTTPError as exc:
            raise TranscriptionError(f"cannot reach the speech-to-text server at {config.base_url} "
                                     f"({type(exc).__name__}): check transcription.base_url") from None
        if response.status_code in (401, 403):
            raise TranscriptionError(f"the speech-to-text server refused the key ({response.status_code}): "
                                     "check transcription.api_key")
        if response.status_code >= 400:
            raise TranscriptionError(f"the speech-to-text server answered {response.status_code}: "
                                     f"{_detail(response)}")
        try:
            text = response.json().get("text")
        except (ValueError, AttributeError):
            text = None
        if not isinstance(text, str):
            raise TranscriptionError("the speech-to-text server's answer has no transcript (is transcription."
                                     "base_url an OpenAI-compatible endpoint?)")
        return text.strip()[:MAX_TRANSCRIPT_CHARS]


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if not isinstance(body, dict):
        return response.reason_phrase
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error or body.get("detail")
    return str(message or response.reason_phrase)[:200]
