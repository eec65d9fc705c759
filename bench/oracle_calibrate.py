"""Calibrate the Oracle backend's push rule (``ranking.ORACLE_PUSH``) on a live database.

    .venv/bin/python bench/oracle_calibrate.py                     # ~1-3 min on Oracle Database Free
    .venv/bin/python bench/oracle_calibrate.py --distractors 2000  # also with look-alike memories (slower)
    .venv/bin/python bench/oracle_calibrate.py --check-with-bundled-model  # no database: see below

Connects with PICO_TEST_ORACLE_DSN / _USER / _PASSWORD when set (the live tier's settings, as
scripts/oracle-live-check.sh exports them), else with the configured ``oracle`` section of config.json.
Imports the facts of tests/data (recall_pairs.jsonl + recall_codes.jsonl) under a scratch agent id, so the
database embeds them with its model; gathers each paired question's, code query's and off-topic question's
candidates and background cosine once (one recall each, nothing touched); then ranks them again in Python
for every (floor, margin) of the grid with ``OracleStore.rank``, the code automatic recall runs, and
measures them with bench/precision_bench.py's ``measure``. Prints the grid, the floor-only comparison, the
best calibration (highest recall@5 with off-topic silence >= 0.85, then recall@1) with its two-fold
estimate, and the ``PushCalibration`` line to paste into ``ranking.ORACLE_PUSH``. Then, as for the file
backend, the chosen (floor, margin) is measured once on the held-out set (tests/data/heldout, its own scratch
agent), never tuned on: paste the line only if that row holds up too. Deletes each scratch agent's memories
at the end, also after an error.

``--check-with-bundled-model`` runs the same steps against the test suite's fake database
(tests/oracle/fake_db.py) with the bundled MiniLM-L6 standing in for the in-database model: the numbers must
be bench/precision_bench.py's for the file backend ordered by plain cosine (same model, same rule; Oracle has
no generic shift), which checks the Oracle path (background vectors in a table, ranking in OracleStore)
without a database.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from picoora.config import Config, load_config  # noqa: E402
from picoora.store import ranking  # noqa: E402
from picoora.store.base import MemoryRecord, RecallResult  # noqa: E402
from picoora.store.oracle import open_oracle_store  # noqa: E402
from picoora.store.oracle.memories import RecallEvidence  # noqa: E402
from picoora.store.oracle.store import OracleStore  # noqa: E402
from precision_bench import FLOOR_ONLY, Sets, best_floor, load_sets, measure, shown  # noqa: E402
from recall_bench import DATA  # noqa: E402

HELDOUT = DATA / "heldout"  # written after the ranking was frozen; only ever measured

FLOORS = tuple(round(0.15 + 0.05 * n, 2) for n in range(8))  # 0.15 .. 0.50
MARGINS = tuple(round(-0.12 + 0.02 * n, 2) for n in range(9))  # -0.12 .. +0.04
SILENCE_TARGET = 0.85  # as for the file backend (bench/precision_bench.py)
LIMIT = 5  # recall@5 is the widest measure


class GatheredSearch:
    """What ``precision_bench.measure`` needs of an index, over an OracleStore: each query's evidence is
    gathered from the database once, then ranked for whatever ``push_calibration`` is set."""

    def __init__(self, store: OracleStore, queries: list[str]):
        self._store = store
        self._evidence: dict[str, RecallEvidence] = {
            q: store.memories.recall_evidence(q, LIMIT) for q in dict.fromkeys(queries)}
        self.without_anchors = sum(e.embedded and e.anchor_best is None for e in self._evidence.values())

    @property
    def push_calibration(self) -> ranking.PushCalibration:
        return self._store.memories.push_calibration

    @push_calibration.setter
    def push_calibration(self, calibration: ranking.PushCalibration) -> None:
        self._store.memories.push_calibration = calibration

    def search(self, query: str, limit: int, *, confident_only: bool = False) -> RecallResult:
        return RecallResult(self._store.memories.rank(self._evidence[query], limit, confident_only=confident_only))


@dataclass(frozen=True)
class GridRow:
    floor: float
    margin: float
    recall_at_1: float
    recall_at_5: float
    silence: float


@dataclass(frozen=True)
class Calibration:
    model: str
    agent: str  # the scratch agent id (its memories are deleted by the time this is returned)
    memories: int  # facts (and look-alikes) stored under the scratch agent
    without_anchors: int  # queries whose background cosine could not be had (0 when the table is filled)
    grid: list[GridRow]
    floor_only: GridRow  # the lowest floor alone that reaches the silence target, for comparison
    best: GridRow | None  # None when no (floor, margin) of the grid reaches the target
    folds: list[tuple[float, float, float]]  # the best row measured on each half of the questions

    def push_line(self) -> str:
        if self.best is None:
            return f"# no (floor, margin) in the grid keeps {SILENCE_TARGET:.0%} of the off-topic questions silent"
        return (f'"{self.model}": PushCalibration(min_similarity={self.best.floor}, anchor_margin={self.best.margin}, '
                f'calibrated_on="bench/oracle_calibrate.py, tests/data, {date.today().isoformat()}"),')


def calibrate(config: Config, sets: Sets, floors=FLOORS, margins=MARGINS, *, pool_factory=None) -> Calibration:
    """Measure the grid on the database ``config`` points at, under a scratch agent whose memories are deleted
    afterwards (``config.oracle.agent_id`` is replaced). ``pool_factory``: the tests' fake database."""
    agent = f"calib_{uuid.uuid4().hex[:12]}"
    scratch = config.model_copy(update={"oracle": config.oracle.model_copy(update={"agent_id": agent})})
    store = open_oracle_store(scratch, pool_factory=pool_factory)
    try:
        texts = sets.facts + sets.distractors
        stored = store.memories.import_records(MemoryRecord(id=f"{agent}_{n}", content=t) for n, t in enumerate(texts))
        search = GatheredSearch(store, sets.queries)
        grid = []
        for floor in floors:
            for margin in margins:
                at1, at5, silence = measure(search, sets, ranking.PushCalibration(floor, margin, "grid"))
                grid.append(GridRow(floor, margin, at1, at5, silence))
        floor = best_floor(search, sets, FLOOR_ONLY, SILENCE_TARGET)
        floor_only = GridRow(floor, FLOOR_ONLY,
                             *measure(search, sets, ranking.PushCalibration(floor, FLOOR_ONLY, "bench")))
        reaching = [row for row in grid if row.silence >= SILENCE_TARGET]
        best = max(reaching, key=lambda r: (r.recall_at_5, r.recall_at_1, r.silence), default=None)
        folds = [] if best is None else [
            measure(search, sets, ranking.PushCalibration(best.floor, best.margin, "fold"), idx) for idx in (0, 1)]
        return Calibration(store.model, agent, stored, search.without_anchors, grid, floor_only, best, folds)
    finally:
        for memory in store.memories.list():
            store.memories.forget(memory.id)
        store.close()


