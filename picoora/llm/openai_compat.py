"""Any OpenAI-compatible chat API through the ``openai`` client: OpenAI, OpenRouter, Groq, DeepSeek,
Gemini's OpenAI endpoint, vLLM, llama.cpp's server, the OCI GenAI proxy.

Tool-call arguments arrive as JSON strings; broken JSON is kept whole under ``RAW_ARGUMENTS_KEY``.
Streams are SSE, with tool-call pieces assembled by index and ``reasoning_content`` (or
``reasoning``) forwarded as reasoning. A model that refuses ``max_tokens`` or ``temperature``
(OpenAI's reasoning models answer 400 ``unsupported_parameter``/``unsupported_value`` naming the
parameter) is asked again with ``max_completion_tokens`` / without ``temperature``, and that is remembered.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import openai

from picoora.llm.base import (
    DEFAULT_OPTIONS,
    AuthenticationError,
    CallOptions,
    ContextOverflowError,
    LLMError,
    LLMResponse,
    OnDelta,
    ToolSchema,
    Usage,
)
from picoora.llm.common import (
    DeltaSink,
    PerLoopClient,
    ProviderSettings,
    base64_of,
    new_call_id,
    within_first_response,
)
from picoora.llm.retry import call_with_retries, classify_api_error
from picoora.messages import Image, Message, ToolCall, parse_arguments

DEFAULT_BASE = "https://api.openai.com/v1"
KEY_HINT = "Set providers.openai.api_key (or PICO_PROVIDERS_OPENAI_API_KEY)"
ADAPTABLE_PARAMS = frozenset({"max_tokens", "temperature"})
UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value"})


class UnsupportedParameter(LLMError):
    """The model refused one of the optional request parameters; the request can go again without it."""

    def __init__(self, param: str, message: str):
        super().__init__(message, status=400)
        self.param = param


class OpenAICompatLLM:
    provider = "openai"

    def __init__(self, settings: ProviderSettings):
        self.model = settings.model
        self._settings = settings
        self.base = (settings.api_base or DEFAULT_BASE).rstrip("/")
        self._clients: PerLoopClient[openai.AsyncOpenAI] = PerLoopClient(self._new_client, lambda c: c.close())
        self._refused: set[tuple[str, str]] = set()  # (model, parameter) pairs the server rejected

    def _new_client(self) -> openai.AsyncOpenAI:
        # Local servers (vLLM, llama.cpp) need no key, but the client insists on one.
        return openai.AsyncOpenAI(
            api_key=self._settings.api_key or "no-key",
            base_url=self.base,
            timeout=self._settings.timeout,
            max_retries=0,  # retries are ours (retry.py): one policy for every provider
        )

    @staticmethod
    def unsupported(options: CallOptions) -> tuple[str, str] | None:
        return None  # the parameters are the API's own: the server decides

    async def chat(
        self, messages: list[Message], tools: list[ToolSchema] | None = None, *, on_delta: OnDelta | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
    ) -> LLMResponse:
        if not self._settings.api_key and self.base == DEFAULT_BASE:
            raise AuthenticationError(f"No API key for {DEFAULT_BASE}. {KEY_HINT}.")
        model = self.model
        sink = DeltaSink(on_delta)
        while True:
            request = self._request(model, messages, tools, options)
            try:
                return await call_with_retries(
                    partial(self._chat_once, request, sink),
                    classify=partial(self._classify, model=model),
                    policy=self._settings.retry,
                    output_started=lambda: sink.started,
                )
            except UnsupportedParameter as refused:
                if (model, refused.param) in self._refused:
                    raise
                self._refused.add((model, refused.param))

    async def sees_images(self) -> bool:
        return self._settings.lists_vision(self.model)

    async def close(self) -> None:
        await self._clients.close()

    def _request(self, model: str, messages: list[Message], tools: list[ToolSchema] | None,
                 options: CallOptions) -> dict[str, Any]:
        request: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages)}
        if tools:
            request["tools"] = tools
            if options.tool_choice != "auto":
                request["tool_choice"] = _tool_choice(options)
        token_param = "max_completion_tokens" if (model, "max_tokens") in self._refused else "max_tokens"
        request[token_param] = options.max_tokens or self._settings.max_tokens
        if (model, "temperature") not in self._refused:
            request["temperature"] = self._settings.temperature if options.temperature is None else options.temperature
        if options.stop:
            request["stop"] = list(options.stop)
        request.update(options.sampling())
        if options.json_schema is not None:
            request["response_format"] = {"type": "json_schema", "json_schema": options.json_schema}
        elif options.json_object:
            request["response_format"] = {"type": "json_object"}
        return request

    async def _chat_once(self, request: dict[str, Any], sink: DeltaSink) -> LLMResponse:
        client = self._clients.get()
        if not sink.streaming:
            return response_from_completion(await client.chat.completions.create(**request))
        assembler = StreamAssembler()
        # Only the response's start is bounded: a reasoning model may think a long while before its first chunk.
        stream = await within_first_response(
            client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True}),
            seconds=self._settings.first_response, where=f"The OpenAI-compatible API at {self.base}",
            setting=f"providers.{self.provider}.first_response_seconds")
        async with stream:
            async for chunk in stream:
                reasoning, content = assembler.add(chunk)
                await sink("reasoning", reasoning)
                await sink("token", content)
        return assembler.response()

    def _classify(self, exc: Exception, *, model: str) -> LLMError:
        where = f"OpenAI-compatible API at {self.base}"
        section = f"providers.{self.provider}"  # a preset (groq, openrouter) is its own config section
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 400 and exc.code in UNSUPPORTED_CODES and exc.param in ADAPTABLE_PARAMS:
                return UnsupportedParameter(exc.param, f"{where} refused '{exc.param}' for {model}: {_detail(exc)}")
            if exc.code == "context_length_exceeded":
                return ContextOverflowError(
                    f"The conversation does not fit {model}'s context window: {_detail(exc)}", status=exc.status_code
                )
        return classify_api_error(
            exc,
            openai,
            where=where,
            model=model,
            detail=_detail(exc) if isinstance(exc, openai.APIStatusError) else "",
            model_hint=f"Check agents.defaults.model and {section}.api_base.",
            auth_hint=f"Set {section}.api_key (or PICO_{section.upper().replace('.', '_')}_API_KEY)",
            unavailable_hint=f"Check {section}.api_base and that the server is running.",
            base_setting=f"{section}.api_base",
        )


def _tool_choice(options: CallOptions) -> str | dict[str, Any]:
    if options.forced_tool:
        return {"type": "function", "function": {"name": options.forced_tool}}
    return options.tool_choice


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    return str(body.get("message") or exc.message)


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """picoora messages in the OpenAI chat shape: arguments as JSON strings, results by ``tool_call_id``."""
    native: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            native.append({"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content})
        elif message.role == "assistant" and message.tool_calls:
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in message.tool_calls
            ]
            native.append({"role": "assistant", "content": message.content or None, "tool_calls": calls})
        elif message.seen_images():
            noted = message.text_with_notes()
            parts: list[dict[str, Any]] = [{"type": "text", "text": noted}] if noted else []  # a photo alone
            parts += [{"type": "image_url", "image_url": {"url": data_url(image)}} for image in message.seen_images()]
            native.append({"role": message.role, "content": parts})
        else:
            native.append({"role": message.role, "content": message.text_with_notes()})
    return native


def data_url(image: Image) -> str:
    return f"data:{image.mime};base64,{base64_of(image.data or b'')}"


def _reasoning_of(message: Any) -> str:
    # Not part of OpenAI's schema: DeepSeek, vLLM and llama.cpp send reasoning_content, OpenRouter reasoning.
    value = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return value if isinstance(value, str) else ""


def response_from_completion(completion: Any) -> LLMResponse:
    usage = _usage(completion.usage)
    if not completion.choices:
        return LLMResponse(usage=usage)
    choice = completion.choices[0]
    message = choice.message
    tool_calls = [
        ToolCall(id=call.id or new_call_id(), name=call.function.name,
                 arguments=parse_arguments(call.function.arguments))
        for call in message.tool_calls or []
        if call.type == "function"
    ]
    return LLMResponse(
        content=message.content or "",
        reasoning=_reasoning_of(message),
        tool_calls=tool_calls,
        finish_reason="tool_calls" if tool_calls else (choice.finish_reason or "stop"),
        usage=usage,
    )


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    return Usage(prompt_tokens=usage.prompt_tokens or 0, completion_tokens=usage.completion_tokens or 0)


class StreamAssembler:
    """Builds one LLMResponse from streamed chunks; tool calls arrive in pieces keyed by ``index``."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish = "stop"
        self._usage = Usage()

    def add(self, chunk: Any) -> tuple[str, str]:
        """Take one chunk; returns its (reasoning, content) text for forwarding."""
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)
        if not chunk.choices:
            return "", ""
        choice = chunk.choices[0]
        if choice.finish_reason:
            self._finish = choice.finish_reason
        delta = choice.delta
        for piece in delta.tool_calls or []:
            self._add_call_piece(piece)
        reasoning, content = _reasoning_of(delta), delta.content or ""
        self._reasoning.append(reasoning)
        self._content.append(content)
        return reasoning, content

    def _add_call_piece(self, piece: Any) -> None:
        index = piece.index
        if index is None:  # some servers send whole calls without an index: a new id starts a new call
            known = {call["id"] for call in self._calls.values()}
            index = len(self._calls) if (piece.id and piece.id not in known) or not self._calls else max(self._calls)
        call = self._calls.setdefault(index, {"id": "", "name": "", "arguments": []})
        if piece.id:
            call["id"] = piece.id
        if piece.function is not None:
            if piece.function.name and not call["name"]:
                call["name"] = piece.function.name
            if piece.function.arguments:
                call["arguments"].append(piece.function.arguments)

    def response(self) -> LLMResponse:
        tool_calls = [
            ToolCall(id=call["id"] or new_call_id(), name=call["name"],
                     arguments=parse_arguments("".join(call["arguments"])))
            for _, call in sorted(self._calls.items())
        ]
        return LLMResponse(
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=tool_calls,
            finish_reason="tool_calls" if tool_calls else self._finish,
            usage=self._usage,
        )
