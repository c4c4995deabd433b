"""The ``shuffled`` negative control against hand-worked groups: each turn gets broadcast's advantage of a random
episode of its group (any of them by default, the other ones with ``draw="others"``), deterministically given the
batch and the method's state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from baselines.credit import make_credit
from marl_llm_envs import list_envs
from tests.baselines.credit.helpers import episode, think_solve

S = 1 / math.sqrt(2 / 9)          # 1 / the population std of [1, 0, 0]


def test_two_samples_swap_their_broadcast_advantages():
    # rewards [1, 0]: broadcast gives [+1, -1]; the only other episode of each is the other one
    batch = [think_solve(0, 1.0, sample=0), think_solve(0, 0.0, sample=1)]
    adv = make_credit("shuffled", draw="others").advantages(batch)
    assert adv == [pytest.approx([-1.0, -1.0], abs=1e-5), pytest.approx([1.0, 1.0], abs=1e-5)]


def test_three_samples_draw_only_from_the_other_episodes():
    # rewards [1, 0, 0]: broadcast gives [2/3 S, -1/3 S, -1/3 S] = [1.414, -0.707, -0.707]
    batch = [think_solve(0, 1.0, sample=0), think_solve(0, 0.0, sample=1), think_solve(0, 0.0, sample=2)]
    method = make_credit("shuffled", draw="others")
    seen = set()
    for _ in range(20):
        adv = method.advantages(batch)
        assert adv[0] == pytest.approx([-S / 3] * 2, abs=1e-5)        # both others lost
        for row in adv[1:]:
            for a in row:
                assert a == pytest.approx(2 * S / 3, abs=1e-5) or a == pytest.approx(-S / 3, abs=1e-5)
                seen.add(round(a, 4))
    assert len(seen) == 2                                                  # the draw does pick both others


def test_a_group_of_one_gets_zero_and_groups_never_mix():
    batch = [think_solve(0, 1.0), think_solve(1, 1.0, sample=0), think_solve(1, 0.0, sample=1)]
    adv = make_credit("shuffled", draw="others").advantages(batch)
    assert adv[0] == [0.0, 0.0]
    assert adv[1] == pytest.approx([-1.0, -1.0], abs=1e-5) and adv[2] == pytest.approx([1.0, 1.0], abs=1e-5)


def test_same_batch_and_state_give_the_same_draws_and_resume_is_exact():
    batch = [think_solve(g, float(s % 2), sample=s) for g in range(3) for s in range(4)]
    a, b = make_credit("shuffled"), make_credit("shuffled")
    assert a.advantages(batch) == b.advantages(batch)
    a.advantages(batch)
    state = a.state_dict()
    assert state == {"calls": 2}
    resumed = make_credit("shuffled")
    resumed.load_state_dict(state)
    assert resumed.advantages(batch) == a.advantages(batch)
    assert make_credit("shuffled", seed=1).advantages(batch) != make_credit("shuffled").advantages(batch)
    reordered = batch[4:] + batch[:4]                                      # the group order does not matter
    assert make_credit("shuffled").advantages(reordered) == make_credit("shuffled").advantages(batch)[4:] \
        + make_credit("shuffled").advantages(batch)[:4]


def test_an_empty_call_does_not_move_the_draws():
    # it counted as a scored batch, so every later draw differed from a run that never made the call
    batch = [think_solve(g, float(s % 2), sample=s) for g in range(3) for s in range(4)]
    a, b = make_credit("shuffled"), make_credit("shuffled")
    assert a.advantages([]) == []
    assert a.advantages(batch) == b.advantages(batch) and a.state_dict() == b.state_dict() == {"calls": 1}


def test_bad_state_and_options_name_the_field():
    with pytest.raises(ValueError, match="calls"):
        make_credit("shuffled").load_state_dict({"calls": -1})
    with pytest.raises(ValueError, match="seed must be"):
        make_credit("shuffled", seed="x")


def test_shuffled_applies_on_every_env():
    method = make_credit("shuffled")
    for env_id in list_envs():
        assert method.branches(env_id) == []


def test_agents_absent_from_other_episodes_get_zero():
    # voter_1 acts only in sample 0, so it has nobody to borrow from
    one = episode(0, {"a": 1.0, "b": 1.0}, [("a", 0.0), ("b", 1.0)], sample=0)
    two = episode(0, {"a": 0.0}, [("a", 0.0)], sample=1)
    for draw in ("others", "any"):
        adv = make_credit("shuffled", draw=draw).advantages([one, two])
        assert adv[0][1] == 0.0                                      # never its own advantage
        if draw == "others":
            assert adv == [pytest.approx([-1.0, 0.0], abs=1e-5), pytest.approx([1.0], abs=1e-5)]


def test_drawing_from_others_is_minus_broadcast_over_g_minus_1_on_average_and_any_is_zero():
    # rewards [1, 0, 0, 0]: broadcast A = [3, -1, -1, -1] / sqrt(3). Averaged over many calls, "others" gives
    # -A_i / 3 (the documented bias), "any" gives 0 for every episode.
    batch = [think_solve(0, 1.0 if s == 0 else 0.0, sample=s) for s in range(4)]
    a = 1 / math.sqrt(3)
    for draw, want in (("others", [-a, a / 3, a / 3, a / 3]), ("any", [0.0] * 4)):
        method = make_credit("shuffled", draw=draw)
        mean = np.mean([[row[0] for row in method.advantages(batch)] for _ in range(3000)], axis=0)
        assert mean == pytest.approx(want, abs=0.05)
    assert make_credit("shuffled").draw == "any"          # the suite's control carries no credit in expectation
    with pytest.raises(ValueError, match="draw="):
        make_credit("shuffled", draw="all")


def _trainer_method(seed: int, tmp_path, options: dict | None = None):
    """The credit method the trainer builds for a run with training seed ``seed`` (before any rollout)."""
    from baselines.train import TrainConfig
    from baselines.train.loop import prepare as _prepare

    cfg = TrainConfig(env="think_solve-v0", model="mlp", action_mode="discrete", credit="shuffled",
                      credit_options=options or {}, seed=seed, steps=1, out=str(tmp_path / f"run{seed}"),
                      progress=False, tensorboard=False)
    return _prepare(cfg).method


def test_the_trainer_seeds_shuffled_with_the_training_seed(tmp_path):
    # before: every run used the option's seed 0, and the group keys ("step-k", g) repeat across runs, so every
    # training seed of a suite drew the same shuffle pattern
    batch = [think_solve(g, float(s % 2), sample=s) for g in range(3) for s in range(4)]
    one, again, two = (_trainer_method(s, tmp_path) for s in (1, 1, 2))
    assert (one.seed, two.seed) == (1, 2)
    assert one.advantages(batch) == again.advantages(batch)               # one training seed reproduces
    assert one.advantages(batch) != two.advantages(batch)                 # two training seeds draw differently
    assert _trainer_method(2, tmp_path, {"seed": 5}).seed == 5                  # an explicit option still wins
