"""Keep tool calls and tool results paired, the way every provider API demands.

A well-formed history: each assistant tool call is answered by exactly one tool message, and those
answers come right after the assistant message that made the calls; no tool message stands anywhere
else. A crash between a call and its result, or an old session written by a buggy version, breaks
this, and providers then reject every later request with a 400 (lessons.md, bug 4). So:

- ``repair_history`` runs on the message list before every model call: a missing result is filled
  with a synthetic "interrupted" result (in the request only), stray results are dropped.
- ``complete_pairs`` runs on what a cut-short turn persists: calls without results are removed, so
  only complete call/result pairs reach the session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from picoora.messages import Message, ToolCall

INTERRUPTED = "Error: this tool call was interrupted before it returned a result."


def interrupted_result(call: ToolCall, text: str = INTERRUPTED) -> Message:
    return Message(role="tool", content=text, tool_call_id=call.id, name=call.name)


def repair_history(messages: list[Message]) -> list[Message]:
    """A valid copy of ``messages``: missing results synthesised, orphan results dropped."""
    return _pair_up(messages, on_missing=interrupted_result)


def complete_pairs(messages: list[Message]) -> list[Message]:
    """A valid copy of ``messages`` holding only the calls that got a result."""
    return _pair_up(messages, on_missing=lambda call: None)


def _pair_up(messages: list[Message], on_missing: Callable[[ToolCall], Message | None]) -> list[Message]:
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "tool":
            continue  # not right after its call: an orphan (this also drops leading tool messages)
        if message.role != "assistant" or not message.tool_calls:
            out.append(message)
            continue
        results, i = _results_after(messages, i)
        calls: list[ToolCall] = []
        answers: list[Message] = []
        for call in unique_calls(message.tool_calls):
            answer = results.get(call.id) or on_missing(call)
            if answer is not None:
                calls.append(call)
                answers.append(answer)
        if calls != message.tool_calls:
            message = replace(message, tool_calls=calls)
        if message.content or calls:
            out.append(message)
            out.extend(answers)
    return out


def _results_after(messages: list[Message], start: int) -> tuple[dict[str, Message], int]:
    """The run of tool messages from ``start``, by call id (the first answer to an id wins), and where it ends."""
    results: dict[str, Message] = {}
    i = start
    while i < len(messages) and messages[i].role == "tool":
        call_id = messages[i].tool_call_id
        if call_id is not None and call_id not in results:
            results[call_id] = messages[i]
        i += 1
    return results, i


def unique_calls(calls: list[ToolCall]) -> list[ToolCall]:
    seen: set[str] = set()
    unique = []
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            unique.append(call)
    return unique


def distinct_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls of one answer, a repeated id renamed (``id~2``) so every call runs and gets its own result:
    a result is matched to its call by id, so two calls sharing one would leave one of them unanswered."""
    seen: set[str] = set()
    distinct = []
    for call in calls:
        new_id, number = call.id, 1
        while new_id in seen:
            number += 1
            new_id = f"{call.id}~{number}"
        seen.add(new_id)
        distinct.append(call if new_id == call.id else replace(call, id=new_id))
    return distinct
