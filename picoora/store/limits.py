"""Sizes every backend accepts, so a value that one backend would store and another refuse is refused by both.

The numbers come from the Oracle schema (``picoora/store/oracle/sql.py``), whose columns keep the Go
PicoOraClaw types where widening them would break a Go database still in use: key and name columns hold
up to 255 characters, session keys up to 1000 characters, and the ``state`` and ``meta`` values are
``VARCHAR2(4000)``, whose limit is in bytes (UTF-8, as on Oracle Database Free's AL32UTF8). Config values,
prompts, messages and memories are CLOBs and have no limit here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.store.base import Provenance

KEY_CHARS = 255  # state/config/meta keys, prompt names, memory categories: VARCHAR2(255 CHAR)
SESSION_KEY_CHARS = 1000  # VARCHAR2(1000 CHAR): fits an index key next to agent_id on 8 KB blocks
ROLE_CHARS = 32  # message roles in transcripts: VARCHAR2(32 CHAR)
VALUE_BYTES = 4000  # state and meta values: VARCHAR2(4000), bytes under MAX_STRING_SIZE=STANDARD
_BOUNDED_VALUES = ("state", "meta")  # the key/value families whose values are VARCHAR2, not CLOB
# Whole tool outputs (``Store``): the most of one output kept, how long, and (files) the most a store
# keeps of them in all, the oldest going first. A CLOB on Oracle; the bounds keep a chatty tool from filling a disk.
TOOL_OUTPUT_CHARS = 1_000_000
TOOL_OUTPUT_DAYS = 7
TOOL_OUTPUT_TOTAL_BYTES = 64 * 1024 * 1024
HANDLE_PATTERN = r"out_[A-Za-z0-9_-]{24}"  # ``tools.tool_outputs.new_handle``; anything else names no output


class TooLong(ValueError):
    """A key or value is larger than storage accepts; the message says which limit and by how much."""


def check_chars(value: str, limit: int, what: str) -> str:
    if len(value) > limit:
        raise TooLong(f"{what} is {len(value)} characters long; at most {limit} are stored")
    return value


def check_session_key(key: str) -> str:
    return check_chars(key, SESSION_KEY_CHARS, "the session key")


def check_key_value(family: str, key: str, value: str) -> None:
    """A ``state`` / ``config`` / ``meta`` entry both backends can store."""
    check_chars(key, KEY_CHARS, f"the {family} key")
    if family in _BOUNDED_VALUES:
        size = len(value.encode("utf-8"))
        if size > VALUE_BYTES:
            raise TooLong(f"the {family} value for {key!r} is {size} bytes in UTF-8; at most {VALUE_BYTES} are "
                          f"stored (keep large data in a file or a memory)")


TURN_ID_CHARS = 64  # turn ids are short hex; VARCHAR2(64) on Oracle


def check_new_memory(content: str, importance: float, category: str, provenance: Provenance | None = None) -> str:
    """What both backends refuse in a new memory; returns the content as stored (stripped)."""
    content = content.strip()
    if not content:
        raise ValueError("a memory needs some content")
    if not 0.0 <= importance <= 1.0:
        raise ValueError(f"importance must be between 0 and 1, not {importance}")
    check_chars(category or "general", KEY_CHARS, "the memory category")
    if provenance is not None:
        check_chars(provenance.person, KEY_CHARS, "the memory's person")
        check_session_key(provenance.session)
        check_chars(provenance.turn_id, TURN_ID_CHARS, "the memory's turn id")
    return content
