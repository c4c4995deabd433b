"""Credit methods against hand-worked examples (the numbers are written out, computed by hand from each paper's
equation), grouping by group key, state round trips, user classes, and clear errors on bad input."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest

from baselines.credit import CreditMethod, list_credits, make_credit
from baselines.credit.base import normalize, normalize_many
from baselines.episode import Branch, Episode, Turn
from baselines.rollout import BranchSpec
from tests.float_rows import hard_float_rows

TEAM = {"thinker": "team", "solver": "team"}


def episode(group, rewards, turns, *, env_id="think_solve-v0", branches=(), final_infos=None, run_id="r",
            sample=0, teams=None, roles=None, tokens=None):
    """An Episode by hand: ``turns`` = [(agent, turn reward)], roles and teams default to the agent's name / ``team``."""
    teams = teams or {}
    roles = roles or {}
    made = []
    for k, (agent, r) in enumerate(turns):
        n = (tokens or {}).get(k, 1)
        made.append(Turn(agent, roles.get(agent, agent), teams.get(agent, "team"), completion_ids=[7] * n,
                         reward=r, turn_index=k))
    team_rewards = {}
    for agent, r in rewards.items():
        team_rewards[teams.get(agent, "team")] = r
    return Episode(env_id, 0, {}, seed=group, task_id=None, group_id=group, sample_index=sample, turns=made,
                   rewards=dict(rewards), team_rewards=team_rewards, branches=list(branches),
                   final_infos=final_infos or {}, run_id=run_id)


def think_solve(group, r, sample=0, solo=None, branches=()):
    """A think_solve episode with team reward ``r`` (thinker turn 0, solver turn 1) and, if given, the reward of its
    ablate-thinker branch."""
    bs = list(branches)
    if solo is not None:
        bs.append(Branch("ablate", "thinker", 0, team_rewards={"team": solo}))
    return episode(group, {"thinker": r, "solver": r}, [("thinker", 0.0), ("solver", r)], branches=bs,
                   sample=sample)


def approx(x, rel=1e-5, abs=1e-6):
    return pytest.approx(x, rel=rel, abs=abs)


