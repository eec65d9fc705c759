"""What an OpenAI client sends, and that request as a conversation the client keeps.

The request's ``messages`` are the conversation (OpenAI-style APIs are stateless and their clients are
built on that): the client's system and developer messages become the head of the system prompt, the
rest is the history the model sees, and the messages after the last assistant message are the turn's new
input. Nothing of the server's session history is added. Where the turn is recorded (the session key) is
``X-Session-Id`` or ``prompt_cache_key`` when the client names its conversation, else a fingerprint of the
conversation's first messages (prefixed by ``user`` when given), so two conversations never share a
transcript unless they begin with the very same words.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from picoora.agent.conversation import CLIENT_KEPT_PREFIX, ClientConversation
from picoora.gateway.errors import ApiError
from picoora.gateway.runtime.media import sniffed_image
from picoora.llm.base import CallOptions, ToolSchema
from picoora.llm.pool import ModelChoice
from picoora.messages import Image, Message, ToolCall, parse_arguments

MODEL_ID = "picoora"  # "the assistant's model for this session", whatever that is
AGENT_MODEL_ID = "picoora-agent"  # the same model, with all of picoora's tools and rules (not only memory)
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # fields of later API versions are accepted and not used


class ImageUrl(_Open):
    url: str


class ContentPart(_Open):
    type: str
    text: str | None = None
    image_url: ImageUrl | None = None


class FunctionCall(_Open):
    name: str = Field(pattern=TOOL_NAME)
    arguments: str = ""


class MessageToolCall(_Open):
    id: str = Field(min_length=1, max_length=256)
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(_Open):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    tool_calls: list[MessageToolCall] | None = None
    tool_call_id: str | None = Field(None, max_length=256)
    name: str | None = Field(None, max_length=256)


class FunctionDefinition(_Open):
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] | None = None


class ToolDefinition(_Open):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(_Open):
    name: str = Field(pattern=TOOL_NAME)


class NamedToolChoice(_Open):
    type: Literal["function"]
    function: NamedFunction


class JsonSchemaFormat(_Open):
    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(_Open):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Open):
    include_usage: bool = False


class CompletionRequest(_Open):
    model: str = Field(MODEL_ID, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = Field(None, max_length=128)
    prompt_cache_key: str | None = Field(None, max_length=128)
    tools: list[ToolDefinition] | None = Field(None, max_length=128)  # OpenAI's own limit
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    response_format: ResponseFormat | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    n: int | None = Field(None, ge=1, le=128)

    @property
    def include_usage(self) -> bool:
        return self.stream_options is not None and self.stream_options.include_usage


class EmbeddingRequest(_Open):
    input: str | list[str] = Field(min_length=1)
    model: str = Field(MODEL_ID, max_length=200)
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1)


def to_conversation(body: CompletionRequest, model: ModelChoice | None, *, agent: bool = False) -> ClientConversation:
    """The request as the conversation the model sees; ``ApiError`` 400 for what cannot be one. ``agent``:
    the client opted into picoora's tools by a header; the model id ``picoora-agent`` says it too."""
    if body.n not in (None, 1):
        raise ApiError(400, "invalid_request", "only n=1 is supported: one answer per request", param="n",
                       code="unsupported_value")
    system: list[str] = []
    conversation: list[Message] = []
    for index, message in enumerate(body.messages):
        text = _text_of(message, index)
        if message.role in ("system", "developer"):
            if text.strip():
                system.append(text)
        elif message.role == "user":
            conversation.append(Message(role="user", content=text, images=_images_of(message, index)))
        elif message.role == "assistant":
            calls = [ToolCall(id=c.id, name=c.function.name, arguments=parse_arguments(c.function.arguments))
                     for c in message.tool_calls or []]
            conversation.append(Message(role="assistant", content=text, tool_calls=calls))
        else:  # "tool", or the older "function" (its name is the only link to the call)
            conversation.append(Message(role="tool", content=text, name=message.name,
                                        tool_call_id=message.tool_call_id or message.name or ""))
    last_assistant = max((i for i, m in enumerate(conversation) if m.role == "assistant"), default=-1)
    new = conversation[last_assistant + 1:]
    if not new:
        raise ApiError(400, "invalid_request", "the conversation ends with the assistant's message: there is nothing "
                       "to answer (send the next user message or the tool results)", param="messages")
    users = [m for m in conversation if m.role == "user"]
    if not users:
        raise ApiError(400, "invalid_request", "messages holds no user message", param="messages")
    if new[-1].role == "user" and not new[-1].content.strip():
        raise ApiError(400, "invalid_request", "the last user message is empty", param="messages")
    return ClientConversation(
        system="\n\n".join(system), history=conversation[:last_assistant + 1], new=new, query=users[-1].content,
        tools=_tools(body), options=_options(body), model=model, agent=agent or body.model == AGENT_MODEL_ID)


