"""What a Responses API client gets back (``POST /v1/responses``), as OpenAI's API reference shapes it: the
response object, and the events of a streamed one in their documented order:

``response.created``, ``response.in_progress``; for the answer's text ``response.output_item.added``,
``response.content_part.added``, ``response.output_text.delta``..., ``response.output_text.done``,
``response.content_part.done``, ``response.output_item.done``; for each function call
``response.output_item.added``, ``response.function_call_arguments.delta``,
``response.function_call_arguments.done``, ``response.output_item.done``; then ``response.completed``
(``response.incomplete`` when a limit cut the turn, ``response.failed`` when it failed). Every event has a
``sequence_number``. The bodies are plain dicts, checked against the ``openai`` SDK's types by the tests.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.gateway.openai.items import ResponsesRequest
    from picoora.llm.base import Usage
    from picoora.messages import ToolCall

INCOMPLETE = {"max_iterations", "time_limit", "token_budget"}  # stop reasons that cut the answer short


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def usage_body(usage: Usage) -> dict[str, Any]:
    return {"input_tokens": usage.prompt_tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage.completion_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.prompt_tokens + usage.completion_tokens}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [text_part(text)] if status == "completed" else []
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def call_item(item_id: str, call: ToolCall, status: str = "completed") -> dict[str, Any]:
    arguments = json.dumps(call.arguments) if status == "completed" else ""
    return {"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name, "arguments": arguments,
            "status": status}


class ResponseMaker:
    """The response object of one request, from its creation (in progress) to its end."""

    def __init__(self, body: ResponsesRequest, response_id: str | None = None, created: int | None = None):
        self.body = body
        self.id = response_id or new_id("resp")
        self.created = created if created is not None else int(time.time())
        self.model = body.model

    def response(self, status: str, output: list[dict[str, Any]], usage: Usage | None = None,
                 error: dict[str, str] | None = None, incomplete: str | None = None) -> dict[str, Any]:
        body = self.body
        fmt = body.text.format.model_dump(by_alias=True, exclude_none=True) if body.text and body.text.format \
            else {"type": "text"}
        choice = body.tool_choice
        tool_choice = choice.model_dump() if choice is not None and not isinstance(choice, str) else (choice or "auto")
        return {
            "id": self.id, "object": "response", "created_at": self.created, "status": status, "model": self.model,
            "output": output, "error": error, "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": body.instructions, "max_output_tokens": body.max_output_tokens,
            "parallel_tool_calls": True, "previous_response_id": None, "store": False,
            "temperature": body.temperature, "top_p": body.top_p, "text": {"format": fmt},
            "tool_choice": tool_choice, "truncation": "disabled", "metadata": body.metadata or {},
            "tools": [tool.model_dump(exclude_none=True) for tool in body.tools or []],
            "usage": usage_body(usage) if usage is not None else None, "user": body.user,
        }

    def output(self, text: str, calls: list[ToolCall]) -> list[dict[str, Any]]:
        items = [message_item(new_id("msg"), text)] if text or not calls else []
        return items + [call_item(new_id("fc"), call) for call in calls]

    def finished(self, stop_reason: str, text: str, calls: list[ToolCall], usage: Usage,
                 output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The response of a turn that ended (not failed): completed, or incomplete when a limit cut it."""
        incomplete = "max_output_tokens" if stop_reason in INCOMPLETE else None
        return self.response("incomplete" if incomplete else "completed",
                             self.output(text, calls) if output is None else output, usage, incomplete=incomplete)


class EventWriter:
    """The events of one streamed response, numbered; the answer's text item opens at its first token."""

    def __init__(self, maker: ResponseMaker):
        self.maker = maker
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.text_id = ""
        self.text: list[str] = []

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def opening(self) -> list[dict[str, Any]]:
        created = self.maker.response("in_progress", [])
        return [self.event("response.created", response=created),
                self.event("response.in_progress", response=created)]

    def text_delta(self, delta: str) -> list[dict[str, Any]]:
        events = []
        if not self.text_id:
            self.text_id = new_id("msg")
            events += [self.event("response.output_item.added", output_index=len(self.output),
                                  item=message_item(self.text_id, "", "in_progress")),
                       self.event("response.content_part.added", item_id=self.text_id,
                                  output_index=len(self.output), content_index=0, part=text_part(""))]
        self.text.append(delta)
        events.append(self.event("response.output_text.delta", item_id=self.text_id, output_index=len(self.output),
                                 content_index=0, delta=delta, logprobs=[]))
        return events

    def closing(self, stop_reason: str, text: str, calls: list[ToolCall], usage: Usage) -> list[dict[str, Any]]:
        """The rest of the answer (all of it when nothing was streamed), the calls, and the end."""
        events = []
        if text and not self.text:
            events += self.text_delta(text)
        if self.text_id:
            events += self._text_done()
        for call in calls:
            events += self._call(call)
        done = self.maker.finished(stop_reason, text, calls, usage, output=self.output)
        kind = "response.incomplete" if done["status"] == "incomplete" else "response.completed"
        return [*events, self.event(kind, response=done)]

    def failed(self, message: str, code: str = "server_error") -> dict[str, Any]:
        response = self.maker.response("failed", self.output, error={"code": code, "message": message})
        return self.event("response.failed", response=response)

    def _text_done(self) -> list[dict[str, Any]]:
        text, index = "".join(self.text), len(self.output)
        item = message_item(self.text_id, text)
        self.output.append(item)
        return [self.event("response.output_text.done", item_id=self.text_id, output_index=index, content_index=0,
                           text=text, logprobs=[]),
                self.event("response.content_part.done", item_id=self.text_id, output_index=index, content_index=0,
                           part=text_part(text)),
                self.event("response.output_item.done", output_index=index, item=item)]

    def _call(self, call: ToolCall) -> list[dict[str, Any]]:
        item_id, index = new_id("fc"), len(self.output)
        item = call_item(item_id, call)
        self.output.append(item)
        return [self.event("response.output_item.added", output_index=index,
                           item=call_item(item_id, call, "in_progress")),
                self.event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
                           delta=item["arguments"]),
                self.event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                           name=call.name, arguments=item["arguments"]),
                self.event("response.output_item.done", output_index=index, item=item)]
