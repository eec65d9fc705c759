"""Anthropic's Messages API through the ``anthropic`` client.

System messages become the ``system`` parameter; assistant tool calls become ``tool_use`` blocks and
tool results ``tool_result`` blocks in a user message (consecutive results share one message, as
the API requires). ``max_tokens`` is always sent (the API demands it). No temperature is sent: API
version 2026-10-21 (what the 2.x client speaks) rejects sampling parameters on every model, and the
client accepts none. Thinking blocks, when the model returns them, become reasoning.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import anthropic

from picoora.llm.base import (
    DEFAULT_OPTIONS,
    AuthenticationError,
    CallOptions,
    DeltaKind,
    LLMError,
    LLMResponse,
    OnDelta,
    ToolSchema,
    Usage,
)
from picoora.llm.common import DeltaSink, PerLoopClient, ProviderSettings, base64_of, within_first_response
from picoora.llm.retry import call_with_retries, classify_api_error
from picoora.messages import Message, ToolCall, parse_arguments

KEY_HINT = "Set providers.anthropic.api_key (or PICO_PROVIDERS_ANTHROPIC_API_KEY)"
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}


class AnthropicLLM:
    provider = "anthropic"

    def __init__(self, settings: ProviderSettings):
        self.model = settings.model
        self._settings = settings
        self.base = settings.api_base.rstrip("/")  # empty: the client's default endpoint
        self._clients: PerLoopClient[anthropic.AsyncAnthropic] = PerLoopClient(self._new_client, lambda c: c.close())

    def _new_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._settings.api_key,
            base_url=self.base or None,
            timeout=self._settings.timeout,
            max_retries=0,  # retries are ours (retry.py): one policy for every provider
        )

    @staticmethod
    def unsupported(options: CallOptions) -> tuple[str, str] | None:
        if options.json_object or options.json_schema is not None:
            return "response_format", "the Anthropic provider has no JSON mode: describe the format in the messages"
        if options.temperature is not None:
            return "temperature", "the Anthropic API (version 2026-10-21) refuses sampling parameters"
        return None

    async def chat(
        self, messages: list[Message], tools: list[ToolSchema] | None = None, *, on_delta: OnDelta | None = None,
        options: CallOptions = DEFAULT_OPTIONS,
    ) -> LLMResponse:
        if not self._settings.api_key:
            raise AuthenticationError(f"No API key for Anthropic. {KEY_HINT}.")
        model = self.model
        system, native = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": model,
            "max_tokens": options.max_tokens or self._settings.max_tokens,
            "messages": native,
        }
        if system:
            request["system"] = system
        if options.stop:
            request["stop_sequences"] = list(options.stop)
        if tools:
            request["tools"] = [to_anthropic_tool(t) for t in tools]
            if options.tool_choice != "auto":
                request["tool_choice"] = _tool_choice(options)
        sink = DeltaSink(on_delta)
        return await call_with_retries(
            partial(self._chat_once, request, sink),
            classify=partial(self._classify, model=model),
            policy=self._settings.retry,
            output_started=lambda: sink.started,
        )

    async def sees_images(self) -> bool:
        return self._settings.lists_vision(self.model)

    async def close(self) -> None:
        await self._clients.close()

    async def _chat_once(self, request: dict[str, Any], sink: DeltaSink) -> LLMResponse:
        client = self._clients.get()
        if not sink.streaming:
            message = await client.messages.create(**request)
            blocks = [_block_dict(block) for block in message.content]
            usage = Usage(message.usage.input_tokens or 0, message.usage.output_tokens or 0)
            return response_from_blocks(blocks, message.stop_reason, usage)
        assembler = StreamAssembler()
        stream = await within_first_response(  # the response's start only: thinking may precede the first event
            client.messages.create(**request, stream=True), seconds=self._settings.first_response,
            where=f"Anthropic ({self.base or 'api.anthropic.com'})",
            setting="providers.anthropic.first_response_seconds")
        async with stream:
            async for event in stream:
                kind, text = assembler.add(event)
                if kind:
                    await sink(kind, text)
        return assembler.response()

    def _classify(self, exc: Exception, *, model: str) -> LLMError:
        return classify_api_error(
            exc,
            anthropic,
            where=f"Anthropic ({self.base or 'api.anthropic.com'})",
            model=model,
            detail=(getattr(exc, "api_message", None) or str(exc)) if isinstance(exc, anthropic.APIStatusError) else "",
            model_hint="Check agents.defaults.model.",
            auth_hint=KEY_HINT,
            unavailable_hint="Check the network and providers.anthropic.api_base.",
            base_setting="providers.anthropic.api_base",
        )


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, messages) in Anthropic's shape. Messages of the same role are merged, so
    consecutive tool results land in one user message, as the API requires."""
    system: list[str] = []
    native: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return  # the API rejects empty messages and empty text blocks
        if native and native[-1]["role"] == role:
            native[-1]["content"].extend(blocks)
        else:
            native.append({"role": role, "content": blocks})

    for message in messages:
        text = [{"type": "text", "text": message.content}] if message.content else []
        if message.role == "system":
            system.append(message.content)
        elif message.role == "tool":
            result = {"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}
            add("user", [result])
        elif message.role == "assistant":
            uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
            add("assistant", text + uses)
        else:
            pictures = [{"type": "image", "source": {"type": "base64", "media_type": image.mime,
                                                     "data": base64_of(image.data or b"")}}
                        for image in message.seen_images()]
            noted = message.text_with_notes()
            add("user", pictures + ([{"type": "text", "text": noted}] if noted else []))
    return "\n\n".join(part for part in system if part), native


def _tool_choice(options: CallOptions) -> dict[str, Any]:
    if options.forced_tool:
        return {"type": "tool", "name": options.forced_tool}
    return {"type": {"required": "any"}.get(options.tool_choice, options.tool_choice)}


def to_anthropic_tool(schema: ToolSchema) -> dict[str, Any]:
    function = schema["function"]
    return {
        "name": function["name"],
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _block_dict(block: Any) -> dict[str, Any]:
    """A response content block as a plain dict in the shape the stream assembler builds."""
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    return {"type": block.type, "text": getattr(block, "text", None) or getattr(block, "thinking", None) or ""}


def response_from_blocks(blocks: list[dict[str, Any]], stop_reason: str | None, usage: Usage) -> LLMResponse:
    tool_calls = [ToolCall(id=b["id"], name=b["name"], arguments=parse_arguments(b["input"]))
                  for b in blocks if b["type"] == "tool_use"]
    return LLMResponse(
        content="".join(b["text"] for b in blocks if b["type"] == "text"),
        reasoning="".join(b["text"] for b in blocks if b["type"] == "thinking"),
        tool_calls=tool_calls,
        finish_reason=FINISH_REASONS.get(stop_reason or "end_turn", stop_reason or "stop"),
        usage=usage,
    )


class StreamAssembler:
    """Builds the content blocks of a streamed message from its events."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._stop_reason: str | None = None
        self._usage = Usage()

    def add(self, event: Any) -> tuple[DeltaKind | Literal[""], str]:
        """Take one event; returns ("token" | "reasoning", text) to forward, or ("", "")."""
        if event.type == "message_start":
            self._usage.prompt_tokens = event.message.usage.input_tokens or 0
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self._blocks[event.index] = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
                self._json[event.index] = []
            else:
                self._blocks[event.index] = {"type": block.type, "text": ""}
        elif event.type == "content_block_delta":
            return self._add_delta(event.index, event.delta)
        elif event.type == "message_delta":
            self._stop_reason = event.delta.stop_reason
            self._usage.completion_tokens = event.usage.output_tokens or 0
        return "", ""

    def _add_delta(self, index: int, delta: Any) -> tuple[DeltaKind | Literal[""], str]:
        block = self._blocks.get(index)
        if block is None:
            return "", ""
        if delta.type == "input_json_delta":
            self._json[index].append(delta.partial_json)
            return "", ""
        if delta.type in ("text_delta", "thinking_delta"):
            text = delta.text if delta.type == "text_delta" else delta.thinking
            block["text"] += text
            return ("token" if delta.type == "text_delta" else "reasoning"), text
        return "", ""

    def response(self) -> LLMResponse:
        for index, pieces in self._json.items():
            self._blocks[index]["input"] = parse_arguments("".join(pieces))
        blocks = [block for _, block in sorted(self._blocks.items())]
        return response_from_blocks(blocks, self._stop_reason, self._usage)
