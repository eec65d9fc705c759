"""Chat messages as every layer sees them: provider-neutral, JSON-serialisable.

A leaf module (no picoora imports) so the store, the providers and the agent loop share one shape, and
one reader: ``Message.from_dict`` also reads the Go version's session format (OpenAI-style tool calls).
Roles: "system", "user", "assistant", "tool". An assistant message may carry tool calls; a tool
message answers exactly one call through ``tool_call_id``. A message marked ``cancelled`` belongs to a
turn that was cancelled before its answer: it is kept as the record of what was said, and never sent to
a model again (``picoora.agent.context.without_cancelled``).

A user message may carry pictures (``Image``): the record keeps only their name, type and where the file
was saved, never the bytes, so a 10 MB photo costs a transcript line, not 13 MB of base64 in every later
prompt. The bytes ride along in memory for the turn the picture arrived in; providers send those, and
older pictures as a short "[image: name]" note (``Image.note``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

# The one key for tool-call arguments that are not a JSON object (a model's broken JSON): providers and
# stored sessions of every format keep the raw text under it, and the agent answers such a call with an
# error telling the model its arguments were malformed instead of running the tool.
RAW_ARGUMENTS_KEY = "__raw__"
# Deeper arguments are refused: every JSON encoder, validator and scrubber on their way recurses per level.
MAX_ARGUMENT_DEPTH = 64
TOO_DEEP = f"(arguments nested more than {MAX_ARGUMENT_DEPTH} levels deep)"


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments from a JSON string (or an already parsed object); anything that is not a JSON
    object, or is nested more than ``MAX_ARGUMENT_DEPTH`` deep, is kept under ``RAW_ARGUMENTS_KEY``."""
    if isinstance(raw, dict):
        return raw if nesting_depth(raw) <= MAX_ARGUMENT_DEPTH else {RAW_ARGUMENTS_KEY: TOO_DEEP}
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return {RAW_ARGUMENTS_KEY: json.dumps(raw) if nesting_depth(raw) <= MAX_ARGUMENT_DEPTH else TOO_DEEP}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: raw}
    except RecursionError:  # the parser recurses per level: thousands of "[" exhaust Python's stack
        return {RAW_ARGUMENTS_KEY: TOO_DEEP}
    if isinstance(value, dict) and nesting_depth(value) > MAX_ARGUMENT_DEPTH:
        return {RAW_ARGUMENTS_KEY: TOO_DEEP}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def nesting_depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value``, counted without recursion (so any depth can be measured)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_ARGUMENT_DEPTH:
            return deepest
        stack += [(child, depth + 1) for child in children]
    return deepest


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """picoora's shape, or the Go version's / OpenAI's ``{"id", "function": {"name", "arguments": "<json>"}}``."""
        function = data.get("function")
        if isinstance(function, dict):
            return cls(id=str(data.get("id") or ""), name=str(function.get("name") or ""),
                       arguments=parse_arguments(function.get("arguments")))
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=parse_arguments(data.get("arguments")))


@dataclass
class Image:
    name: str  # what the person called it, for the "[image: name]" note
    mime: str  # image/jpeg, image/png, ...
    path: str = ""  # where it was saved, relative to the workspace ("" when it was not)
    data: bytes | None = field(default=None, repr=False, compare=False)  # this turn only; never recorded

    @property
    def note(self) -> str:
        return f"[image: {self.path or self.name}]"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "mime": self.mime, "path": self.path}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Image:
        return cls(name=str(data.get("name") or ""), mime=str(data.get("mime") or ""), path=str(data.get("path") or ""))


def images_from(raw: Any) -> list[Image]:
    """The images of a stored message (anything malformed is dropped: a picture's record is only a note)."""
    return [Image.from_dict(item) for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


@dataclass
class Message:
    role: str
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None  # tool name, on role="tool" messages
    reasoning: str | None = None  # thinking output of reasoning models; kept for the transcript only
    cancelled: bool = False  # its turn was cancelled (Ctrl+C, shutdown): kept, never sent to a model again
    images: list[Image] = field(default_factory=list)  # on role="user" messages

    def seen_images(self) -> list[Image]:
        """The images whose bytes are here (this turn's), for a provider to send."""
        return [image for image in self.images if image.data]

    def text_with_notes(self) -> str:
        """The content, with a note for each image whose bytes are not here (an earlier turn's)."""
        notes = [image.note for image in self.images if not image.data]
        return "\n".join([*notes, self.content] if self.content else notes)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.reasoning:
            data["reasoning"] = self.reasoning
        if self.cancelled:
            data["cancelled"] = True
        if self.images:
            data["images"] = [image.to_dict() for image in self.images]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        return cls(
            role=str(data["role"]),
            content=str(data.get("content") or ""),
            tool_calls=[ToolCall.from_dict(c) for c in data.get("tool_calls") or []],
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            reasoning=data.get("reasoning"),
            cancelled=data.get("cancelled") is True,
            images=images_from(data.get("images")),
        )


def scrubbed(message: Message, scrub: Callable[[str], str]) -> Message:
    """``message`` with ``scrub`` applied to every text it carries: content, reasoning, tool-call arguments."""
    calls = [ToolCall(c.id, c.name, _scrub_tree(c.arguments, scrub)) for c in message.tool_calls]
    return replace(message, content=scrub(message.content), tool_calls=calls,
                   reasoning=scrub(message.reasoning) if message.reasoning else message.reasoning)


def _scrub_tree(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {key: _scrub_tree(item, scrub) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_tree(item, scrub) for item in value]
    return value

