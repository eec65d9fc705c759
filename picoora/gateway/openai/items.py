"""What a Responses API client sends (``POST /v1/responses``), as the chat completion request it amounts to.

The endpoint is stateless, like ``/v1/chat/completions``: ``input`` is the whole conversation (text, or
items: messages, the model's function calls and their outputs), ``instructions`` the system message. Nothing
is stored under a response id, so ``previous_response_id`` is a 400 that says to send the items instead
(openai-agents and the SDKs send them when ``store`` is off). Only function tools exist here; the hosted ones
(web search, file search, code interpreter, ...) are a 400 naming the tool. Items picoora does not use
(reasoning, which the clients send back as they got it) are left out.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from picoora.gateway.errors import ApiError
from picoora.gateway.openai.requests import (
    MODEL_ID,
    TOOL_NAME,
    CompletionRequest,
    JsonSchemaFormat,
    ResponseFormat,
    ToolDefinition,
    _Open,
)

SKIPPED_ITEMS = frozenset({"reasoning"})  # what a client sends back of an earlier response and no model needs


class FunctionTool(_Open):
    type: str
    name: str | None = Field(None, pattern=TOOL_NAME)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class TextFormat(_Open):
    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = Field(None, min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class TextOptions(_Open):
    format: TextFormat | None = None


class NamedTool(_Open):
    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME)


class ResponsesRequest(_Open):
    model: str = Field(MODEL_ID, max_length=200)
    input: str | list[dict[str, Any]] = Field(min_length=1)
    instructions: str | None = None
    tools: list[FunctionTool] | None = Field(None, max_length=128)
    tool_choice: Literal["none", "auto", "required"] | NamedTool | None = None
    text: TextOptions | None = None
    stream: bool = False
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(None, ge=1)
    previous_response_id: str | None = None
    user: str | None = Field(None, max_length=128)
    prompt_cache_key: str | None = Field(None, max_length=128)
    metadata: dict[str, str] | None = None


def as_completion_request(body: ResponsesRequest) -> CompletionRequest:
    """The request as a chat completion request (``ApiError`` 400 naming the ``input`` item at fault)."""
    if body.previous_response_id:
        raise ApiError(400, "invalid_request", "picoora keeps no responses: send the conversation's items in "
                       "`input` instead of previous_response_id", param="previous_response_id",
                       code="unsupported_parameter")
    messages: list[dict[str, Any]] = []
    if body.instructions and body.instructions.strip():
        messages.append({"role": "system", "content": body.instructions})
    if isinstance(body.input, str):
        messages.append({"role": "user", "content": body.input})
    else:
        for index, item in enumerate(body.input):
            _add_item(messages, item, f"input.{index}")
    request: dict[str, Any] = {
        "model": body.model, "messages": messages, "stream": body.stream, "user": body.user,
        "prompt_cache_key": body.prompt_cache_key, "temperature": body.temperature, "top_p": body.top_p,
        "max_completion_tokens": body.max_output_tokens,
        "stream_options": {"include_usage": True} if body.stream else None,
    }
    try:
        return CompletionRequest.model_validate({
            **request, "tools": _tools(body), "tool_choice": _tool_choice(body),
            "response_format": _response_format(body)})
    except ValueError as exc:  # a message built from an item that is not one (a wrong role or content)
        raise ApiError(400, "invalid_request", f"input: {exc}", param="input") from exc


def _add_item(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        messages.append({"role": item.get("role"), "content": _content(item.get("content"), where)})
    elif kind == "function_call":
        call = {"id": _text_field(item, "call_id", where), "type": "function", "function": {
            "name": _text_field(item, "name", where), "arguments": str(item.get("arguments") or "")}}
        if messages and messages[-1]["role"] == "assistant" and not messages[-1]["content"]:
            messages[-1].setdefault("tool_calls", []).append(call)  # calls of one answer go together
        else:
            messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        messages.append({"role": "tool", "tool_call_id": _text_field(item, "call_id", where),
                         "content": output if isinstance(output, str) else _content(output, where)})
    elif kind not in SKIPPED_ITEMS:
        raise ApiError(400, "invalid_request", f"{where}: items of type {kind!r} are not supported (messages, "
                       "function_call and function_call_output are)", param=where, code="unsupported_value")


def _content(content: Any, where: str) -> str | list[dict[str, Any]]:
    """A message's content: a string, or its parts as chat content parts (input_text and output_text are text)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ApiError(400, "invalid_request", f"{where}.content must be a string or a list of parts",
                       param=f"{where}.content")
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            raise ApiError(400, "invalid_request", f"{where}.content holds a part that is not an object",
                           param=f"{where}.content")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            parts.append({"type": "text", "text": str(part.get("text") or "")})
        elif kind == "input_image":
            parts.append({"type": "image_url", "image_url": {"url": part.get("image_url") or ""}})
        else:
            parts.append({"type": str(kind)})  # the chat request says which parts it cannot take
    return parts


def _text_field(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise ApiError(400, "invalid_request", f"{where}.{key} must be a non-empty string", param=f"{where}.{key}")
    return value


def _tools(body: ResponsesRequest) -> list[dict[str, Any]] | None:
    if not body.tools:
        return None
    tools = []
    for index, tool in enumerate(body.tools):
        if tool.type != "function" or not tool.name:
            raise ApiError(400, "invalid_request", f"only function tools are supported here, not {tool.type!r}",
                           param=f"tools.{index}", code="unsupported_value")
        tools.append(ToolDefinition.model_validate({"type": "function", "function": {
            "name": tool.name, "description": tool.description or "", "parameters": tool.parameters}}).model_dump())
    return tools


def _tool_choice(body: ResponsesRequest) -> Any:
    choice = body.tool_choice
    if isinstance(choice, NamedTool):
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _response_format(body: ResponsesRequest) -> dict[str, Any] | None:
    fmt = body.text.format if body.text is not None else None
    if fmt is None or fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return ResponseFormat(type="json_object").model_dump()
    if fmt.schema_ is None or not fmt.name:
        raise ApiError(400, "invalid_request", "text.format json_schema needs a name and a schema",
                       param="text.format")
    schema = JsonSchemaFormat.model_validate({"name": fmt.name, "schema": fmt.schema_, "strict": fmt.strict})
    return {"type": "json_schema", "json_schema": schema.model_dump(by_alias=True, exclude_none=True)}


