"""What goes into the turn service and what comes out: one envelope per turn, one outcome per envelope.

Every front door builds an ``Inbound`` (HTTP, the OpenAI endpoint, a channel, a scheduled job, the
heartbeat, a background task) and gets back a ``TurnOutcome``: the turn's result, or why there is none
(``failed``: the turn broke outside the agent loop; ``cut_off``: cancelled at the shutdown deadline).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.conversation import ClientConversation
    from picoora.gateway.channels.attachments import Attachment
    from picoora.identities import Person


@dataclass(frozen=True)
class Inbound:
    channel: str  # the front door: "web", "openai", "telegram", "cron", "heartbeat", "task", ...
    chat_id: str
    text: str
    sender_id: str = ""
    person: Person | None = None  # None: the owner
    session_key: str = ""  # empty: "<channel>:<chat_id>"
    fresh_session: bool = False  # clear the session's history first (the heartbeat's beats see nothing older)
    from_chat: bool = False  # a person's chat message (set by the channel)
    private_chat: bool = False  # ... in a one-to-one chat: it becomes where their jobs and the heartbeat go
    metadata: dict[str, Any] = field(default_factory=dict)
    conversation: ClientConversation | None = None  # the OpenAI endpoint: the client keeps the history
    attachments: tuple[Attachment, ...] = ()  # a chat message's pictures, voice notes, files (not yet fetched)

    @property
    def session(self) -> str:
        return self.session_key or f"{self.channel}:{self.chat_id}"

    @property
    def typed_by_a_person(self) -> bool:
        """Whether ``text`` is what a person wrote (a chat, the web chat, the API), not a job, the heartbeat or
        a background task: only such text may become memories by itself."""
        return self.from_chat or self.channel in ("web", "openai")

    @property
    def person_name(self) -> str:
        return "" if self.person is None or self.person.owner else self.person.name


@dataclass(frozen=True)
class TurnOutcome:
    status: str  # "answer", "stopped" (a limit or an error inside the loop), "failed", "busy" or "cut_off"
    result: TurnResult | None = None
    error: str = ""  # why there is no answer, for a record or a log

    @property
    def ok(self) -> bool:
        return self.status == "answer"

    @property
    def text(self) -> str:
        return self.result.text if self.result is not None else self.error

    @classmethod
    def of(cls, result: TurnResult) -> TurnOutcome:
        if result.stop_reason in ("answer", "tool_calls"):  # tool_calls: a client's calls, handed back to it
            return cls("answer", result)
        return cls("stopped", result, f"{result.stop_reason}: {result.text}")


# Called inside the turn's task once the outcome is known, so the drain at shutdown covers the reply too
# (a channel's message, a job's delivery and run record, the heartbeat's beat record).
OnOutcome = Callable[[Inbound, TurnOutcome], Awaitable[None]]
