"""The numpy MiniLM encoder: parity with onnxruntime on the same int8 model, and how it holds its weights."""

from __future__ import annotations

import math

import numpy as np
import pytest

from picoora.store.embedder import MiniLMEmbedder, _bundled_model_path
from picoora.store.minilm import MiniLM, Quantized, erf
from picoora.store.onnx_reader import read_graph

SENTENCES = [
    "Remember that my favorite language is Go",
    "What programming language do I prefer?",
    "The weather in Paris is rainy today.",
    "Hi",
    "ok",
    "?",
    "Tomasz Kowalski is my manager at the Kraków office.",
    "ORA-00942: table or view does not exist",
    "Invoice INV-20931 for the garden shed was 1,240 euros.",
    "My daughter's school concert is on Friday at 6 pm.",
    "Remind me to renew the car insurance before the 3rd of March.",
    "I am allergic to peanuts and shellfish.",
    "The Wi-Fi password at the cabin is on the fridge.",
    "We're flying to Lisbon on the 14th, returning the 21st.",
    "def add(a, b):\n    return a + b",
    "SELECT name FROM users WHERE id = 42;",
    "git rebase -i HEAD~3 squashes the last three commits",
    "https://example.com/path?query=1&other=two",
    "Ça va très bien, merci ! Où est la gare ?",
    "Der Zug nach München fährt um 14:05 Uhr ab.",
    "東京の天気は晴れです",
    "Emoji test: 🎉🚀 party time",
    "Numbers only: 3.14159 2.71828 1.41421",
    "ALL CAPS SENTENCE ABOUT THE QUARTERLY BUDGET REVIEW",
    "the the the the the the the the",
    "A very short one.",
    "The spare key for the flat is with Anna, who lives next door.",
    "Priya prefers to discuss the billing migration by email, never by phone.",
    "Error MOB-55120 appeared while Rahul was working on the search service.",
    "My blood type is O negative.",
    "I run 5 km every Tuesday and Thursday morning before work.",
    "The dentist appointment moved from Monday to Wednesday afternoon.",
    "Our team offsite will be in Helsinki in the second week of June.",
    "Please never schedule meetings before 10 am.",
    "The thermostat in the living room is set to 21 degrees.",
    "Hannah's birthday is on the ninth of November; she likes orchids.",
    "The API latency work cut p95 from 480 ms to 120 ms.",
    "I'm learning to play the cello; lessons are on Saturdays.",
    "The data warehouse nightly job starts at 02:00 UTC.",
    "Use tabs, not spaces, in the Makefile.",
    "Why is the sky blue?",
    "How long should I boil an egg?",
    "Explain the rules of cricket in simple terms, please.",
    "What did Sven say about the marathon plan last week?",
    "Kowalska, not Kowalski, handles the procurement contracts.",
    "   leading and trailing spaces   ",
    "tab\tseparated\tvalues",
    "line one\nline two\nline three",
    "A long paragraph about the migration plan, the budget, the quarterly board review, the hiring pipeline, "
    "the office move, and the vendor contracts that all need to be settled before the end of the fiscal year. " * 4,
    "word " * 400,  # truncated to 256 tokens
]


def _onnxruntime_vectors(texts: list[str]) -> np.ndarray:
    """What the onnxruntime path produced: same tokenizer, one text per run, mean pooling, L2 norm."""
    ort = pytest.importorskip("onnxruntime")
    embedder = MiniLMEmbedder()
    embedder.embed(["load the tokenizer"])
    session = ort.InferenceSession(str(_bundled_model_path()), providers=["CPUExecutionProvider"])
    vectors = []
    for encoding in embedder._tokenizer.encode_batch(texts):
        ids = np.array([encoding.ids], dtype=np.int64)
        (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                       "token_type_ids": np.zeros_like(ids)})
        vectors.append(hidden[0].mean(axis=0))
    vectors = np.array(vectors)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.slow
def test_vectors_match_onnxruntime_on_varied_sentences():
    expected = _onnxruntime_vectors(SENTENCES)
    actual = MiniLMEmbedder().embed(SENTENCES)
    cosines = (expected * actual).sum(axis=1)
    worst = int(np.argmin(cosines))
    assert cosines.min() >= 0.999, f"cosine {cosines[worst]:.5f} for {SENTENCES[worst][:60]!r}"


def test_erf_approximation_is_float32_accurate():
    x = np.linspace(-6, 6, 20001, dtype=np.float32)
    reference = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert np.abs(erf(x.copy()) - reference).max() < 1e-6
    assert erf(np.float32([0.0]))[0] == 0.0 and erf(np.float32([-3.0]))[0] < -0.9999


def test_weights_stay_int8_views_of_the_mapped_file():
    model = MiniLM.load(_bundled_model_path())
    assert len(model.layers) == 6 and model.layers[0].heads == 12
    assert model.embedding_norm.eps == pytest.approx(1e-12)
    assert model.layers[0].gelu.c0 == pytest.approx(math.sqrt(2)) and model.layers[0].gelu.c2 == 0.5
    matrices = [model.word] + [m.weight for layer in model.layers
                               for m in (layer.query, layer.key, layer.value, layer.output,
                                         layer.intermediate, layer.ffn_output)]
    assert all(isinstance(m, Quantized) and m.values.dtype == np.int8 for m in matrices)
    assert all(not m.values.flags.owndata and not m.values.flags.writeable for m in matrices)  # mmap views
    assert model.word.values.shape == (30522, 384)
    assert sum(m.values.nbytes for m in matrices) > 20_000_000  # nearly the whole file, none of it copied


def test_reader_sees_the_graph_interface():
    graph = read_graph(_bundled_model_path())
    assert graph.inputs == ["input_ids", "attention_mask", "token_type_ids"]
    assert graph.outputs == ["last_hidden_state"]
    norms = [n for n in graph.nodes if n.op_type == "LayerNormalization"]
    assert len(norms) == 13 and all(n.attributes["axis"] == -1 for n in norms)


def test_a_second_pass_keeps_the_encoder_weights_and_gives_the_same_vectors():
    embedder = MiniLMEmbedder()
    model, _ = embedder._load()
    assert isinstance(model, MiniLM)
    encoder = [m.weight for layer in model.layers for m in (layer.query, layer.key, layer.value, layer.output,
                                                            layer.intermediate, layer.ffn_output)]
    texts = SENTENCES[:2]  # one batch, so one forward pass per call (and a batch bypasses the recent queries)
    first = embedder.embed(texts)  # a one-shot turn's only pass: one float32 matrix at a time
    assert not any(m.resident for m in encoder)
    second = embedder.embed(texts)
    assert all(m.resident for m in encoder) and not model.word.resident  # rows are gathered, never made dense
    third = embedder.embed(texts)  # from the kept matrices
    np.testing.assert_allclose(second, first, atol=1e-6)
    np.testing.assert_allclose(third, first, atol=1e-6)
    kept = encoder[0].dense()
    assert kept is encoder[0].dense() and not kept.flags.writeable
    np.testing.assert_array_equal(kept, encoder[0].values.astype(np.float32) * encoder[0].scale)
