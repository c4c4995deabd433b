"""Speed work must not change results: seeded MLP training runs give the same moves, rewards and metrics as the
values recorded in tests/data/seeded_mlp_runs.json (see tests/seeded_mlp_runs.py for when to record again)."""

from __future__ import annotations

import json

import pytest

from tests.seeded_mlp_runs import FIXTURE, record

RECORDED = json.loads(FIXTURE.read_text())


# The float32 values torch computes (a turn's log-probabilities, the update's gradient norm, entropy and clip fraction)
# move in their last bit between CPUs: the same torch build takes other SIMD kernels (AVX-512 or AVX2) with another
# summation order (seen: Mini Hanabi's MLP, relative differences up to 2e-7). They are compared to a relative 1e-5;
# every move, seed, reward, advantage and branch must be the recorded one exactly.
TORCH_FLOATS = ("logprobs", "grad_norm", "entropy", "clip_frac")


def _differences(want, got, path="", torch_float=False) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        if want.keys() != got.keys():
            return [f"{path}: keys {sorted(want)} != {sorted(got)}"]
        return [d for k in want for d in _differences(want[k], got[k], f"{path}/{k}", torch_float or k in TORCH_FLOATS)]
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(want)} items != {len(got)}"]
        return [d for i, (w, g) in enumerate(zip(want, got)) for d in _differences(w, g, f"{path}[{i}]", torch_float)]
    if torch_float and type(want) is float and type(got) is float:
        return [] if got == pytest.approx(want, rel=1e-5, abs=1e-7) else [f"{path}: {want!r} != {got!r}"]
    return [] if type(want) is type(got) and want == got else [f"{path}: {want!r} != {got!r}"]


def test_the_comparison_is_exact_but_for_torchs_last_bits():
    want = {"actions": [3, 1], "turn_rewards": [0.0, 1.0], "logprobs": [[-1.403381586074829]], "grad_norm": 0.44}
    assert _differences(want, {**want, "logprobs": [[-1.4033817052841187]], "grad_norm": 0.44000003}) == []
    assert _differences(want, {**want, "logprobs": [[-1.4034]]})                    # a changed distribution
    assert _differences(want, {**want, "actions": [3, 2]})                          # a changed move
    assert _differences(want, {**want, "turn_rewards": [0.0, 1.0000001]})           # rewards are exact
    assert _differences(want, {**want, "actions": [3]})
    assert _differences({"reward/team": 1}, {"reward/team": 1.0})                   # a type change shows


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_seeded_mlp_run_plays_the_recorded_moves_rewards_and_metrics(recorded):
    now = record(recorded["name"], recorded["config"])
    now = json.loads(json.dumps(now, sort_keys=True))   # the fixture's JSON types (tuples -> lists)
    for k, (want, got) in enumerate(zip(recorded["steps"], now["steps"])):
        assert not _differences(want, got, f"step {k}"), _differences(want, got, f"step {k}")[:10]
    assert len(now["steps"]) == len(recorded["steps"])
    assert not _differences(recorded["metrics"], now["metrics"], "metrics"), \
        _differences(recorded["metrics"], now["metrics"], "metrics")[:10]


def test_a_fresh_process_trains_the_recorded_floats_without_being_told_which_kernels(tmp_path):
    # No MKL_CBWR in the environment (tests/conftest.py sets it for this process): the MLP policy asks MKL for its
    # AVX2 kernels itself, before the run's first matrix product, so the floats are the recorded ones on an AVX-512
    # CPU too (without it, voting-v0's log-probabilities there were 3e-4 apart after one update)
    import os
    import subprocess
    import sys

    from tests.seeded_mlp_runs import ROOT

    recorded = RECORDED[0]
    script = ("import json, sys; from tests.seeded_mlp_runs import record; "
              f"json.dump(record({recorded['name']!r}, {recorded['config']!r}), sys.stdout)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MKL_")}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    now = json.loads(json.dumps(json.loads(out), sort_keys=True))
    diffs = [d for k, (want, got) in enumerate(zip(recorded["steps"], now["steps"]))
             for d in _differences(want, got, f"step {k}")]
    assert not diffs, diffs[:10]
    assert not _differences(recorded["metrics"], now["metrics"], "metrics")


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
    for seed in [0, 1, 2**32 - 1, 2**32, 2**63 - 2, 2**64 - 1, 2**64, 2**130 + 7,
                 *[int(k) for k in rng.integers(0, 2**63 - 1, size=500)]]:     # one int: the seed's own state
        assert first_uniform([seed]) == first_uniform(iter([seed])) == np.random.default_rng(seed).random(), seed
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