# ---------------------------------------------------------------------- the registry
def test_list_credits_lists_the_built_in_methods():
    assert {"broadcast", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2", "dr_mas"} <= set(list_credits())


def test_unknown_method_and_option_name_what_exists():
    with pytest.raises(ValueError, match="registered: broadcast"):
        make_credit("grpo")
    with pytest.raises(ValueError, match=r"rae has no option 'decayy'; its options: decay=0.95, update='episode'"):
        make_credit("rae", decayy=0.9)
    with pytest.raises(ValueError, match="decay must be in"):
        make_credit("rae", decay=1.5)
    with pytest.raises(ValueError, match="std="):
        make_credit("broadcast", std="bessel")


def test_make_credit_loads_a_user_class(tmp_path, monkeypatch):
    (tmp_path / "my_credit.py").write_text(
        "from baselines.credit import CreditMethod\n"
        "class ConstantCredit(CreditMethod):\n"
        "    def __init__(self, value=2.0):\n"
        "        self.value = value\n"
        "    def advantages(self, episodes):\n"
        "        return [[self.value] * len(e.turns) for e in episodes]\n"
        "class NotAMethod:\n"
        "    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    method = make_credit("my_credit:ConstantCredit", value=3.0)
    assert method.advantages([think_solve(0, 1.0)]) == [[3.0, 3.0]]
    with pytest.raises(ValueError, match="no option 'valu'"):
        make_credit("my_credit:ConstantCredit", valu=1)
    with pytest.raises(ValueError, match="not a subclass"):
        make_credit("my_credit:NotAMethod")
    with pytest.raises(ValueError, match="has no 'Missing'"):
        make_credit("my_credit:Missing")
    with pytest.raises(ValueError, match="cannot import"):
        make_credit("no_such_module_xyz:Foo")


def test_package_docstring_example_is_the_dr_mas_source():
    import inspect
    import textwrap

    import baselines.credit as credit
    from baselines.credit.dr_mas import DrMAS

    source = inspect.getsource(DrMAS)
    assert textwrap.indent(source, "    ").rstrip() in credit.__doc__
    assert len(source.splitlines()) <= 60


# ---------------------------------------------------------------------- broadcast and none
def test_broadcast_textbook_group():
    episodes = [think_solve(0, r, sample=j) for j, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    adv = make_credit("broadcast").advantages(episodes)
    assert adv == [[approx(1.0)] * 2, [approx(-1.0)] * 2, [approx(-1.0)] * 2, [approx(1.0)] * 2]
    sample = make_credit("broadcast", std="sample").advantages(episodes)
    assert [a[0] for a in sample] == approx([0.866025, -0.866025, -0.866025, 0.866025])  # 0.5 / sqrt(1/3)
    centred = make_credit("broadcast", std=None).advantages(episodes)
    assert [a[0] for a in centred] == approx([0.5, -0.5, -0.5, 0.5])


def test_groups_are_formed_by_group_key_not_by_list_order():
    a = [think_solve(0, r, sample=j) for j, r in enumerate([1.0, 0.0, 0.0, 1.0])]
    b = [think_solve(1, r, sample=j) for j, r in enumerate([1.0, 1.0, 1.0, 0.0])]
    c = [think_solve(0, r, sample=j) for j, r in enumerate([0.0, 0.0])]   # same group_id, another run
    for e in c:
        e.run_id = "other"
    batch = a + b + c
    order = list(range(len(batch)))
    random.Random(0).shuffle(order)
    shuffled = [batch[i] for i in order]
    adv = make_credit("broadcast").advantages(shuffled)
    by_episode = {order[n]: adv[n][0] for n in range(len(batch))}
    expected = [1, -1, -1, 1, 0.57735, 0.57735, 0.57735, -1.732051, 0.0, 0.0]  # B: mean 0.75, std 0.4330127
    assert [by_episode[i] for i in range(len(batch))] == approx(expected)


def test_broadcast_zero_sum_seats_and_a_group_of_one():
    seats = {"player_0": "player_0", "player_1": "player_1"}
    e1 = episode(0, {"player_0": 1.0, "player_1": -1.0}, [("player_0", 0.0), ("player_1", 0.0)], teams=seats,
                 env_id="kuhn_poker-v0")
    e2 = episode(0, {"player_0": -1.0, "player_1": 1.0}, [("player_0", 0.0), ("player_1", 0.0)], teams=seats,
                 env_id="kuhn_poker-v0", sample=1)
    assert make_credit("broadcast").advantages([e1, e2]) == [[approx(1), approx(-1)], [approx(-1), approx(1)]]
    # A group of one sample has no baseline: its advantage is the return (verl's rule).
    assert make_credit("broadcast").advantages([think_solve(5, 0.5)]) == [[0.5, 0.5]]
    assert make_credit("none").advantages([e1]) == [[1.0, -1.0]]


def test_normalize_helper_matches_the_formula():
    assert normalize([2.0, 4.0], "population") == approx([-1.0, 1.0])
    assert normalize([2.0, 4.0], "sample") == approx([-0.707107, 0.707107])
    assert normalize([3.0, 3.0, 3.0], "population") == [0.0, 0.0, 0.0]


def _bits(rows):
    return [np.asarray(r, dtype=np.float64).tobytes() for r in rows]


@pytest.mark.parametrize("std", ["population", "sample", None])
def test_normalize_many_gives_normalize_of_each_row_bit_for_bit(std):
    # broadcast's advantages come from normalize_many (one NumPy call per group size); a run's results must be the
    # same floats as normalize() row by row, signed zeros, huge and tiny values, long rows (pairwise sums) included
    rows = hard_float_rows(11, 600, min_size=0)
    got = normalize_many(rows, std, 1e-6)
    assert _bits(got) == _bits(normalize(r, std, 1e-6) for r in rows)
    assert normalize_many([], std) == []


# ---------------------------------------------------------------------- rae
def kuhn(r0, sample=0):
    seats = {"player_0": "player_0", "player_1": "player_1"}
    return episode(0, {"player_0": r0, "player_1": -r0}, [("player_0", 0.0), ("player_1", 0.0), ("player_0", r0)],
                   teams=seats, env_id="kuhn_poker-v0", sample=sample)


def test_rae_reads_the_baseline_before_its_update():
    rae = make_credit("rae")
    adv = rae.advantages([kuhn(1.0), kuhn(-2.0, 1), kuhn(1.0, 2)])
    # player_0: b = 0 -> A = 1, b = 0.05; A = -2 - 0.05 = -2.05, b = 0.0475 - 0.1 = -0.0525; A = 1.0525.
    # player_1 mirrors it. Every turn of a role gets the same A.
    assert adv == [[approx(1.0), approx(-1.0), approx(1.0)],
                   [approx(-2.05), approx(2.05), approx(-2.05)],
                   [approx(1.0525), approx(-1.0525), approx(1.0525)]]
    assert rae.state_dict()["baselines"]["kuhn_poker-v0"] == {"player_0": approx(0.000125),
                                                              "player_1": approx(-0.000125)}


def test_rae_batch_update_uses_the_baseline_from_before_the_batch():
    rae = make_credit("rae", update="batch")
    assert [a[0] for a in rae.advantages([kuhn(1.0), kuhn(-2.0, 1), kuhn(2.0, 2)])] == approx([1.0, -2.0, 2.0])
    # one update with the batch mean 1/3: b = 0.05 / 3
    assert rae.state_dict()["baselines"]["kuhn_poker-v0"]["player_0"] == approx(0.05 / 3)
    assert [a[0] for a in rae.advantages([kuhn(1.0)])] == approx([1.0 - 0.05 / 3])


def test_rae_state_dict_round_trip_gives_identical_next_advantages():
    first, second = [kuhn(1.0), kuhn(-1.0, 1)], [kuhn(1.0), kuhn(1.0, 1)]
    a = make_credit("rae")
    a.advantages(first)
    b = make_credit("rae")
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert b.advantages(second) == a.advantages(second)
    with pytest.raises(ValueError, match="rae state"):
        b.load_state_dict({"wrong": 1})


# ---------------------------------------------------------------------- marshal
def marshal_batch():
    seats = {"player_0": "player_0", "player_1": "player_1"}
    a = episode(0, {"player_0": 1.5, "player_1": -1.0},
                [("player_0", 0.0), ("player_1", 0.0), ("player_0", 0.5), ("player_1", -1.0), ("player_0", 1.0)],
                teams=seats, env_id="tic_tac_toe-v0")
    b = episode(1, {"player_0": 1.0, "player_1": 2.0}, [("player_0", 1.0), ("player_1", 0.0), ("player_1", 2.0)],
                teams=seats, env_id="tic_tac_toe-v0")
    return [a, b]


def test_marshal_turn_level_returns_minus_the_role_mean():
    adv = make_credit("marshal").advantages(marshal_batch())
    # G (gamma 1): A: player_0 [1.5, 1.5, 1], player_1 [-1, -1]; B: player_0 [1], player_1 [2, 2].
    # Role means over every turn of the batch: player_0 (1.5+1.5+1+1)/4 = 1.25, player_1 (-1-1+2+2)/4 = 0.5.
    assert adv == [[approx(0.25), approx(-1.5), approx(0.25), approx(-1.5), approx(-0.25)],
                   [approx(-0.25), approx(1.5), approx(1.5)]]


def test_marshal_discounts_by_the_seats_own_turns():
    adv = make_credit("marshal", gamma=0.5).advantages(marshal_batch())
    # player_0 in A: G2 = 1, G1 = 0.5 + 0.5 * 1 = 1, G0 = 0 + 0.5 * 1 = 0.5; in B: 1. Mean 3.5 / 4 = 0.875.
    # player_1 in A: G1 = -1, G0 = 0 + 0.5 * -1 = -0.5; in B: G1 = 2, G0 = 1. Mean 1.5 / 4 = 0.375.
    assert adv == [[approx(-0.375), approx(-0.875), approx(0.125), approx(-1.375), approx(0.125)],
                   [approx(0.125), approx(0.625), approx(1.625)]]


def test_marshal_roll_variant_is_per_token_as_released():
    seat = {"player_0": "player_0"}
    a = episode(0, {"player_0": 1.0}, [("player_0", 1.0)], teams=seat, tokens={0: 2})
    b = episode(1, {"player_0": 0.0}, [("player_0", 0.0)], teams=seat, tokens={0: 1})
    method = make_credit("marshal", variant="roll")
    assert method.per_token
    adv = method.advantages([a, b])
    # 1. centre per role: r~ = [0.5, -0.5]; 2. tokens [0, 0.5], [-0.5]: mean 0, unbiased var 0.25 -> [0, 1], [-1];
    # 3. reverse cumsum per seat -> [1, 1], [-1]; 4. distinct values {-1, 1}, mean 0; 5. whiten [1, 1, -1]:
    # mean 1/3, unbiased var 4/3 -> [0.57735, 0.57735], [-1.154701].
    assert adv == [[approx([0.57735, 0.57735])], [approx([-1.154701])]]


# ---------------------------------------------------------------------- coma
def test_coma_subtracts_the_mean_of_the_resampled_outcomes():
    branches = [Branch("resample", "thinker", 0, k, team_rewards={"team": r}) for k, r in enumerate([1.0, 0.0])]
    branches += [Branch("resample", "solver", 1, k, team_rewards={"team": 1.0}) for k in range(2)]
    e = think_solve(0, 1.0, branches=branches)
    assert make_credit("coma").advantages([e]) == [[0.5, 0.0]]


def test_coma_falls_back_to_broadcast_for_roles_it_does_not_resample():
    es = [think_solve(0, r, sample=j, branches=[Branch("resample", "solver", 1, 0, team_rewards={"team": 0.0})])
          for j, r in enumerate([1.0, 0.0])]
    adv = make_credit("coma", roles=["solver"]).advantages(es)
    assert adv == [[approx(1.0), 1.0], [approx(-1.0), 0.0]]
    with pytest.raises(ValueError, match=r"episode 0 .* has no resample branch at turn 0 \(thinker\)"):
        make_credit("coma").advantages(es)


# ---------------------------------------------------------------------- loo
def test_loo_reads_voting_leave_one_out_from_the_final_infos():
    voters = ["voter_0", "voter_1", "voter_2"]
    without = {"voter_0": 0.0, "voter_1": 1.0, "voter_2": 1.0}   # voter_0's ballot was pivotal
    infos = {v: {"team_reward_without": without} for v in voters}
    e = episode(0, {v: 1.0 for v in voters}, [(v, 1.0 if v == "voter_2" else 0.0) for v in voters],
                env_id="voting-v0", final_infos=infos, roles={v: "voter" for v in voters})
    assert make_credit("loo").advantages([e]) == [[1.0, 0.0, 0.0]]
    assert make_credit("loo").branches("voting-v0") == []


def test_loo_uses_the_agents_ablate_branch_and_can_centre_per_role():
    def ep(sample, r, thinker_out, solver_out):
        return think_solve(0, r, sample=sample, branches=[
            Branch("ablate", "thinker", 0, team_rewards={"team": thinker_out}),
            Branch("ablate", "solver", 1, team_rewards={"team": solver_out})])
    es = [ep(0, 1.0, 0.0, 0.0), ep(1, 1.0, 1.0, 0.0)]
    assert make_credit("loo").advantages(es) == [[1.0, 1.0], [0.0, 1.0]]
    assert make_credit("loo", normalize=True).advantages(es) == [[0.5, 0.0], [-0.5, 0.0]]
    assert make_credit("loo").diagnostics(es) == {"mean_R_minus_R_without/solver": 1.0,
                                                  "mean_R_minus_R_without/thinker": 0.5}
    assert make_credit("loo").branches("think_solve-v0") == [BranchSpec("ablate", "solver"),
                                                              BranchSpec("ablate", "thinker")]


# ---------------------------------------------------------------------- ccpo
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


# ---------------------------------------------------------------------- dr_mas
def test_dr_mas_normalizes_each_role_over_its_own_turns():
    roles = {"a": "a", "b": "b"}
    e0 = episode(0, {"a": 2.0, "b": 2.0}, [("a", 0.0), ("b", 0.0), ("a", 2.0)], roles=roles)
    e1 = episode(0, {"a": 0.0, "b": 0.0}, [("a", 0.0), ("b", 0.0)], roles=roles, sample=1)
    adv = make_credit("dr_mas").advantages([e0, e1])
    # Role a: Y_a = [2, 2, 0] (a acts twice in e0): mean 4/3, std sqrt(8/9) = 0.942809 -> 0.707107, -1.414214.
    # Role b: [2, 0] -> +-1. Broadcast would give +-1 to both roles.
    assert adv == [[approx(0.707107), approx(1.0), approx(0.707107)], [approx(-1.414214), approx(-1.0)]]
    assert make_credit("broadcast").advantages([e0, e1]) == [[approx(1.0)] * 3, [approx(-1.0)] * 2]


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("name", ["broadcast", "none", "rae", "marshal", "coma", "loo", "ccpo_v1", "ccpo_v2",
                                  "dr_mas"])
def test_bad_batches_fail_naming_the_episode(name):
    method = make_credit(name)
    empty = think_solve(3, 1.0, solo=0.0)
    empty.turns = []
    with pytest.raises(ValueError, match=r"episode 1 \(think_solve-v0, seed 3, group r/3, sample 0\) has no turns"):
        method.advantages([think_solve(0, 1.0, solo=0.0), empty])
    nan = think_solve(4, 1.0, solo=0.0)
    nan.rewards["solver"] = float("nan")
    with pytest.raises(ValueError, match=r"reward of solver in episode 0 .* not a finite number"):
        method.advantages([nan])
    nan.rewards["solver"] = "nan"   # what a JSONL file holds for a non-finite float
    with pytest.raises(ValueError, match="not a finite number"):
        method.advantages([nan])
    with pytest.raises(TypeError, match="list of Episodes"):
        method.advantages(think_solve(0, 1.0))


@pytest.mark.parametrize("name,hint", [("ccpo_v1", "ablate:thinker"), ("ccpo_v2", "ablate:thinker"),
                                       ("loo", "ablate:thinker")])
def test_a_missing_branch_is_an_error_not_a_zero(name, hint):
    with pytest.raises(ValueError, match=rf"episode 0 .* has no ablate branch at turn 0 .*--branches {hint}"):
        make_credit(name).advantages([think_solve(0, 1.0)])


def test_nan_in_a_branch_outcome_is_an_error():
    with pytest.raises(ValueError, match="team reward of team in the ablate branch of thinker"):
        make_credit("ccpo_v2").advantages([think_solve(0, 1.0, solo=math.nan)])


def test_every_method_is_a_credit_method_and_returns_one_value_per_turn():
    es = [think_solve(0, r, sample=j, solo=s, branches=[
        Branch("ablate", "solver", 1, team_rewards={"team": 0.0}),
        *[Branch("resample", a, k, 0, team_rewards={"team": 1.0}) for k, a in enumerate(["thinker", "solver"])]])
        for j, (r, s) in enumerate([(1.0, 0.0), (0.0, 1.0)])]
    for name in list_credits():
        method = make_credit(name)
        assert isinstance(method, CreditMethod)
        for e in es:                 # a learned critic (mappo, ippo) reads the state the rollout records for it
            for t in e.turns:
                t.state = [0.5, -0.5] if method.needs_state else None
        adv = method.advantages(es)
        assert [len(a) for a in adv] == [len(e.turns) for e in es], name
        assert all(np.isfinite(np.concatenate([np.ravel(x) for x in row])).all() for row in adv), name
        assert isinstance(method.update(es), dict), name       # the trainer's hook (a no-op without a critic)
        json.dumps(method.state_dict())


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
