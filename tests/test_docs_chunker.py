"""Documents are cut by words (or sentences), and then again wherever a chunk reaches the embedder's token
limit, so no part of a chunk is left out of its vector."""

from __future__ import annotations

from picoora.config import DocsConfig
from picoora.store.base import DocPage
from picoora.store.chunker import chunk_pages
from picoora.store.embedder import MINILM_MAX_TOKENS, MiniLMEmbedder
from picoora.store.files import FileStore


def _per_character(words: list[str]) -> list[int]:
    """A dense text's tokens: one per character of each word."""
    return [len(word) for word in words]


def _tokens(text: str) -> int:
    return 2 + sum(_per_character(text.split()))


def _covers_in_order(chunks: list[str], words: list[str]) -> bool:
    """Every word is in some chunk, and the chunks start at increasing positions of the text."""
    seen: set[int] = set()
    position = 0
    for chunk in chunks:
        piece = chunk.split()
        while words[position:position + len(piece)] != piece:
            position += 1
            if position >= len(words):
                return False
        seen.update(range(position, position + len(piece)))
    return seen == set(range(len(words)))


def test_without_a_counter_chunks_are_cut_by_words_only():
    text = " ".join(f"w{n:04d}" for n in range(300))
    chunks = chunk_pages([DocPage(text)], "words", 80, 15)
    assert [len(c.text.split()) for c in chunks][:3] == [80, 80, 80]


def test_a_chunk_that_reaches_the_token_limit_is_cut_again_and_loses_no_word():
    words = [f"https://example.net/path/{n}/segment" for n in range(200)]  # ~35 "tokens" a word here
    for by in ("words", "sentences"):
        chunks = chunk_pages([DocPage(" ".join(words), page=3)], by, 80, 15, _per_character, 256)
        assert all(_tokens(c.text) <= 256 for c in chunks), by
        assert len(chunks) < 2 * len(words) * 35 / 256, by  # not cut finer than the limit needs
        assert all(c.page == 3 for c in chunks)
        assert _covers_in_order([c.text for c in chunks], words), by
    # by words, the overlap is kept where it fits (at most half the limit)
    chunks = chunk_pages([DocPage(" ".join(words))], "words", 80, 15, _per_character, 256)
    assert chunks[0].text.split()[-3:] == chunks[1].text.split()[:3]


def test_prose_under_the_limit_is_left_as_it_was():
    text = "The boiler restarts when the reset button is held for ten seconds. " * 40
    plain = chunk_pages([DocPage(text)], "sentences", 80, 15)
    assert chunk_pages([DocPage(text)], "sentences", 80, 15, _per_character, 10_000) == plain
    words = chunk_pages([DocPage(text)], "words", 80, 15)
    assert chunk_pages([DocPage(text)], "words", 80, 15, _per_character, 10_000) == words


def test_a_single_word_longer_than_the_limit_stays_one_chunk():
    for by in ("words", "sentences"):
        chunks = chunk_pages([DocPage("a b " + "x" * 1000 + " c")], by, 80, 15, _per_character, 256)
        assert [c.text for c in chunks] == ["a b", "x" * 1000, "c"], by


def test_the_bundled_model_reads_every_token_of_every_chunk(tmp_path):
    """Real tokenizer: a page of paths and hashes is ~4 tokens a word, so 80 words would be truncated."""
    embedder = MiniLMEmbedder()
    words = [f"/usr/lib/x86_64-linux-gnu/libfoo.so.{n}.{n * 7}" for n in range(120)]
    text = " ".join(words)
    # a text's tokens are its words' (what the chunker relies on), and 80 of these words would be truncated
    sample = " ".join(words[:5]) + " The boiler's reset-button, held (10 s)."
    assert embedder.word_tokens(sample.split()) and sum(embedder.word_tokens(sample.split())) + 2 == \
        len(embedder._load()[1].encode(sample).ids)
    assert sum(embedder.word_tokens(words[:80])) > MINILM_MAX_TOKENS
    store = FileStore(tmp_path / "ws", embedder=embedder, docs=DocsConfig(chunk_by="words"))
    try:
        store.documents.add("/d/libs.txt", "libs", [DocPage(text)])
        chunks = [c.text for c in store.documents.library._stored[store.documents.list()[0].id].chunks]
        assert max(sum(embedder.word_tokens(c.split())) + 2 for c in chunks) <= MINILM_MAX_TOKENS
        assert _covers_in_order(chunks, words)
        assert store.documents.search("libfoo.so.97")[0].text.count("libfoo.so.97.679") == 1
    finally:
        store.close()
