"""Forced tool calls for a provider that has no ``tool_choice`` but can hold its output to a JSON schema.

Ollama's ``format`` makes the sampler follow a JSON schema; it has no way to force a tool call. A forced
call is therefore asked for as constrained JSON: the forced function's parameters as the schema (for
``tool_choice`` naming it), or a union of ``{"name", "arguments"}`` objects, one per tool (``required``).
The same union serves ``response_format`` with tools the model may call: the output is a call or the
answer itself, since a model held to a schema cannot also emit a native tool call. The tools are not sent
natively then (their calls come back as JSON); the instruction appended to the system prompt describes
them, as Ollama's own guide for structured outputs advises (the grammar constrains, the model still has to
know what to write). ``Constraint.read`` turns the output back into a call or an answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from picoora.llm.base import CallOptions, LLMError, ToolSchema
from picoora.llm.common import new_call_id
from picoora.messages import Message, ToolCall, parse_arguments

CALL_KEYS = frozenset({"name", "arguments"})


@dataclass(frozen=True)
class Constraint:
    schema: dict[str, Any]  # what the output must match (Ollama's ``format``)
    instruction: str  # appended to the system prompt
    forced: str  # the output is this tool's arguments; "" when it is a {"name", "arguments"} union
    tool_names: frozenset[str]
    answer_allowed: bool  # the union's last member is the answer (response_format beside tools)

    def read(self, text: str) -> tuple[str, list[ToolCall]]:
        """The output as (answer text, tool calls): one call, or the answer with none."""
        if self.forced:
            return "", [ToolCall(new_call_id(), self.forced, parse_arguments(text))]
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict) and set(value) == CALL_KEYS and value["name"] in self.tool_names:
            return "", [ToolCall(new_call_id(), str(value["name"]), parse_arguments(value["arguments"]))]
        if self.answer_allowed:
            return text, []
        raise LLMError(f"the model was to call one of the tools ({', '.join(sorted(self.tool_names))}) but wrote "
                       f"{text[:200]!r} (cut off by max_tokens?)")


def constraint_for(tools: list[ToolSchema], options: CallOptions) -> Constraint | None:
    """The constraint a request needs, or None: no tool is forced, and response_format (if any) comes
    without tools, so ``format`` alone says it."""
    if not tools or options.tool_choice == "none":
        return None
    by_name = {_name(tool): tool for tool in tools}
    if options.forced_tool or (options.tool_choice == "required" and len(tools) == 1):
        name = options.forced_tool or _name(tools[0])
        if name not in by_name:
            raise LLMError(f"tool_choice names {name!r}, which is not among the tools")
        function = by_name[name]["function"]
        return Constraint(
            schema=_parameters(function), forced=name, tool_names=frozenset(by_name), answer_allowed=False,
            instruction=(f"## Answer format\n\nCall the tool `{name}` now. Reply with its arguments only, as one JSON "
                         f"object matching its parameters.\n\n{_described(function)}"))
    answer = _answer_schema(options) if options.tool_choice == "auto" else None
    if options.tool_choice == "auto" and answer is None:
        return None  # no response_format: the tools go natively, the model decides
    members = [_call_schema(tool["function"], index) for index, tool in enumerate(tools)]
    listing = "\n\n".join(_described(tool["function"]) for tool in tools)
    if answer is None:
        ask = 'Call one of these tools now. Reply with one JSON object: {"name": <tool name>, "arguments": {...}}.'
    else:
        members.append(_relocated(answer, f"#/anyOf/{len(members)}"))
        ask = ('Reply with one JSON object: either a tool call, {"name": <tool name>, "arguments": {...}}, when you '
               'need one of these tools, or your answer in the requested JSON format.')
    return Constraint(schema={"anyOf": members}, forced="", tool_names=frozenset(by_name),
                      answer_allowed=answer is not None, instruction=f"## Answer format\n\n{ask}\n\n{listing}")


def with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    """``messages`` with ``instruction`` at the end of the system prompt (a system message of its own when
    there is none): every chat template keeps a leading system message."""
    if messages and messages[0].role == "system":
        head = messages[0]
        return [Message(role="system", content=f"{head.content}\n\n---\n\n{instruction}"), *messages[1:]]
    return [Message(role="system", content=instruction), *messages]


def _name(tool: ToolSchema) -> str:
    return str(tool["function"]["name"])


def _parameters(function: dict[str, Any]) -> dict[str, Any]:
    return function.get("parameters") or {"type": "object", "properties": {}}


def _described(function: dict[str, Any]) -> str:
    lines = [f"### {function['name']}", str(function.get("description") or "").strip(),
             "Parameters: " + json.dumps(_parameters(function), ensure_ascii=False)]
    return "\n\n".join(line for line in lines if line)


def _call_schema(function: dict[str, Any], index: int) -> dict[str, Any]:
    """``{"name": <this tool>, "arguments": <its parameters>}``; its local references (``#/$defs/...``) are
    rewritten to where the parameters now sit in the union."""
    arguments = _relocated(_parameters(function), f"#/anyOf/{index}/properties/arguments")
    return {"type": "object", "properties": {"name": {"const": function["name"]}, "arguments": arguments},
            "required": ["name", "arguments"]}


def _answer_schema(options: CallOptions) -> dict[str, Any] | None:
    if options.json_schema is not None:
        schema = options.json_schema.get("schema")
        return schema if isinstance(schema, dict) else {"type": "object"}
    return {"type": "object"} if options.json_object else None


def _relocated(schema: Any, base: str) -> Any:
    """``schema`` with every local ``$ref`` (``#...``) made relative to ``base`` instead of the document root."""
    if isinstance(schema, dict):
        return {key: (base + value[1:] if key == "$ref" and isinstance(value, str) and value.startswith("#")
                      else _relocated(value, base)) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_relocated(item, base) for item in schema]
    return schema
