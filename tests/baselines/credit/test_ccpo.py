"""ccpo_v1 (history-aware shaping of joint minus solo) and ccpo_v2 (the event bonus) against hand-worked
numbers, their branch needs, and v1's running statistics."""

from __future__ import annotations

import json
import math

import pytest

from baselines.credit import make_credit
from baselines.rollout import BranchSpec
from tests.baselines.credit.helpers import approx, think_solve


def test_ccpo_v1_warm_up_then_stale_history_shaping():
    method = make_credit("ccpo_v1", min_samples=4)
    first = [think_solve(0, j, sample=n, solo=s) for n, (j, s) in enumerate([(1, 0), (1, 1), (1, 0), (0, 0)])]
    adv = method.advantages(first)
    # Warm-up (no earlier batch): thinker D = [1, 0, 1, 0], solver R_joint = [1, 1, 1, 0]; then GRPO with the
    # sample std: thinker mean 0.5, std sqrt(1/3) -> +-0.866025; solver mean 0.75, std 0.5 -> [0.5, 0.5, 0.5, -1.5].
    assert [a[0] for a in adv] == approx([0.866025, -0.866025, 0.866025, -0.866025])
    assert [a[1] for a in adv] == approx([0.5, 0.5, 0.5, -1.5])
    # Statistics set by the first batch: D mean 0.5, var 0.25; joint 0.75, 0.1875; solo 0.25, 0.1875.
    assert method.state_dict()["stats"] == {"D": {"mean": 0.5, "m2": 0.25}, "joint": {"mean": 0.75, "m2": 0.1875},
                                            "solo": {"mean": 0.25, "m2": 0.1875}}
    saved = json.loads(json.dumps(method.state_dict()))
    second = [think_solve(1, j, sample=n, solo=s) for n, (j, s) in enumerate([(1, 0), (0, 1), (1, 1)])]
    adv = method.advantages(second)
    # D = [1, -1, 0]: thinker tanh((D - 0.5) / 0.5) = tanh([1, -3, -1]) = [0.761593, -0.995055, -0.761593];
    # g = sigmoid(0.5 / 0.5) = 0.731059; z_joint = (joint - 0.75) / 0.433013 = [0.57735, -1.732051, 0.57735];
    # z_solo = (solo - 0.25) / 0.433013 = [-0.57735, 1.732051, 1.732051]; solver g z_joint + (1 - g) z_solo =
    # [0.266802, -0.800407, 0.887895]; then GRPO (sample std) within the group:
    assert [a[0] for a in adv] == approx([1.146022, -0.695373, -0.450649])
    assert [a[1] for a in adv] == approx([0.174145, -1.075633, 0.901489])
    # EMA (0.99) after the second batch.
    stats = method.state_dict()["stats"]
    assert stats["D"] == {"mean": approx(0.495), "m2": approx(0.2541667)}
    assert stats["solo"] == {"mean": approx(0.2541667), "m2": approx(0.1878472)}
    resumed = make_credit("ccpo_v1", min_samples=4)
    resumed.load_state_dict(saved)
    assert resumed.advantages(second) == adv


def test_ccpo_v1_waits_for_min_samples_before_shaping():
    method = make_credit("ccpo_v1")   # min_samples = 10
    batch = [think_solve(0, j, sample=n, solo=s) for n, (j, s) in enumerate([(1, 0), (0, 0), (1, 1), (0, 1)])]
    method.advantages(batch)
    unshaped = make_credit("ccpo_v1").advantages(batch)   # a fresh method: warm-up
    assert method.advantages(batch) == unshaped            # 4 values seen < 10: still no shaping


def test_ccpo_v2_event_bonus():
    g0 = [think_solve(0, j, sample=n, solo=s) for n, (j, s) in enumerate([(1, 0), (1, 0), (0, 0), (0, 1)])]
    g1 = [think_solve(1, j, sample=n, solo=s) for n, (j, s) in enumerate([(0, 1), (1, 1)])]
    method = make_credit("ccpo_v2")
    adv = method.advantages(g0 + g1)
    # g0: joint +1 +1 -1 -1; solo -1 -1 -1 +1, b_solo = -0.5: the first two helped. Thinker [1.2, 1.2, -1, -1]
    # centred (mean 0.1) -> [1.1, 1.1, -1.1, -1.1]; solver [1, 1, -1, -1].
    # g1: joint -1 +1; b_solo = +1: the first one hurt. Thinker [-1.2, 1] -> [-1.1, 1.1]; solver [-1, 1].
    assert adv == [[approx(1.1), 1.0], [approx(1.1), 1.0], [approx(-1.1), -1.0], [approx(-1.1), -1.0],
                   [approx(-1.1), -1.0], [approx(1.1), 1.0]]
    diag = method.diagnostics(g0 + g1)
    assert diag == {"help_rate": approx(2 / 6), "hurt_rate": approx(1 / 6), "same_rate": approx(3 / 6),
                    "mean_joint_minus_solo": approx(0.0)}


def test_ccpo_v2_maps_an_invalid_move_penalty_to_minus_one():
    es = [think_solve(0, -1.0, sample=0, solo=1.0), think_solve(0, 1.0, sample=1, solo=1.0)]
    adv = make_credit("ccpo_v2").advantages(es)
    # joint -1 (penalty) and +1; b_solo = +1: the first hurt. Thinker [-1.2, 1] -> [-1.1, 1.1].
    assert adv == [[approx(-1.1), -1.0], [approx(1.1), 1.0]]


def test_ccpo_branches_need_a_thinker_role():
    assert make_credit("ccpo_v2").branches("think_solve-v0") == [BranchSpec("ablate", "thinker")]
    with pytest.raises(ValueError, match="needs a 'thinker' role"):
        make_credit("ccpo_v1").branches("voting-v0")


def test_an_empty_batch_leaves_ccpo_v1s_running_statistics_as_they_were():
    """CCPO v1 shapes with running means of the batches it has seen; an empty batch has none. It used to store NaN
    means (NumPy's mean of nothing) and count the batch, so every later batch was shaped by NaN."""
    import warnings

    from baselines.policies.scripted import ScriptedPolicy
    from baselines.rollout import RolloutEngine
    from marl_llm_envs.scripted import random_legal

    engine = RolloutEngine(ScriptedPolicy(random_legal, seed=0), show_progress=False)
    batches = [engine.run("think_solve-v0", 4, 2, seed=s, branches=BranchSpec.parse("ablate:thinker"))
               for s in range(3)]
    plain, with_empty = make_credit("ccpo_v1", min_samples=1), make_credit("ccpo_v1", min_samples=1)
    expected = [plain.advantages(b) for b in batches]
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no "mean of empty slice"
        assert with_empty.advantages([]) == []
    assert with_empty.state_dict() == make_credit("ccpo_v1", min_samples=1).state_dict()
    got = [with_empty.advantages(b) for b in batches]
    assert got == expected and all(math.isfinite(x) for rows in got for row in rows for x in row)
