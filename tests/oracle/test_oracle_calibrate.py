"""bench/oracle_calibrate.py against the fake database: the mechanics of the calibration (scratch agent,
evidence gathered once, the grid ranked by OracleStore.rank, cleanup). The numbers mean something only on a
live database (tests/oracle/test_live.py runs it there); here the hash embedder scores, so only relations
that hold for any embedder are checked."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest

from picoora.store import ranking
from picoora.store.oracle import open_oracle_store
from tests.cli_support import REPO


def load_calibration_script():
    spec = importlib.util.spec_from_file_location("oracle_calibrate", REPO / "bench" / "oracle_calibrate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def calibration_script():
    return load_calibration_script()


def small_sets(script):
    tuning = script.load_sets()
    pairs, codes = tuning.pairs[:12], tuning.codes[:4]
    facts = list(dict.fromkeys([p["fact"] for p in pairs] + [c["fact"] for c in codes]))
    return script.Sets(pairs, codes, facts, [], offtopic=["Who invented the telephone?", "hey", "What is DNA made of?",
                                                          "Tell me a joke about penguins"])


def test_the_calibration_measures_a_grid_and_leaves_no_scratch_data(calibration_script, fake, config, open_store):
    open_store()  # the schema, set up
    sets = small_sets(calibration_script)
    result = calibration_script.calibrate(config, sets, floors=(0.1, 0.99), margins=(-2.0, 0.0),
                                          pool_factory=fake.pool_factory)
    assert result.memories == len(sets.facts) and result.without_anchors == 0
    assert [(r.floor, r.margin) for r in result.grid] == [(0.1, -2.0), (0.1, 0.0), (0.99, -2.0), (0.99, 0.0)]
    by = {(r.floor, r.margin): r for r in result.grid}
    for row in result.grid:
        assert 0.0 <= row.recall_at_1 <= row.recall_at_5 <= 1.0 and 0.0 <= row.silence <= 1.0
    assert by[(0.99, 0.0)].silence == 1.0  # nothing off-topic clears a 0.99 floor (and none holds a code)
    # margin -2 lets every match through (cosines differ by at most 2): the floor alone decides
    assert by[(0.99, 0.0)].recall_at_5 < by[(0.1, -2.0)].recall_at_5  # a higher bar pushes fewer true facts
    assert by[(0.1, -2.0)].silence < by[(0.1, 0.0)].silence  # the anchors silence off-topic look-alikes
    assert result.best is not None and result.best.silence >= calibration_script.SILENCE_TARGET
    assert len(result.folds) == 2 and math.isfinite(result.floor_only.floor)
    line = result.push_line()
    assert line.startswith('"ALL_MINILM_L12_V2": PushCalibration(min_similarity=')
    pasted = eval("{" + line + "}", {"PushCalibration": ranking.PushCalibration})  # pastes into the dict as printed
    assert pasted["ALL_MINILM_L12_V2"] == ranking.PushCalibration(result.best.floor, result.best.margin,
                                                                 pasted["ALL_MINILM_L12_V2"].calibrated_on)
    scratch = config.model_copy(update={"oracle": config.oracle.model_copy(update={"agent_id": result.agent})})
    store = open_oracle_store(scratch, pool_factory=fake.pool_factory)
    try:
        assert store.memories.list() == [] and store.stats().memories == 0
    finally:
        store.close()
    assert all(r["access_count"] == 0 for r in fake.rows("PICO_MEMORIES"))  # gathering touched nothing
    report = "\n".join(calibration_script.report(result))
    assert "| 0.99 | +0.00 | 0." in report and "paste into picoora/store/ranking.py ORACLE_PUSH:" in report
