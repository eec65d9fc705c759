"""A conversation the client keeps: what the OpenAI-compatible endpoint's requests carry.

OpenAI-style APIs are stateless: every request holds the whole conversation, and the clients people use
are built on that. Such a turn (``Agent.run_turn(..., conversation=)``) differs from a session turn in
what the model sees and what is stored:

- the model sees the client's system message and history, not the session's; picoora adds the memories
  recalled for the last user message and, when the client brings no tools, its memory tools (all of its
  tools and its rules only when the client opts into picoora's agent, ``agent``; no tools at all when the
  answer must be JSON in a format);
- the session's transcript records the request's new messages and the turn's own, so every turn is kept,
  but nothing is appended to the session's history and nothing is compacted: the next request brings its
  history itself, and a failed turn leaves nothing that a later request sees;
- with the client's ``tools``, a tool call the model makes ends the turn and goes back to the client
  (``TurnResult.calls``), which runs it and sends the result in its next request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from picoora.llm.base import DEFAULT_OPTIONS, CallOptions, ToolSchema

if TYPE_CHECKING:
    from picoora.llm.pool import ModelChoice
    from picoora.messages import Message


CLIENT_KEPT_PREFIX = "openai:"  # the session keys of conversations a client keeps (the OpenAI endpoint's)


@dataclass(frozen=True)
class ClientConversation:
    system: str  # the client's system (and developer) messages, joined; "" when it sent none
    history: list[Message]  # the messages before ``new``
    new: list[Message]  # this turn's input: the request's messages after its last assistant message
    query: str  # the last user message's text: what memories are recalled for
    tools: list[ToolSchema] | None = None  # the client's tools; None: picoora's own (see ``agent``)
    agent: bool = False  # the client opted into picoora's agent: all its tools and rules, not only memory
    options: CallOptions = DEFAULT_OPTIONS
    model: ModelChoice | None = None  # None: the session's model