def live_settings() -> Config:
    """The live tier's connection (PICO_TEST_ORACLE_*) when set, else the configured Oracle."""
    config = load_config()
    if os.environ.get("PICO_TEST_ORACLE_DSN"):
        config.oracle = config.oracle.model_copy(update={
            "enabled": True, "mode": "dsn", "dsn": os.environ["PICO_TEST_ORACLE_DSN"],
            "user": os.environ.get("PICO_TEST_ORACLE_USER", "picoora"),
            "password": os.environ.get("PICO_TEST_ORACLE_PASSWORD", "")})
    elif not config.oracle.enabled:
        raise SystemExit("no database: set PICO_TEST_ORACLE_DSN, _USER, _PASSWORD, or enable oracle in config.json")
    return config


def report(result: Calibration) -> list[str]:
    lines = [f"model {result.model}: {result.memories} memories stored under a scratch agent (deleted again)"]
    if result.without_anchors:
        lines.append(f"WARNING: {result.without_anchors} queries had no background cosine (PICO_BACKGROUND_QUESTIONS "
                     "could not be filled: run picoora setup-oracle); the margins below are not meaningful")
    lines.append("| floor | margin | recall@1 | recall@5 | silence |\n|---|---|---|---|---|")
    for row in result.grid:
        lines.append(f"| {row.floor:.2f} | {row.margin:+.2f} | {row.recall_at_1:.3f} | {row.recall_at_5:.3f} | "
                     f"{row.silence:.3f} |")
    f = result.floor_only
    lines.append(f"floor alone (lowest reaching silence {SILENCE_TARGET}): {f.floor:.3f}: recall@1 {f.recall_at_1:.3f} "
                 f"recall@5 {f.recall_at_5:.3f} silence {f.silence:.3f}")
    if result.best is not None:
        b = result.best
        lines.append(f"best: floor {b.floor:.2f} margin {b.margin:+.2f}: recall@1 {b.recall_at_1:.3f} "
                     f"recall@5 {b.recall_at_5:.3f} silence {b.silence:.3f}; folds: "
                     + "  ".join(f"r@5 {at5:.3f} sil {sil:.3f}" for _, at5, sil in result.folds))
    lines += ["paste into picoora/store/ranking.py ORACLE_PUSH:", "    " + result.push_line()]
    return lines


