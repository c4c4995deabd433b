"""Speed work must not change results: seeded MLP training runs give the same moves, rewards and metrics as the
values recorded in tests/data/seeded_mlp_runs.json (see tests/seeded_mlp_runs.py for when to record again)."""

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


def test_first_uniform_is_numpys_default_rng_first_draw_bit_for_bit():
    import numpy as np

    from marl_llm_envs.fast_rng import first_uniform, first_uniforms

    rng = np.random.default_rng(17)
    keys = []
    for n in range(2000):
        key = [int(k) for k in rng.integers(0, 2**63, size=int(rng.integers(1, 8)))]
        if n % 3 == 0:
            key = [k % 1000 for k in key]          # one-word entries
        if n % 5 == 0:
            key[0] = 0
        keys.append(key)
        assert first_uniform(key) == np.random.default_rng(key).random(), key
    assert first_uniforms(keys) == [np.random.default_rng(k).random() for k in keys]   # the batched version
    for width in (1, 3, 4, 6):       # equally long keys of one-word entries: the batch read as one array
        same = [[int(k) for k in rng.integers(0, 2**32, size=width)] for _ in range(300)]
        same[0] = [0] * width
        same[1] = [2**32 - 1] * width
        assert first_uniforms(same) == [np.random.default_rng(k).random() for k in same], width
    for size in (1, 2, 7, 33):       # batch sizes (lanes per int); entries as tuples, ranges and iterators too
        batch = [[int(k) for k in rng.integers(0, 2**32, size=4)] for _ in range(size)]
        batch[-1] = [2**32 - 1, 0, 2**32 - 1, 0]
        mixed = [tuple(k) if i % 3 == 1 else iter(k) if i % 3 == 2 else k for i, k in enumerate(batch)]
        want = [np.random.default_rng(k).random() for k in batch]
        assert first_uniforms(batch) == want and first_uniforms(mixed) == want, size
    assert first_uniforms([range(3), iter([2**40, 5])]) == [np.random.default_rng(k).random()
                                                             for k in ([0, 1, 2], [2**40, 5])]


def test_mlp_sampling_matches_numpys_choice_on_the_request_key():
    # MLPPolicy draws searchsorted(cdf, first_uniform(key)); it must equal default_rng(key).choice(n, p=p).
    import numpy as np

    from marl_llm_envs.fast_rng import first_uniform

    rng = np.random.default_rng(3)
    for n in range(2000):
        k = int(rng.integers(1, 12))
        p = rng.random(k) * (rng.random(k) > 0.2)
        p[int(rng.integers(k))] += 0.1
        p = p / p.sum()
        key = [int(x) for x in rng.integers(0, 2**40, size=4)]
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        assert int(np.searchsorted(cdf, first_uniform(key), side="right")) == np.random.default_rng(key).choice(k, p=p)
