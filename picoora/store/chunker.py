"""Cutting a document's text into chunks for the file backend, with the parameters UTL_TO_CHUNKS takes on
Oracle (``docs.chunk_by``, ``chunk_size`` in words, ``chunk_overlap`` in words), so both backends cut alike.

By words: windows of ``size`` words, each starting ``size - overlap`` words after the last. By sentences:
whole sentences packed up to ``size`` words (a longer sentence is cut by words), each chunk starting with
the last sentences of the one before that fit in ``overlap`` words. Pages are chunked one by one, so a
chunk's page is the page it was read from.

Words are not tokens: 80 words of prose are about 110 of MiniLM's tokens, but 80 words of paths, URLs and
code pass the 256 it reads, and the rest of such a chunk would never reach its vector. Given the embedder's
tokens per word, a chunk also ends before it would pass ``max_tokens`` (a BERT tokenizer splits at spaces
before it splits words, so a text's tokens are the sum of its words'). UTL_TO_CHUNKS on Oracle counts
tokens only with a vocabulary loaded into the database, so there chunks are cut by words alone and the
in-database model truncates what is over.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from picoora.store.base import DocPage

# A sentence ends at . ! ? (or a blank line) followed by space; "e.g. this" is rarely mistaken at chunk scale.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")
SPECIAL_TOKENS = 2  # [CLS] and [SEP] around every text

WordTokens = Callable[[list[str]], list[int]]  # the embedder's tokens for each word
Cost = Callable[[str], int]


@dataclass(frozen=True)
class Chunk:
    text: str
    page: int | None


def chunk_pages(pages: list[DocPage], by: str, size: int, overlap: int,
                word_tokens: WordTokens | None = None, max_tokens: int = 0) -> list[Chunk]:
    cost: Cost = _free
    budget: int | None = None
    if word_tokens is not None and max_tokens > SPECIAL_TOKENS:
        cost, budget = _costs(pages, word_tokens), max_tokens - SPECIAL_TOKENS
    cut = _by_sentences if by == "sentences" else _by_words
    return [Chunk(text, page.page) for page in pages for text in cut(page.text, size, overlap, cost, budget)]


def _free(word: str) -> int:
    return 0


def _costs(pages: list[DocPage], word_tokens: WordTokens) -> Cost:
    """Each distinct word of the document counted once (pages repeat most of their words)."""
    distinct = list(dict.fromkeys(word for page in pages for word in page.text.split()))
    return dict(zip(distinct, word_tokens(distinct), strict=True)).__getitem__


def _by_words(text: str, size: int, overlap: int, cost: Cost = _free, budget: int | None = None) -> list[str]:
    return [" ".join(window) for window in _windows(text.split(), size, overlap, cost, budget)]


def _windows(words: list[str], size: int, overlap: int, cost: Cost, budget: int | None) -> list[list[str]]:
    """Windows of at most ``size`` words and ``budget`` tokens (a single longer word is a window of its own),
    each repeating the last ``overlap`` words of the one before, or fewer where they would take over half
    the budget (a sentence cut this way has no overlap: ``_by_sentences`` overlaps whole sentences only)."""
    windows: list[list[str]] = []
    start = 0
    while start < len(words):
        end, tokens = start, 0
        while end < len(words) and end - start < size and (
                budget is None or end == start or tokens + cost(words[end]) <= budget):
            tokens += cost(words[end])
            end += 1
        windows.append(words[start:end])
        if end >= len(words):
            break
        back, kept = end, 0
        while back > max(end - overlap, start + 1) and (budget is None or kept + cost(words[back - 1]) <= budget // 2):
            back -= 1
            kept += cost(words[back])
        # the next window must hold a new word: no overlap where it and that word would not fit together
        start = back if budget is None or kept + cost(words[end]) <= budget else end
    return windows


def _by_sentences(text: str, size: int, overlap: int, cost: Cost = _free, budget: int | None = None) -> list[str]:
    sentences: list[list[str]] = []
    for sentence in _SENTENCE_END.split(text):
        # a sentence longer than a chunk is cut by words (each piece then counts as a sentence)
        sentences += _windows(sentence.split(), size, 0, cost, budget)
    chunks: list[str] = []
    current: list[list[str]] = []
    length = tokens = 0
    for sentence in sentences:
        weight = sum(map(cost, sentence))
        if current and (length + len(sentence) > size or (budget is not None and tokens + weight > budget)):
            chunks.append(" ".join(word for s in current for word in s))
            current = _tail(current, overlap, cost, None if budget is None else budget // 2)
            length, tokens = sum(map(len, current)), sum(cost(w) for s in current for w in s)
            if length + len(sentence) > size or (budget is not None and tokens + weight > budget):
                current, length, tokens = [], 0, 0  # the overlap and this sentence do not fit together
        current.append(sentence)
        length += len(sentence)
        tokens += weight
    if current:
        chunks.append(" ".join(word for s in current for word in s))
    return chunks


def _tail(sentences: list[list[str]], overlap: int, cost: Cost, budget: int | None) -> list[list[str]]:
    """The last whole sentences of a chunk that fit in ``overlap`` words (and ``budget`` tokens)."""
    kept: list[list[str]] = []
    length = tokens = 0
    for sentence in reversed(sentences):
        weight = sum(map(cost, sentence))
        if length + len(sentence) > overlap or (budget is not None and tokens + weight > budget):
            break
        kept.insert(0, sentence)
        length += len(sentence)
        tokens += weight
    return kept
