"""Telegram's side of a reply: its length limit, and the small part of Markdown models write (bold, italic,
code, code blocks, links) turned into Telegram's HTML.

Escaping comes first, so nothing the model writes can become a tag; every pattern is a simple regular
expression with no nested repetition, so a hostile answer costs linear time.
"""

from __future__ import annotations

import html
import re

TELEGRAM_LIMIT = 4096  # characters per message, after entity parsing

_BLOCK = re.compile(r"```[A-Za-z0-9_+-]*\n?(.*?)```", re.DOTALL)
_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
_ITALIC = re.compile(r"(?<![\w*])[*_]([^*_\n]+)[*_](?![\w*])")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
# The scrubber's mark (``***``, picoora.secrets.REDACTED): kept as it is, never read as bold or italic (two
# marks on a line made the words between them bold). A model's ``***bold italic***`` shows its stars.
_SCRUB_MARK = re.compile(r"(?<!\*)\*\*\*(?!\*)")


def to_telegram_html(text: str) -> str:
    blocks: list[str] = []

    def keep_literal(html_text: str) -> str:
        blocks.append(html_text)
        return f"\x00{len(blocks) - 1}\x00"

    def keep_block(match: re.Match[str]) -> str:
        return keep_literal(f"<pre>{html.escape(match.group(1))}</pre>")

    text = _BLOCK.sub(keep_block, text)
    text = _SCRUB_MARK.sub(lambda m: keep_literal(m.group(0)), text)
    text = html.escape(text, quote=False)
    text = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", text)
    text = _BOLD.sub(r"<b>\1</b>", text)
    text = _ITALIC.sub(r"<i>\1</i>", text)
    text = _LINK.sub(lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>', text)
    return re.sub("\x00(\\d+)\x00", lambda m: blocks[int(m.group(1))], text)
