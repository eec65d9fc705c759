"""A cheap token estimate, good enough to decide when to compact and how much context to include.

No tokenizer is loaded (that would cost start-up time and memory for a decision that only needs to be
roughly right). English text averages about four characters per token across the common BPE
vocabularies; characters outside ASCII (CJK, emoji, accented words) split much finer, so each counts
as one token. The estimate errs high rather than low, which is the safe side for a context budget.
"""

from __future__ import annotations

import json
from typing import Iterable

from picoora.messages import Message

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators every chat template adds per message


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    ascii_chars = len(text) - non_ascii
    return -(-ascii_chars // CHARS_PER_TOKEN) + non_ascii


def estimate_message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(message.content)
    for call in message.tool_calls:
        tokens += estimate_tokens(call.name) + estimate_tokens(json.dumps(call.arguments, ensure_ascii=False))
    return tokens


def estimate_messages_tokens(messages: Iterable[Message]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)