def bundled_model_database():
    """(config, pool factory) of the test suite's fake database with the bundled MiniLM-L6 as its model."""
    from picoora.store.embedder import MiniLMEmbedder
    from tests.oracle.conftest import oracle_config, set_up_schema
    from tests.oracle.fake_db import FakeOracle

    fake = FakeOracle()
    fake.embedder = MiniLMEmbedder()
    config = oracle_config()
    config.memory = config.memory.model_copy(update={"min_similarity": ranking.MINILM_SIMILARITY_FLOOR})
    set_up_schema(fake, config)
    return config, fake.pool_factory


def confirm(config: Config, sets: Sets, chosen: GridRow, *, pool_factory=None) -> GridRow:
    """``chosen`` (picked on the tuning set) measured on the held-out ``sets``, under a scratch agent of its own."""
    return calibrate(config, sets, (chosen.floor,), (chosen.margin,), pool_factory=pool_factory).grid[0]


def describe(name: str, sets: Sets) -> str:
    return (f"{name}: {len(sets.pairs)} paraphrased pairs + {len(sets.codes)} code queries over {len(sets.facts)} "
            f"facts, {len(sets.offtopic)} off-topic questions")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--distractors", type=int, default=0, help="look-alike memories stored with the facts")
    parser.add_argument("--heldout", type=Path, default=HELDOUT, metavar="DIR",
                        help="the held-out set the chosen calibration is confirmed on (default tests/data/heldout)")
    parser.add_argument("--check-with-bundled-model", action="store_true",
                        help="no database: the test fake with the bundled MiniLM-L6 as its model")
    args = parser.parse_args()
    sets, heldout = load_sets(DATA, args.distractors), load_sets(args.heldout)
    print(describe("tuning set (tests/data)", sets), flush=True)
    if args.check_with_bundled_model:
        print("A check, not a calibration (do not paste): the fake database with the bundled MiniLM-L6 as its model; "
              "the rows must equal bench/precision_bench.py's for MiniLM-L6 ordered by plain cosine, "
              "same floor and margin.")
        config, pool_factory = bundled_model_database()
    else:
        config, pool_factory = live_settings(), None
    result = calibrate(config, sets, pool_factory=pool_factory)
    print("\n".join(report(result)))
    if result.best is not None:
        row = confirm(config, heldout, result.best, pool_factory=pool_factory)
        print(f"{describe(f'held out ({shown(args.heldout)})', heldout)}; the chosen floor {row.floor:.2f} margin "
              f"{row.margin:+.2f}: recall@1 {row.recall_at_1:.3f} recall@5 {row.recall_at_5:.3f} "
              f"silence {row.silence:.3f}")


if __name__ == "__main__":
    main()
