"""Results that arrived for a chat nobody was watching: a scheduled job's answer or the heartbeat's
message for the terminal (``cli:<chat>``) or a web chat (``web:<session>``).

The text is appended to that chat's transcript, so the web chat shows it when the session is opened and
``picoora agent`` shows it at the start of the REPL. For the terminal, which has no "opened" moment the
store can see, the transcript sequence numbers waiting to be shown are kept in a state key
(``inbox.<session>``): small, so it fits a state value on both backends (``MAX_WAITING`` entries).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from picoora.messages import Message

if TYPE_CHECKING:
    from picoora.store.base import TranscriptEntry
    from picoora.store.protocol import Store

INBOX_PREFIX = "inbox."
KEPT_CHANNELS = ("cli", "web")  # front doors without a live connection: results wait in the transcript
MAX_WAITING = 50  # sequence numbers remembered per chat; older ones stay in the transcript only


def keep(store: Store, session_key: str, text: str) -> int:
    """Append ``text`` to the chat's transcript and mark it waiting; returns its sequence number."""
    seq = store.transcripts.append(session_key, [Message(role="assistant", content=text)])[0]
    waiting = _waiting(store, session_key)
    waiting.append(seq)
    store.state.set(INBOX_PREFIX + session_key, json.dumps(waiting[-MAX_WAITING:]))
    return seq


def take(store: Store, session_key: str) -> list[TranscriptEntry]:
    """The waiting results of the chat, oldest first; they are no longer waiting afterwards."""
    waiting = set(_waiting(store, session_key))
    if not waiting:
        return []
    entries = [e for e in store.transcripts.read(session_key) if e.seq in waiting]
    store.state.delete(INBOX_PREFIX + session_key)
    return entries


def _waiting(store: Store, session_key: str) -> list[int]:
    try:
        value = json.loads(store.state.get(INBOX_PREFIX + session_key) or "[]")
    except ValueError:
        return []
    return [int(seq) for seq in value if isinstance(seq, int)] if isinstance(value, list) else []
