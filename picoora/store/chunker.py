"""Cutting a document's text into chunks for the file backend, with the parameters UTL_TO_CHUNKS takes on
Oracle (``docs.chunk_by``, ``chunk_size`` in words, ``chunk_overlap`` in words), so both backends cut alike.

By words: windows of ``size`` words, each starting ``size - overlap`` words after the last. By sentences:
whole sentences packed up to ``size`` words (a longer sentence is cut by words), each chunk starting with
the last sentences of the one before that fit in ``overlap`` words. Pages are chunked one by one, so a
chunk's page is the page it was read from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from picoora.store.base import DocPage

# A sentence ends at . ! ? (or a blank line) followed by space; "e.g. this" is rarely mistaken at chunk scale.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")


@dataclass(frozen=True)
class Chunk:
    text: str
    page: int | None


def chunk_pages(pages: list[DocPage], by: str, size: int, overlap: int) -> list[Chunk]:
    cut = _by_sentences if by == "sentences" else _by_words
    return [Chunk(text, page.page) for page in pages for text in cut(page.text, size, overlap)]


def _by_words(text: str, size: int, overlap: int) -> list[str]:
    words = text.split()
    step = max(size - overlap, 1)
    return [" ".join(words[start:start + size]) for start in range(0, max(len(words) - overlap, 1), step)
            if words[start:start + size]]


def _by_sentences(text: str, size: int, overlap: int) -> list[str]:
    sentences: list[list[str]] = []
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        # a sentence longer than a chunk is cut by words (each piece then counts as a sentence)
        sentences += [words[i:i + size] for i in range(0, len(words), size)] if words else []
    chunks: list[str] = []
    current: list[list[str]] = []
    length = 0
    for sentence in sentences:
        if current and length + len(sentence) > size:
            chunks.append(" ".join(word for s in current for word in s))
            current, length = _tail(current, overlap)
            if length + len(sentence) > size:  # the overlap and this sentence do not fit together
                current, length = [], 0
        current.append(sentence)
        length += len(sentence)
    if current:
        chunks.append(" ".join(word for s in current for word in s))
    return chunks


def _tail(sentences: list[list[str]], overlap: int) -> tuple[list[list[str]], int]:
    """The last whole sentences of a chunk that fit in ``overlap`` words, and their length."""
    kept: list[list[str]] = []
    length = 0
    for sentence in reversed(sentences):
        if length + len(sentence) > overlap:
            break
        kept.insert(0, sentence)
        length += len(sentence)
    return kept, length
