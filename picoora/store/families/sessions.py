"""Sessions (``PICO_SESSIONS``): the model's view of a conversation, a summary and the recent messages;
compaction rewrites it."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.messages import Message
    from picoora.store.base import Session


class Sessions(Protocol):
    def load(self, key: str) -> Session: ...
    def append(self, key: str, messages: builtins.list[Message]) -> None: ...
    # Replace the leading ``folded`` messages by ``summary``; False when they no longer lead (base.without_folded)
    def compact(self, key: str, summary: str, folded: builtins.list[Message]) -> bool: ...
    def set_summary(self, key: str, summary: str) -> None: ...
    def reset(self, key: str) -> None: ...  # its transcript stays
    # Replace the session whole, keeping its own created/updated times (an import; None: now)
    def restore(self, session: Session) -> None: ...
    def list(self) -> builtins.list[Session]: ...  # most recently updated first


class AsyncSessions:
    def __init__(self, family: Sessions, call: Caller):
        self.load = call.wrap(family.load)
        self.append = call.wrap(family.append)
        self.compact = call.wrap(family.compact)
        self.set_summary = call.wrap(family.set_summary)
        self.reset = call.wrap(family.reset)
        self.restore = call.wrap(family.restore)
        self.list = call.wrap(family.list)
