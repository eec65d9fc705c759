"""A cheap token estimate, good enough to decide when to compact and how much context to include.

No tokenizer is loaded (that would cost start-up time and memory for a decision that only needs to be
roughly right). English text averages about four characters per token across the common BPE
vocabularies; characters outside ASCII (CJK, emoji, accented words) split much finer, so each counts
as one token. The estimate errs high rather than low, which is the safe side for a context budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from picoora.messages import Message

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4  # role markers and separators every chat template adds per message
# A picture sent with this turn: OpenAI bills a detailed 512-px tile at 765, Claude ~1600 for a 1-megapixel
# photo, LLaVA-style models take 576 patches; the high end is the safe side.
IMAGE_TOKENS = 1600


def estimate_tokens(text: str) -> int:
    # Counted with str methods, not a loop over characters: every model call estimates the whole request
    # (a full 16k-token window is ~64k characters: 3-4 ms of event-loop time per call as a Python loop).
    if text.isascii():
        return -(-len(text) // CHARS_PER_TOKEN)
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // CHARS_PER_TOKEN) + len(text) - ascii_chars


def estimate_message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(message.text_with_notes())
    tokens += IMAGE_TOKENS * len(message.seen_images())
    for call in message.tool_calls:
        tokens += estimate_tokens(call.name) + estimate_tokens(json.dumps(call.arguments, ensure_ascii=False))
    return tokens


def estimate_messages_tokens(messages: Iterable[Message]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)