def conversation_key(body: CompletionRequest, session_header: str | None) -> str:
    """Where this conversation's turns are recorded: ``openai:<id>``."""
    named = session_header or body.prompt_cache_key
    if named:
        return CLIENT_KEPT_PREFIX + _session_id(named)
    first_system = next((_plain(m) for m in body.messages if m.role in ("system", "developer")), "")
    first_user = next((_plain(m) for m in body.messages if m.role == "user"), "")
    digest = hashlib.sha256(json.dumps([first_system, first_user]).encode("utf-8", "surrogatepass")).hexdigest()
    prefix = _session_id(body.user)[:100] + "." if body.user else ""
    return f"{CLIENT_KEPT_PREFIX}{prefix}c{digest[:16]}"


def _text_of(message: ChatMessage, index: int) -> str:
    if isinstance(message.content, str) or message.content is None:
        return message.content or ""
    allowed = ("text", "input_text", "image_url") if message.role == "user" else ("text", "input_text")
    if any(part.type not in allowed for part in message.content):
        raise ApiError(400, "unsupported_content", "only text content, and images in user messages, are supported "
                       "(no audio or files)", param=f"messages.{index}.content", code="unsupported_content")
    return "\n".join(part.text or "" for part in message.content if part.type != "image_url")


def _images_of(message: ChatMessage, index: int) -> list[Image]:
    """A user message's ``image_url`` parts as pictures: ``data:`` URLs only (fetching a URL the client names
    would make the gateway a proxy into its own network), of a picture type picoora reads."""
    if not isinstance(message.content, list):
        return []
    images = []
    for number, part in enumerate(message.content):
        if part.type != "image_url":
            continue
        where = f"messages.{index}.content.{number}.image_url"
        url = part.image_url.url if part.image_url is not None else ""
        header, comma, payload = url.partition(",")
        if not (url.startswith("data:") and comma and header.endswith(";base64")):
            raise ApiError(400, "unsupported_content", "send a picture inline, as a data: URL "
                           "(data:image/png;base64,...); picoora does not fetch image URLs", param=where,
                           code="unsupported_content")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ApiError(400, "invalid_request", f"the picture's base64 is broken: {exc}", param=where) from exc
        mime = sniffed_image(data)
        if mime is None:
            raise ApiError(400, "unsupported_content", "the picture is not a JPEG, PNG, GIF or WebP", param=where,
                           code="unsupported_content")
        images.append(Image(name=f"image-{index}-{number}", mime=mime, data=data))
    return images


def _plain(message: ChatMessage) -> str:
    if isinstance(message.content, list):
        return "\n".join(part.text or "" for part in message.content)
    return message.content or ""


def _tools(body: CompletionRequest) -> list[ToolSchema] | None:
    if not body.tools:
        return None
    return [{"type": "function", "function": {
        "name": tool.function.name, "description": tool.function.description,
        "parameters": tool.function.parameters or {"type": "object", "properties": {}}}} for tool in body.tools]


def _options(body: CompletionRequest) -> CallOptions:
    choice = body.tool_choice
    tool_choice = choice.function.name if isinstance(choice, NamedToolChoice) else (choice or "auto")
    names = {tool.function.name for tool in body.tools or []}
    if tool_choice not in ("auto", "none") and not names:
        raise ApiError(400, "invalid_request", "tool_choice asks for a tool call, but the request has no tools",
                       param="tool_choice")
    if isinstance(choice, NamedToolChoice) and tool_choice not in names:
        raise ApiError(400, "invalid_request", f"tool_choice names {tool_choice!r}, which is not among the tools",
                       param="tool_choice")
    fmt = body.response_format
    if fmt is not None and fmt.type == "json_schema" and (fmt.json_schema is None or fmt.json_schema.schema_ is None):
        raise ApiError(400, "invalid_request", "response_format json_schema needs json_schema.schema",
                       param="response_format")
    stop = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    if len(stop) > 4:
        raise ApiError(400, "invalid_request", "stop takes at most 4 sequences", param="stop")
    return CallOptions(
        temperature=body.temperature,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        stop=tuple(s for s in stop if s),
        json_object=fmt is not None and fmt.type == "json_object",
        json_schema=(fmt.json_schema.model_dump(by_alias=True, exclude_none=True)
                     if fmt is not None and fmt.type == "json_schema" and fmt.json_schema else None),
        tool_choice=tool_choice,
        top_p=body.top_p, seed=body.seed, presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
    )


def _session_id(raw: str) -> str:
    """A client's id as a session id: characters outside the session alphabet become '_'."""
    return re.sub(r"[^A-Za-z0-9._@-]", "_", raw)[:128]
