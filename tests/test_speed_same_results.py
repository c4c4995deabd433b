"""Speed work must not change results: seeded MLP training runs give the same moves, rewards and metrics as the
values recorded before the micro-tier speed changes (issue 17) in tests/data/seeded_mlp_runs.json."""

from __future__ import annotations

import json

import pytest

from tests.seeded_mlp_runs import FIXTURE, record

RECORDED = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_seeded_mlp_run_plays_the_recorded_moves_rewards_and_metrics(recorded):
    now = record(recorded["name"], recorded["config"])
    now = json.loads(json.dumps(now, sort_keys=True))   # the fixture's JSON types (tuples -> lists)
    for k, (want, got) in enumerate(zip(recorded["steps"], now["steps"])):
        assert got == want, f"step {k}: episodes differ from the recording"
    assert len(now["steps"]) == len(recorded["steps"])
    assert now["metrics"] == recorded["metrics"]
