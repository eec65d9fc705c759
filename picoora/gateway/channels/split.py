"""A reply in pieces a chat platform takes as one message each, for every channel (each passes its limit)."""

from __future__ import annotations


def split_message(text: str, limit: int) -> list[str]:
    """Pieces of at most ``limit`` characters, cut at a blank line, else a line break, else a space."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = max(window.rfind("\n\n"), 0) or max(window.rfind("\n"), 0) or max(window.rfind(" "), 0) or limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces
