"""Exact scores of a policy in Kuhn and Leduc (``leaderboard.exact``): strategies read from the env, the payoff
against the equilibrium, exploitability, and the suite settings that use them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from leaderboard import exact
from leaderboard.protocol import ProtocolError
from leaderboard.suite import parse_suite
from marl_llm_envs import make, spec
from marl_llm_envs.envs.kuhn_poker import BET, CALL


def _uniform(env, agent):
    return np.ones(len(env.observe(agent, text=False)["action_mask"]))


def _always_raise(env, agent):          # bet / call in Kuhn, raise in Leduc (the env masks what is illegal)
    p = np.zeros(len(env.observe(agent, text=False)["action_mask"]))
    p[[BET, CALL] if env.env_id.startswith("kuhn") else [2]] = 1.0
    return p


@pytest.mark.parametrize("env_id, n_infosets", [("kuhn_poker-v0", 12), ("leduc_holdem-v0", 288)])
def test_uniform_play_read_from_the_env_is_the_trees_uniform_strategy(env_id, n_infosets):
    table = exact.strategy_of(env_id, _uniform)
    assert len(table) == n_infosets
    uniform = exact.random_strategy(env_id)
    assert table.keys() == uniform.keys()
    assert all(table[k] == pytest.approx(uniform[k]) for k in table)



@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "leduc_holdem-v0"])
def test_several_policies_read_in_one_walk_are_each_ones_own_strategy(env_id):
    """A run's kept checkpoints are read in one walk of the tree (strategies_of): each table is the one its policy
    gives read alone, in the order given."""
    def biased(env, agent):              # the later an action, the likelier (each legal move keeps some weight)
        return np.arange(1.0, len(env.observe(agent, text=False)["action_mask"]) + 1)

    both = exact.strategies_of(env_id, [_uniform, biased])
    assert both == [exact.strategy_of(env_id, _uniform), exact.strategy_of(env_id, biased)]
    assert both[0] != both[1]

def test_kuhn_known_values_uniform_nash_conv_is_eleven_twelfths_and_the_equilibrium_is_unexploitable():
    # OpenSpiel's exploitability tests: NashConv of the uniform policy in Kuhn poker is 0.916666 (= 11/12)
    assert exact.exploitability("kuhn_poker-v0", exact.random_strategy("kuhn_poker-v0")) == pytest.approx(11 / 24)
    nash = exact.reference_strategy("kuhn_poker-v0")
    assert exact.exploitability("kuhn_poker-v0", nash) == pytest.approx(0.0, abs=1e-12)
    assert exact.versus("kuhn_poker-v0", nash) == pytest.approx(0.0, abs=1e-12)


def test_kuhn_always_bet_against_nash_by_hand():
    # pi bets/calls everywhere; sigma is the alpha = 0 equilibrium. Seat 0 (pi first): it bets; sigma calls with K,
    # calls with Q w.p. 1/3, folds J. Over the 6 deals (each 1/6), pi's card vs sigma's:
    #   J vs Q: -2/3*... computed per deal: J-Q: sigma calls 1/3 -> 1/3*(-2) + 2/3*(+1) = 0; J-K: -2; Q-J: +1;
    #   Q-K: -2; K-J: +1; K-Q: 1/3*2 + 2/3*1 = 4/3.  Mean: (0 - 2 + 1 - 2 + 1 + 4/3) / 6 = -1/9.
    # Seat 1 (sigma first, alpha = 0: never bets J, checks Q, never bets K): after sigma's check pi bets; sigma
    # (first player facing a bet) folds J, calls Q w.p. 1/3, calls K. pi's payoff per deal (sigma's card, pi's):
    #   J-Q: +1; J-K: +1; Q-J: 1/3*(-2) + 2/3*1 = 0; Q-K: 1/3*2 + 2/3*1 = 4/3; K-J: -2; K-Q: -2.  Mean: -1/9.
    table = exact.strategy_of("kuhn_poker-v0", _always_raise)
    assert all(p == [0.0, 1.0] for p in table.values())
    assert exact.versus("kuhn_poker-v0", table) == pytest.approx(-1 / 9, abs=1e-12)


def test_leduc_equilibrium_scores_zero_and_its_exploitability_is_the_cached_solutions():
    cfr = exact.reference_strategy("leduc_holdem-v0")
    assert exact.versus("leduc_holdem-v0", cfr) == pytest.approx(0.0, abs=1e-12)
    from marl_llm_envs.envs.leduc_holdem import load_strategy

    assert exact.exploitability("leduc_holdem-v0", cfr) == pytest.approx(load_strategy()["exploitability"], rel=0.05,
                                                                          abs=1e-5)


@pytest.mark.parametrize("env_id, opponent", [("kuhn_poker-v0", "kuhn_nash"), ("leduc_holdem-v0", "leduc_cfr")])
def test_exact_random_payoff_lies_inside_the_sampled_anchors_interval(env_id, opponent):
    a = spec(env_id).anchors
    first, second = a[f"player_0 payoff, random vs {opponent}"], a[f"player_0 payoff, {opponent} vs random"]
    sampled = (first["mean"] - second["mean"]) / 2
    half = (first["ci95"] + second["ci95"]) / 2            # each anchor's 95% half-width; the mean of two
    assert abs(exact.versus(env_id, exact.random_strategy(env_id)) - sampled) <= half


def test_an_mlp_policys_read_strategy_is_its_own_distribution_at_each_infoset():
    from baselines.policies.mlp import MLPPolicy
    from marl_llm_envs.envs.kuhn_poker import kuhn_infoset

    env = make("kuhn_poker-v0", action_mode="discrete")
    roles = sorted(set(env.roles.values()))
    policy = MLPPolicy.for_env(env, roles, seed=3)
    decide = exact.policy_decider({r: policy for r in roles})
    table = exact.strategy_of("kuhn_poker-v0", decide)
    env.reset(seed=5)
    agent = env.agent_selection
    p = decide(env, agent)
    assert table[kuhn_infoset(env, agent)] == pytest.approx([p[0] + p[3], p[1] + p[2]])
    assert 0.0 < exact.exploitability("kuhn_poker-v0", table) < 1.0


def test_exact_evaluation_refuses_what_it_does_not_cover():
    with pytest.raises(ValueError, match="rounds=1"):
        exact.strategy_of("kuhn_poker-v0", _uniform, {"rounds": 3})
    with pytest.raises(ValueError, match="covers"):
        exact.reference_name("voting-v0")
    with pytest.raises(ValueError, match="no probability"):
        exact.strategy_of("kuhn_poker-v0", lambda e, a: np.zeros(4))
    with pytest.raises(ValueError, match="distribution"):
        exact.strategy_of("kuhn_poker-v0", exact.policy_decider({"player_0": object(), "player_1": object()}))


def _suite(setting_edit):
    s = {"name": "kuhn", "env_id": "kuhn_poker-v0", "env_version": 0, "env_kwargs": {}, "play": "versus",
         "opponent": "kuhn_nash", "normalize": {"zero": "random", "one": "kuhn_nash"}, "evaluate": "exact"}
    setting_edit(s)
    return {"schema": "marl_llm_suite", "id": "t", "version": 1, "track": "credit", "tier": "micro",
            "description": "d", "action_mode": "discrete",
            "train": {"model": "mlp", "mode": "generate", "steps": 1, "tasks_per_step": 2, "group_size": 2,
                      "seeds": [0], "max_tokens": None},
            "score": {"last_fraction": 0.5, "eval_seeds": {"start": 2**40, "count": 4}, "anchor_episodes": 40},
            "families": [{"name": "zero_sum", "title": "Zero-sum", "knob": None, "settings": [s]}]}


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.update(evaluate="closed-form"), "evaluate"),
    (lambda s: s.update(env_kwargs={"rounds": 2}), "evaluate"),
    (lambda s: s.update(eval_count=10), "evaluate"),
    (lambda s: s.update(opponent="random", normalize={"zero": "random", "one": 0.0}), "opponent"),
])
def test_a_suite_setting_with_exact_evaluation_is_checked_naming_the_field(edit, field):
    with pytest.raises(ProtocolError, match=field):
        parse_suite(_suite(edit))


def test_exact_anchors_are_random_and_the_equilibrium():
    from leaderboard.suite import anchor_value

    suite = parse_suite(_suite(lambda s: None))
    setting = suite.settings[0]
    assert anchor_value(suite, setting, "zero") == pytest.approx(-1 / 9)
    assert anchor_value(suite, setting, "one") == pytest.approx(0.0, abs=1e-12)
    expl = parse_suite(_suite(lambda s: s.update(evaluate="exploitability")))
    assert anchor_value(expl, expl.settings[0], "zero") == pytest.approx(-11 / 24)
    assert json.loads(json.dumps(setting.evaluate)) == "exact"


def test_an_exact_suite_setting_trains_and_scores_the_final_policy_with_both_exact_figures(tmp_path):
    from leaderboard.suite import execute, plan

    suite = parse_suite(_suite(lambda s: None))
    (result,) = execute(plan(suite, ["broadcast"], tmp_path)[0])
    assert result["raw"] == pytest.approx(result["versus"]) and -1.0 < result["raw"] <= 0.0
    assert 0.0 < result["exploitability"] < 1.0


def test_idle_seats_drift_is_the_kl_of_their_exact_move_distribution_from_uniform(tmp_path):
    import math

    from leaderboard.players import load_player
    from leaderboard.suite import execute, plan

    raw = _suite(lambda s: None)
    raw["families"] = [{"name": "free_riding", "title": "Free riding", "knob": "idle_seats", "settings": [
        {"name": "free_riding/idle2", "env_id": "free_riding-v0", "env_version": 0, "env_kwargs": {"idle_seats": 2},
         "knob": 2, "play": "self", "normalize": {"zero": "random", "one": "card_matcher"}}]}]
    raw["score"]["anchor_episodes"] = 10
    (result,) = execute(plan(parse_suite(raw), ["broadcast"], tmp_path)[0])
    # by hand: read each idle seat's distribution from the checkpoint and take log 3 - H(p)
    player = load_player(f"checkpoint:{tmp_path / 'broadcast' / 'free_riding_idle2' / 'seed0'}", "free_riding-v0",
                         ["decider", "idle"], "discrete")
    env = make("free_riding-v0", idle_seats=2, action_mode="discrete")
    env.reset(seed=0)
    kls = []
    while not env.unwrapped.done:
        agent = env.agent_selection
        if agent != "decider":
            p = exact.policy_decider(player.policies)(env, agent)
            kls.append(math.log(3) + sum(q * math.log(q) for q in p if q > 0))
        env.step(0)
    assert result["idle_drift"] == pytest.approx(sum(kls) / 2, abs=1e-6)
    assert 0.0 <= result["idle_drift"] < math.log(3)
