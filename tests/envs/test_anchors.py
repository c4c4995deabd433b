"""Every env id carries normalization anchors in its spec (measured by benchmarks/anchors.py)."""

from __future__ import annotations

import pytest

from marl_llm_envs import list_envs, spec


@pytest.mark.parametrize("env_id", list_envs())
def test_every_registered_env_has_measured_anchors(env_id):
    anchors = spec(env_id).anchors
    assert anchors, f"{env_id} has no anchors: run python benchmarks/anchors.py --write"
    for name, row in anchors.items():
        assert row["games"] >= 300 and row["ci95"] >= 0, (env_id, name)


def test_zero_sum_anchors_pair_random_with_every_reference_policy():
    from marl_llm_envs.reference import reference_policies

    for env_id in list_envs("zero_sum"):
        names = ["random", *reference_policies(env_id)]
        keys = set(spec(env_id).anchors)
        assert {f"player_0 payoff, {a} vs {b}" for a in names for b in names} <= keys, env_id


def test_the_oracle_thinker_reaches_the_attainable_maximum_and_random_sits_near_chance():
    anchors = spec("think_solve-v0").anchors
    assert anchors["oracle_thinker + follower_solver"]["mean"] == 1.0
    assert abs(anchors["random"]["mean"] - 0.25) < 0.03
    assert abs(anchors["follower_solver, thinker ablated"]["mean"] - 0.25) < 0.03


def test_clue_following_voters_beat_random_voters():
    anchors = spec("voting-v0").anchors
    assert anchors["clue_follower"]["mean"] > anchors["random"]["mean"] + 0.3


def test_perfect_tic_tac_toe_draws_itself():
    assert spec("tic_tac_toe-v0").anchors["player_0 payoff, minimax vs minimax"]["mean"] == 0.0


def test_textarena_ids_carry_measured_or_declared_anchors():
    pytest.importorskip("textarena")
    assert "player_0 payoff, random vs random" in spec("textarena/TicTacToe-v0").anchors
    declared = spec("textarena/Nim-v0").anchors
    assert declared["measured"] is False and declared["reward_scale"]["win"] == 1.0
