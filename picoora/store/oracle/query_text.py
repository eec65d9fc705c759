"""The text an Oracle query is handed: what VECTOR_EMBEDDING embeds, Oracle Text queries and regular
expressions of a query's terms, each within the byte limits the database sets on a bind."""

from __future__ import annotations

import re

from picoora.store.keywords import code_terms

EMBED_MAX_CHARS = 1000  # the model reads ~256 tokens (~1000 characters of English)
EMBED_MAX_BYTES = 4000  # VECTOR_EMBEDDING's text is a VARCHAR2 bind: over 4000 bytes it goes as LONG and fails
REGEXP_MAX_BYTES = 512  # REGEXP_LIKE patterns longer than this fail (ORA-12733)
TEXT_QUERY_MAX_BYTES = 2000  # an Oracle Text query stays a short VARCHAR2 bind with a bounded term list


def _utf8_prefix(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def _utf8_suffix(text: str, max_bytes: int) -> str:
    data = text.encode("utf-8")
    return data[max(len(data) - max_bytes, 0):].decode("utf-8", errors="ignore")


def embedding_text(text: str) -> str:
    """The part of ``text`` handed to VECTOR_EMBEDDING: all of it if short, else its start and its end,
    at most ``EMBED_MAX_CHARS`` characters and ``EMBED_MAX_BYTES`` bytes of UTF-8 (CJK text is 3 bytes a
    character)."""
    if len(text) <= EMBED_MAX_CHARS and len(text.encode("utf-8")) <= EMBED_MAX_BYTES:
        return text
    joiner = " ... "
    half_chars, half_bytes = EMBED_MAX_CHARS // 2, (EMBED_MAX_BYTES - len(joiner)) // 2
    head = _utf8_prefix(text[:half_chars], half_bytes)
    tail = _utf8_suffix(text[-half_chars:], half_bytes)
    return f"{head}{joiner}{tail}"


def informative_first(query: str, terms: list[str]) -> list[str]:
    """``terms`` with codes and names first, then longer (rarer) words before shorter ones: the order in
    which they are kept when a length cap cuts the list."""
    codes = set(code_terms(query))
    return sorted(terms, key=lambda term: (term not in codes, -len(term)))


def _capped(parts: list[str], joiner: str, max_bytes: int) -> str:
    kept: list[str] = []
    size = 0
    for part in parts:
        extra = len(part.encode("utf-8")) + (len(joiner) if kept else 0)
        if size + extra <= max_bytes:
            kept.append(part)
            size += extra
    return joiner.join(kept)


def text_query(terms: list[str], max_bytes: int = TEXT_QUERY_MAX_BYTES) -> str:
    """An Oracle Text query matching any term, more matches scoring higher; braces escape each term.
    Terms are kept in the given order while the query fits ``max_bytes``."""
    return _capped(["{" + term.replace("}", "") + "}" for term in terms], " ACCUM ", max_bytes)


def scan_pattern(terms: list[str], max_bytes: int = REGEXP_MAX_BYTES) -> str:
    """A POSIX regular expression matching any term (terms are letters, digits and . - _ / : @ '), kept in
    the given order while the pattern fits ``max_bytes``: a pasted paragraph must not turn recall off."""
    return _capped([re.sub(r"([.\\^$|?*+()\[\]{}])", r"\\\1", term) for term in terms], "|", max_bytes)
