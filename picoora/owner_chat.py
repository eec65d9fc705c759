"""Where the owner spoke last: the one-to-one chat that jobs, the heartbeat and approval questions go to when
nothing names a chat.

The gateway records it for every message in a private chat (``remember_chat``); the job book, the cron tool,
the heartbeat and the approvals read it. It lives below all of them (it needs only the store's state) so the
scheduler and the gateway's runtime share one definition of the key and its format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.store.aio import AsyncStore
    from picoora.store.protocol import Store

# State key: "<channel>:<chat_id>", the owner's last one-to-one chat. Not the Go version's "last_channel",
# which any chat set, a group included: a job's answer (a recalled PIN) would land in that group.
LAST_CHAT = "last_private_chat"
TERMINAL = ("cli", "default")  # where results go when no chat has talked to the gateway yet


def _chat_of(value: str | None) -> tuple[str, str] | None:
    channel, _, chat_id = (value or "").partition(":")
    return (channel, chat_id) if channel and chat_id else None


def last_chat(store: Store) -> tuple[str, str] | None:
    """(channel, chat id) of the private chat the owner spoke on last, or None when none has yet."""
    return _chat_of(store.state.get(LAST_CHAT))


async def last_chat_from_loop(astore: AsyncStore) -> tuple[str, str] | None:
    """``last_chat`` for code on the event loop: the read runs off the loop (a store call can take up to
    Oracle's call timeout, and the gateway's other chats must not wait for it)."""
    return _chat_of(await astore.state.get(LAST_CHAT))


def remember_chat(store: Store, channel: str, chat_id: str) -> None:
    """Called for every message in a private chat (never a group's): written only when it moves (a state
    write is a file replace + fsync)."""
    if last_chat(store) != (channel, chat_id):
        store.state.set(LAST_CHAT, f"{channel}:{chat_id}")


def default_target(store: Store) -> tuple[str, str]:
    """Where a result goes when nothing names a chat: the private chat used last, else the terminal."""
    return last_chat(store) or TERMINAL
