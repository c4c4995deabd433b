"""Reference poker policies: the Kuhn equilibrium family, the CFR solver and its exact best responses, Leduc CFR."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from marl_llm_envs import make
from marl_llm_envs.cfr import Tree, best_response_value, expected_value, exploitability, solve
from marl_llm_envs.envs import kuhn_poker
from marl_llm_envs.envs.kuhn_poker import KuhnGame, kuhn_infoset, kuhn_nash, kuhn_nash_strategy
from marl_llm_envs.envs.leduc_holdem import DEALS, LeducGame, infoset_key, leduc_cfr, leduc_cfr_probs, load_strategy
from marl_llm_envs.scripted import random_legal

ALPHAS = (0.0, 1 / 9, 1 / 6, 1 / 3)
LEDUC_EXPLOITABILITY_BOUND = 0.001  # chips per hand; the cached strategy measures about 1e-5 (see its JSON)


@functools.cache
def kuhn_tree():
    return Tree(KuhnGame())


@functools.cache
def leduc_tree():
    return Tree(LeducGame())


# ---------------------------------------------------------------- Kuhn: the equilibrium family


def _kuhn_value(table):
    """Player 0's (the first player's) exact expected chips, enumerating the 6 deals and every betting line."""
    total = 0.0
    for c0, c1 in itertools.permutations(range(3), 2):
        def bet(history, c0=c0, c1=c1):
            card = c0 if len(history) % 2 == 0 else c1
            return table[f"{'JQK'[card]}:{history}"][1]
        win = 1.0 if c0 > c1 else -1.0
        p = bet("")
        value = p * ((1 - bet("b")) * 1.0 + bet("b") * 2 * win)  # bet: fold (+1) or call (showdown for 2)
        q = bet("p")
        after_check = (1 - q) * win + q * ((1 - bet("pb")) * -1.0 + bet("pb") * 2 * win)
        value += (1 - p) * after_check
        total += value / 6
    return total


@pytest.mark.parametrize("alpha", ALPHAS)
def test_kuhn_nash_value_is_minus_one_eighteenth_by_enumeration(alpha):
    table = kuhn_nash_strategy(alpha)
    assert _kuhn_value(table) == pytest.approx(-1 / 18, abs=1e-12)
    assert expected_value(kuhn_tree(), kuhn_tree().from_dict(table)) == pytest.approx(-1 / 18, abs=1e-12)


@pytest.mark.parametrize("alpha", ALPHAS)
def test_kuhn_nash_is_unexploitable(alpha):
    tree = kuhn_tree()
    sigma = tree.from_dict(kuhn_nash_strategy(alpha))
    assert best_response_value(tree, sigma, 0) == pytest.approx(-1 / 18, abs=1e-12)
    assert best_response_value(tree, sigma, 1) == pytest.approx(1 / 18, abs=1e-12)
    assert exploitability(tree, sigma) == pytest.approx(0.0, abs=1e-12)


def test_a_perturbed_kuhn_policy_is_exploitable():
    table = kuhn_nash_strategy(0.0)
    table["Q:b"] = [0.0, 1.0]  # always call a bet with Q
    assert exploitability(kuhn_tree(), kuhn_tree().from_dict(table)) > 0.01
    with pytest.raises(ValueError, match="alpha"):
        kuhn_nash_strategy(0.5)


def test_best_response_to_uniform_kuhn_is_exact():
    tree = kuhn_tree()
    # by hand: against a uniform player 1, player 0's best is worth 1.5 with K, 0.5 with Q (bet), -0.5 with J (bet)
    assert best_response_value(tree, tree.uniform(), 0) == pytest.approx(0.5)
    assert best_response_value(tree, tree.uniform(), 1) == pytest.approx(5 / 12)


@pytest.mark.parametrize("plus", [True, False])
def test_cfr_on_kuhn_finds_the_value_and_an_equilibrium(plus):
    tree = kuhn_tree()
    result = solve(tree, 1000, plus=plus)
    assert expected_value(tree, result.average) == pytest.approx(-1 / 18, abs=2e-3)
    assert exploitability(tree, result.average) < 2e-3
    strategy = tree.to_dict(result.average)
    alpha = strategy["J:"][1]  # the solution is a member of the family: K bets 3 alpha, Q calls alpha + 1/3
    assert 0 <= alpha <= 1 / 3 + 0.01
    assert strategy["K:"][1] == pytest.approx(3 * alpha, abs=0.03)
    assert strategy["Q:pb"][1] == pytest.approx(alpha + 1 / 3, abs=0.03)
    assert strategy["J:p"][1] == pytest.approx(1 / 3, abs=0.02) and strategy["Q:b"][1] == pytest.approx(1 / 3, abs=0.02)


class _FixedDraw:
    """An rng whose ``random()`` returns a fixed number (to read a policy's probabilities exactly)."""

    def __init__(self, u):
        self.u = u

    def random(self):
        return self.u


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_kuhn_nash_policy_plays_its_table_from_what_the_agent_may_see(mode):
    """At every info set of every seat in a 4-hand match: P(bet or call) is the table's (the threshold of the
    uniform draw), and the decision does not depend on the opponent's card."""
    alpha = 1 / 6
    table = kuhn_nash_strategy(alpha)
    aggressive = {"[bet]", "[call]", kuhn_poker.BET, kuhn_poker.CALL}
    seen = set()
    rng = np.random.default_rng(0)
    for seed in range(40):
        env = make("kuhn_poker-v0", action_mode=mode, rounds=4)
        env.reset(seed=seed)
        while not env.done:
            agent = env.agent_selection
            key = kuhn_infoset(env, agent)
            seen.add(key)
            p = table[key][1]
            for u in (0.0, p - 1e-9, p + 1e-9, 1 - 1e-12):
                if 0 <= u < 1:
                    move = kuhn_nash(env, agent, _FixedDraw(u), alpha=alpha)
                    assert (move in aggressive) == (u < p), (key, u)
                    other = "player_1" if agent == "player_0" else "player_0"
                    alt = env.clone()
                    alt._cards = {**env._cards, other: ({0, 1, 2} - {env._cards[agent], env._cards[other]}).pop()}
                    assert kuhn_nash(alt, agent, _FixedDraw(u), alpha=alpha) == move
            env.step(kuhn_nash(env, agent, rng, alpha=alpha))
    assert seen == set(table)


def _match(env_id, mode, hands, policy_0, policy_1, seed):
    """Play a match of ``hands`` hands (the first player alternates); return player_0's chips per hand."""
    env = make(env_id, action_mode=mode, rounds=hands)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    chips = []
    while not env.done:
        agent, hand = env.agent_selection, env._hand
        env.step((policy_0 if agent == "player_0" else policy_1)(env, agent, rng))
        assert env.infos[agent]["invalid_action"] is None
        if env._hand != hand:  # a hand ended: its chips are this step's reward
            chips.append(env.rewards["player_0"])
    return np.asarray(chips)


def test_kuhn_nash_does_not_lose_to_random():
    tree = kuhn_tree()
    nash = kuhn_nash_strategy(0.0)
    uniform = {k: [0.5, 0.5] for k in nash}
    # exactly: as first player (player 0 of the tree) and as second player, against a uniform opponent
    first = expected_value(tree, tree.from_dict({k: nash[k] if len(k) % 2 == 0 else uniform[k] for k in nash}))
    second = -expected_value(tree, tree.from_dict({k: uniform[k] if len(k) % 2 == 0 else nash[k] for k in nash}))
    assert first >= -1 / 18 - 1e-12 and second >= 1 / 18 - 1e-12 and first + second > 0.1
    # and by play, 2000 hands alternating seats
    chips = _match("kuhn_poker-v0", "discrete", 2000, kuhn_nash, random_legal, seed=1)
    assert len(chips) == 2000
    assert chips.mean() + 3 * chips.std() / np.sqrt(len(chips)) > 0


# ---------------------------------------------------------------- Leduc: the solver and the cached strategy


def test_leduc_tree_and_uniform_best_responses():
    tree = leduc_tree()
    # Sizes by hand. A player's info set is (own rank, public rank once dealt, the betting so far). Within a round the
    # histories where someone must act are "", c, r, cr, rr, crr (c = check/call, r = bet/raise, at most two raises),
    # with 2, 2, 3, 3, 2, 2 legal moves (no fold without a bet to answer; no raise after the second): 6 info sets and
    # 14 moves per own-rank/public-rank/round-1-history. Round 1: 3 own ranks. Round 2 follows the five round-1
    # histories that end in a call or a second check (cc, rc, crc, rrc, crrc), with 3 own ranks x 3 public ranks.
    decision_histories, moves = 6, 2 + 2 + 3 + 3 + 2 + 2
    round_1, round_2 = 3, 5 * 3 * 3
    assert len(tree.infosets) == (round_1 + round_2) * decision_histories == 288
    assert tree.n_edges == (round_1 + round_2) * moves == 672
    # best responses to the uniform random policy (NashConv 4.7472, the value OpenSpiel reports)
    assert best_response_value(tree, tree.uniform(), 0) == pytest.approx(2.0875)
    assert best_response_value(tree, tree.uniform(), 1) == pytest.approx(2.659722222, abs=1e-8)


def test_leduc_game_matches_the_env_on_random_play():
    """The solver's game and the env agree on info sets (what the acting agent knows) and payoffs."""
    game = LeducGame()
    rng = np.random.default_rng(7)
    for seed in range(300):
        env = make("leduc_holdem-v0", action_mode="discrete", rounds=2)
        env.reset(seed=seed)
        hand = 0
        while not env.done:
            first, second = env._first, "player_1" if env._first == "player_0" else "player_0"
            state = game.initial_state()
            for card in (env._cards[first], env._cards[second]):
                state = game.next_state(state, card)
            while env._hand == hand and not env.done:
                if game.current_player(state) == -1:  # the public card
                    state = game.next_state(state, env._public)
                agent = env.agent_selection
                assert agent == (first if game.current_player(state) == 0 else second)
                assert game.infoset(state) == infoset_key(*env.info_state(agent))
                assert game.legal_actions(state) == np.flatnonzero(env.action_mask(agent)).tolist()
                move = random_legal(env, agent, rng)
                state = game.next_state(state, move)
                env.step(move)
            assert game.current_player(state) == -2
            assert env.rewards[first] == game.utility(state)
            hand += 1


def test_cached_leduc_strategy_is_nearly_unexploitable():
    doc = load_strategy()
    tree = leduc_tree()
    table = doc["strategy"]
    assert set(table) == set(tree.infosets)
    sigma = tree.from_dict({k: [table[k][a] for a in tree.iset_actions[i]] for k, i in tree.infosets.items()})
    e = exploitability(tree, sigma)
    assert e < LEDUC_EXPLOITABILITY_BOUND and e == pytest.approx(doc["exploitability"], abs=1e-9)
    assert expected_value(tree, sigma) == pytest.approx(-0.0856, abs=2e-3)  # the known game value
    for key, probs in table.items():  # illegal moves have probability 0
        legal = tree.iset_actions[tree.infosets[key]]
        assert all(p == 0 for a, p in enumerate(probs) if a not in legal)


def test_cfr_plus_on_leduc_converges_quickly():
    result = solve(leduc_tree(), 100)
    assert exploitability(leduc_tree(), result.average) < 0.05


@pytest.mark.parametrize("mode", ["text", "discrete"])
def test_leduc_cfr_policy_reads_only_what_the_agent_may_know(mode):
    rng = np.random.default_rng(3)
    for seed in range(30):
        env = make("leduc_holdem-v0", action_mode=mode, rounds=2)
        env.reset(seed=seed)
        while not env.done:
            agent = env.agent_selection
            other = "player_1" if agent == "player_0" else "player_0"
            probs = leduc_cfr_probs(env, agent)
            assert probs.sum() == pytest.approx(1.0)
            assert set(np.flatnonzero(probs)) <= set(env._legal_ids(agent))
            alt = env.clone()
            alt._cards = {**env._cards, other: next(iter(set(range(6)) - {env._cards[agent], env._public}))}
            assert np.array_equal(leduc_cfr_probs(alt, agent), probs)
            move = leduc_cfr(env, agent, rng)
            if mode == "text":
                assert move in env.legal_actions(agent)
            env.step(move)
            assert env.infos[agent]["invalid_action"] is None


def test_leduc_cfr_beats_random():
    """2000 hands alternating seats: the mean win is positive with a 3-sigma margin (it is about +1.5 chips)."""
    chips = _match("leduc_holdem-v0", "discrete", 2000, leduc_cfr, random_legal, seed=0)
    assert len(chips) == 2000
    mean, se = chips.mean(), chips.std() / np.sqrt(len(chips))
    assert mean - 3 * se > 0, (mean, se)
    # exactly, over all deals: the cached strategy against a uniform random opponent, in both seats
    tree = leduc_tree()
    table = load_strategy()["strategy"]
    cfr = {k: [table[k][a] for a in tree.iset_actions[i]] for k, i in tree.infosets.items()}
    seat = {k: (len(k.split(":")[1].split("/")[-1]) % 2) for k in tree.infosets}
    first = expected_value(tree, tree.from_dict({k: v for k, v in cfr.items() if seat[k] == 0}))
    second = -expected_value(tree, tree.from_dict({k: v for k, v in cfr.items() if seat[k] == 1}))
    assert (first + second) / 2 == pytest.approx(mean, abs=4 * se)
    assert len(DEALS) == 120
